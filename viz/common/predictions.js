// Task predictions: per pool and method, the learned CPU and wall coefficients and their MAPE,
// from /api/nodes/<node>/containers.

import { h, fill } from './dom.js';
import { cmpPoolId, fmtNum, isNum } from './fmt.js';

function pct(x) {
  return isNum(x) ? `${(x * 100).toFixed(1)} %` : '—';
}

const COLS = ['Pool', 'Method', 'CPU coef', 'CPU MAPE', 'Wall coef', 'Wall MAPE', 'Model'];

/** Fill `el` with one table of the containers' methods; `poolId` limits it to one pool. */
export function renderPredictions(el, body, { poolId = null } = {}) {
  let containers = (body && body.containers) || [];
  if (poolId !== null) containers = containers.filter((c) => String(c.pool_id) === String(poolId));
  containers = containers.slice().sort((a, b) => cmpPoolId(a.pool_id, b.pool_id));
  const rows = [];
  for (const c of containers) {
    for (const m of c.methods || []) {
      const trained = (isNum(m.mape) && m.mape > 0) || (isNum(m.wall_mape) && m.wall_mape > 0);
      rows.push(h('tr', {},
        h('td', {}, `${c.pool_name} (${c.pool_id})`),
        h('td', {}, h('code', {}, m.name)),
        h('td', { class: 'num' }, fmtNum(m.coefficient, 3)),
        h('td', { class: 'num' }, pct(m.mape)),
        h('td', { class: 'num' }, fmtNum(m.wall_coefficient, 3)),
        h('td', { class: 'num' }, pct(m.wall_mape)),
        h('td', {}, h('span', { class: `badge ${trained ? 'ok' : ''}` }, trained ? 'trained' : 'untrained'))));
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
        h('thead', {}, h('tr', {}, COLS.map((c, i) => h('th', { scope: 'col', class: i >= 2 && i <= 5 ? 'num' : null }, c)))),
        h('tbody', {}, rows))),
    lr ? h('p', { class: 'panel-sub' }, `CPU ≈ coef·(size+1) µs, wall ≈ wall coef·(size+1) µs; learning rate ${lr.learning_rate}.`) : null);
}
