// Task predictions: per pool and method, the learned CPU and wall coefficients and their MAPE,
// from /api/nodes/<node>/containers. MAPE is percent in the API and here (12.5 means 12.5 %);
// a method that has learned from no task yet shows "not trained yet", never a perfect 0 %, and
// one whose starting guess still weighs in its figures (a few tasks) shows "learning".

import { h, fill } from './dom.js';
import { cmpPoolId, fmtNum, isNum } from './fmt.js';

/** A MAPE in percent as the API gives it; large errors keep their size (no fraction mix-up). */
export function fmtMape(x) {
  if (!isNum(x)) return '—';
  if (x >= 1000) return `${Math.round(x).toLocaleString('en-US')} %`;
  return `${x.toFixed(x >= 100 ? 0 : 1)} %`;
}

/** True once the method has learned from a task (older nodes: a non-zero MAPE). */
export function isTrained(m) {
  if (typeof m.trained === 'boolean') return m.trained;
  return (isNum(m.mape) && m.mape > 0) || (isNum(m.wall_mape) && m.wall_mape > 0);
}

/** A trained method's MAPE, or why there is none: no task had a positive cost of that kind
 *  (a method that only waits for its subtasks uses no CPU of its own). */
function mapeCell(mape, fed, kind) {
  if (fed === 0) return h('span', { class: 'muted', title: `no task of this method had a measurable ${kind} cost` }, `no ${kind} cost`);
  return fmtMape(mape);
}

/** Tasks after which the starting guess weighs under 10 % of a moving average at rate `lr`. */
export function settledAfter(lr) {
  const rate = isNum(lr) && lr > 0 && lr < 1 ? lr : 0.2;
  return Math.ceil(Math.log(0.1) / Math.log(1 - rate));
}

function modelBadge(trained, samples, settle) {
  if (!trained) return h('span', { class: 'badge' }, 'not trained yet');
  if (isNum(samples) && samples < settle) {
    return h('span', { class: 'badge warn', title: `the first guess still weighs in: trained after ${settle} tasks` },
      `learning (${samples}/${settle})`);
  }
  return h('span', { class: 'badge ok' }, 'trained');
}

const COLS = ['Pool', 'Method', 'CPU coef', 'CPU MAPE', 'Wall coef', 'Wall MAPE', 'Tasks', 'Model'];

/** Fill `el` with one table of the containers' methods; `poolId` limits it to one pool. */
export function renderPredictions(el, body, { poolId = null } = {}) {
  let containers = (body && body.containers) || [];
  if (poolId !== null) containers = containers.filter((c) => String(c.pool_id) === String(poolId));
  containers = containers.slice().sort((a, b) => cmpPoolId(a.pool_id, b.pool_id));
  const rows = [];
  for (const c of containers) {
    const settle = settledAfter(c.learning_rate);
    for (const m of c.methods || []) {
      const trained = isTrained(m);
      const untrained = h('span', { class: 'muted' }, 'not trained yet');
      rows.push(h('tr', { 'data-method': m.name, 'data-trained': String(trained) },
        h('td', {}, `${c.pool_name} (${c.pool_id})`),
        h('td', {}, h('code', {}, m.name)),
        h('td', { class: 'num' }, trained ? fmtNum(m.coefficient, 3) : '—'),
        h('td', { class: 'num mape' }, trained ? mapeCell(m.mape, m.mape_samples, 'CPU') : untrained),
        h('td', { class: 'num' }, trained ? fmtNum(m.wall_coefficient, 3) : '—'),
        h('td', { class: 'num mape' }, trained ? mapeCell(m.wall_mape, m.wall_mape_samples, 'wall') : untrained.cloneNode(true)),
        h('td', { class: 'num' }, isNum(m.samples) ? String(m.samples) : '—'),
        h('td', {}, modelBadge(trained, m.samples, settle))));
    }
  }
  if (!rows.length) {
    fill(el, h('p', { class: 'empty' }, poolId ? `No task methods recorded for pool ${poolId}.` : 'No pools with task methods.'));
    return;
  }
  const lr = containers.find((c) => isNum(c.learning_rate));
  fill(el,
    h('div', { class: 'table-wrap' },
      h('table', { class: 'predictions' },
        h('thead', {}, h('tr', {}, COLS.map((c, i) => h('th', { scope: 'col', class: i >= 2 && i <= 6 ? 'num' : null }, c)))),
        h('tbody', {}, rows))),
    h('p', { class: 'panel-sub' },
      'CPU ≈ coef·(size+1) µs, wall ≈ wall coef·(size+1) µs. MAPE: mean absolute error of the predictions, in percent of the real cost (a moving average',
      lr ? `, learning rate ${lr.learning_rate}` : '',
      '); far above 100 % while real costs are tiny beside the first guesses.'));
}
