// The monitor explorer: send any query to a pool's monitor handler and show the raw JSON answer.

import { h, uniqueId } from './dom.js';
import { errorText, getJSON } from './api.js';
import { cmpPoolId } from './fmt.js';

const ROUTINGS = ['local', 'broadcast', 'dynamic', 'direct_id:0', 'direct_hash:0', 'range:0:1', 'physical:0'];

/** Build the explorer inside `el`; returns {setPools(pools), select(poolId)}. */
export function mountMonitorExplorer(el, { poolId = null, fixedPool = false } = {}) {
  const id = uniqueId('mon');
  const poolSel = h('select', { id: `${id}-pool`, name: 'pool' });
  const query = h('input', { id: `${id}-query`, name: 'query', type: 'text', value: 'stats', autocomplete: 'off', spellcheck: 'false' });
  const routing = h('input', { id: `${id}-routing`, name: 'routing', type: 'text', value: 'local', list: `${id}-routings`, autocomplete: 'off' });
  const out = h('pre', { class: 'json', tabindex: '0', 'aria-label': 'Monitor answer' }, '');
  out.hidden = true;
  const msg = h('p', { class: 'form-message', role: 'status', 'aria-live': 'polite' });
  const form = h('form', { class: 'inline-form monitor-form' },
    fixedPool ? null : h('div', { class: 'field' }, h('label', { for: poolSel.id }, 'Pool'), poolSel),
    h('div', { class: 'field' }, h('label', { for: query.id }, 'Query'), query),
    h('div', { class: 'field' }, h('label', { for: routing.id }, 'Routing'), routing,
      h('datalist', { id: `${id}-routings` }, ROUTINGS.map((r) => h('option', { value: r })))),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Run query')));
  el.append(form, msg, out);
  let current = poolId;

  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const pool = fixedPool ? current : poolSel.value;
    if (!pool) {
      msg.textContent = 'Pick a pool first.';
      msg.className = 'form-message bad';
      return;
    }
    const button = form.querySelector('button');
    button.disabled = true;
    msg.textContent = `Asking pool ${pool}…`;
    msg.className = 'form-message info';
    try {
      const body = await getJSON(`/api/pools/${encodeURIComponent(pool)}/monitor`, { query: query.value, routing: routing.value || 'local' });
      out.textContent = JSON.stringify(body, null, 2);
      out.hidden = false;
      msg.textContent = `Answer of pool ${pool} to '${query.value}' (${routing.value || 'local'}) at ${new Date().toLocaleTimeString()}`;
      msg.className = 'form-message ok';
    } catch (err) {
      out.textContent = err.body ? JSON.stringify(err.body, null, 2) : '';
      out.hidden = !err.body;
      msg.textContent = errorText(err);
      msg.className = 'form-message bad';
    } finally {
      button.disabled = false;
    }
  });

  return {
    setPools(pools) {
      const sorted = pools.slice().sort((a, b) => cmpPoolId(a.pool_id, b.pool_id));
      const keep = poolSel.value || current;
      const sig = sorted.map((p) => `${p.pool_id}|${p.pool_name}`).join(',');
      if (poolSel.dataset.sig === sig) return;
      poolSel.dataset.sig = sig;
      poolSel.replaceChildren(...sorted.map((p) => h('option', { value: p.pool_id }, `${p.pool_name} (${p.pool_id}) — ${p.mod_name}`)));
      if (keep && sorted.some((p) => p.pool_id === keep)) poolSel.value = keep;
    },
    select(pool) {
      current = pool;
      if (!fixedPool) poolSel.value = pool;
    },
  };
}
