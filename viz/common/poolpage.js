// Shared parts of the pages about one pool: the pool picker (kept in ?pool=) and the task
// predictions panel.

import { h, fill, param, setParam } from './dom.js';
import { getJSON } from './api.js';
import { cmpPoolId } from './fmt.js';
import { Panel } from './panel.js';
import { renderPredictions } from './predictions.js';

/**
 * A <select> of this node's pools (of module `mod`, or all when null), preselected from ?pool=.
 * `update()` fetches /api/pools and returns the selected pool's entry (or null when there is none).
 */
export function poolPicker(select, { mod = null, onChange = () => {} } = {}) {
  let selected = param('pool');
  let pools = [];
  select.addEventListener('change', () => {
    selected = select.value;
    setParam('pool', selected);
    onChange(selected);
  });
  return {
    get selected() { return selected; },
    get pools() { return pools; },
    async update() {
      const body = await getJSON('/api/pools');
      pools = (body.pools || []).filter((p) => !mod || p.mod_name === mod).sort((a, b) => cmpPoolId(a.pool_id, b.pool_id));
      const ids = pools.map((p) => p.pool_id);
      const missing = selected && !ids.includes(selected);
      const sig = JSON.stringify([pools.map((p) => [p.pool_id, p.pool_name]), missing ? selected : null]);
      if (select.dataset.sig !== sig) {
        select.dataset.sig = sig;
        fill(select,
          pools.map((p) => h('option', { value: p.pool_id }, `${p.pool_name} (${p.pool_id})`)),
          missing ? h('option', { value: selected }, `${selected} (not on this node)`) : null);
      }
      if (!selected && pools.length) {
        selected = pools[0].pool_id;
        setParam('pool', selected);
        onChange(selected);
      }
      if (selected) select.value = selected;
      select.disabled = !pools.length && !selected;
      return pools.find((p) => p.pool_id === selected) || null;
    },
  };
}

/** Poll /api/nodes/local/containers and show the predictions of the pool `poolId()` gives. */
export function watchPredictions(panelEl, bodyEl, poolId, period = 2000) {
  const panel = new Panel(panelEl);
  let last = null;
  const paint = () => {
    const id = poolId();
    if (!last) return;
    if (!id) fill(bodyEl, h('p', { class: 'empty' }, 'No pool selected.'));
    else renderPredictions(bodyEl, last, { poolId: id });
  };
  panel.watch(async () => {
    last = await getJSON('/api/nodes/local/containers');
    paint();
  }, { period });
  return { paint, panel };
}
