// Sparklines in SVG: a line and a soft area, scaled to the box. Values outside [min, max] clip.

import { h } from './dom.js';

export function sparkline({ label = 'trend', min = 0, max = 100 } = {}) {
  const svg = h('svg:svg', {
    class: 'spark', viewBox: '0 0 100 40', preserveAspectRatio: 'none', role: 'img', 'aria-label': label,
  });
  svg.append(h('svg:path', { class: 'area' }), h('svg:path', { class: 'line' }));
  svg.dataset.min = String(min);
  svg.dataset.max = String(max);
  return svg;
}

/** Redraw `svg` (from sparkline()) with `values`; max grows to fit when null was given. */
export function drawSparkline(svg, values, { max } = {}) {
  const lo = Number(svg.dataset.min);
  const nums = values.filter((v) => typeof v === 'number' && Number.isFinite(v));
  let hi = max ?? Number(svg.dataset.max);
  if (!Number.isFinite(hi) || hi <= lo) hi = Math.max(lo + 1, ...nums);
  const line = svg.querySelector('.line');
  const area = svg.querySelector('.area');
  if (nums.length < 2) {
    line.setAttribute('d', '');
    area.setAttribute('d', '');
    return;
  }
  const n = nums.length;
  const pts = nums.map((v, i) => {
    const x = (i / (n - 1)) * 100;
    const c = Math.min(hi, Math.max(lo, v));
    const y = 39 - ((c - lo) / (hi - lo)) * 37;
    return `${x.toFixed(2)},${y.toFixed(2)}`;
  });
  line.setAttribute('d', `M${pts.join('L')}`);
  area.setAttribute('d', `M0,40L${pts.join('L')}L100,40Z`);
}
