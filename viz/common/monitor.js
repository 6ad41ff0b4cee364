// The monitor explorer: send any query to a pool's monitor handler and show the raw JSON answer,
// with one line per node asked: its answer, "no answer" (null), or its error (in red). A query no
// node knows is the request's 400, shown in red; success is green only when every node answered.

import { h, fill, uniqueId } from './dom.js';
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
  const nodes = h('ul', { class: 'monitor-nodes', 'aria-label': 'Answer per node' });
  nodes.hidden = true;
  const form = h('form', { class: 'inline-form monitor-form' },
    fixedPool ? null : h('div', { class: 'field' }, h('label', { for: poolSel.id }, 'Pool'), poolSel),
    h('div', { class: 'field' }, h('label', { for: query.id }, 'Query'), query),
    h('div', { class: 'field' }, h('label', { for: routing.id }, 'Routing'), routing,
      h('datalist', { id: `${id}-routings` }, ROUTINGS.map((r) => h('option', { value: r })))),
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Run query')));
  el.append(form, msg, nodes, out);
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
      const { kind, text } = outcome(body, nodes);
      msg.textContent = `${text} — pool ${pool}, '${query.value}' (${routing.value || 'local'}) at ${new Date().toLocaleTimeString()}`;
      msg.className = `form-message ${kind}`;
    } catch (err) {
      out.textContent = err.body ? JSON.stringify(err.body, null, 2) : '';
      out.hidden = !err.body;
      fill(nodes);
      nodes.hidden = true;
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

/** Paint one line per node into `list`; the message kind: ok only when every node answered. */
function outcome(body, list) {
  const results = body.results || {};
  const errors = body.errors || {};
  const ids = Object.keys(results);
  let answered = 0;
  fill(list, ids.map((nid) => {
    const err = errors[nid];
    const value = results[nid];
    if (err !== undefined) {
      return h('li', { class: 'bad', 'data-node': nid }, h('strong', {}, `node ${nid}`), `: error: ${err}`);
    }
    if (value === null || value === undefined) {
      return h('li', { class: 'none', 'data-node': nid }, h('strong', {}, `node ${nid}`), ': no answer');
    }
    answered += 1;
    return h('li', { class: 'ok', 'data-node': nid }, h('strong', {}, `node ${nid}`), ': answered');
  }));
  list.hidden = ids.length < 2 && answered === ids.length;
  const failed = Object.keys(errors).length;
  if (!ids.length) return { kind: 'warn', text: 'No container answered' };
  if (answered === ids.length) return { kind: 'ok', text: `Answered by ${ids.length === 1 ? 'the node' : `all ${ids.length} nodes`}` };
  const parts = [`${answered} of ${ids.length} node${ids.length === 1 ? '' : 's'} answered`];
  if (failed) parts.push(`${failed} failed`);
  if (ids.length - answered - failed) parts.push(`${ids.length - answered - failed} gave no answer`);
  return { kind: answered ? 'warn' : 'bad', text: parts.join(', ') };
}
