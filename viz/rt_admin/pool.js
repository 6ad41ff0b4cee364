// The generic pool page (?pool=<id>): identity, the stats answer as JSON, task predictions and
// the monitor explorer, for pools whose module ships no page of its own.

import {
  $, h, fill, setText, getJSON, Panel, mountHeader, kvList, poolPicker, watchPredictions,
  mountMonitorExplorer, errorText, ApiError,
} from '/viz/common/app.js';

const PERIOD = 2000;
mountHeader('pools');

const explorer = mountMonitorExplorer($('#monitor-body'));
const picker = poolPicker($('#pool-select'), {
  onChange: (id) => { explorer.select(id); statsPanel.poller.now(); preds.paint(); },
});

let chimods = null;
const identPanel = new Panel($('#ident-panel'));
identPanel.watch(async () => {
  const [pool, cm] = await Promise.all([picker.update(), chimods ? Promise.resolve(chimods) : getJSON('/api/chimods')]);
  chimods = cm;
  explorer.setPools(picker.pools.length ? picker.pools : []);
  if (picker.selected) explorer.select(picker.selected);
  const body = $('#ident-body');
  if (!pool) {
    setText($('#pool-title'), picker.selected ? `Pool ${picker.selected}` : 'Pool');
    fill(body, h('p', { class: 'empty' }, picker.selected ? `No pool with id ${picker.selected} on this node.` : 'No pool selected.'));
    return;
  }
  setText($('#pool-title'), `${pool.pool_name} (${pool.pool_id})`);
  document.title = `${pool.pool_name} · rtsim`;
  const mod = (chimods.chimods || []).find((m) => m.name === pool.mod_name);
  const pairs = [
    ['Pool id', pool.pool_id], ['Pool name', pool.pool_name], ['Module', h('code', {}, pool.mod_name)],
    ['Container (node)', String(pool.container_id)],
  ];
  if (mod && mod.has_pages && pool.mod_name !== 'rt_admin') {
    pairs.push(['Module page', h('a', { href: `/viz/${encodeURIComponent(pool.mod_name)}/?pool=${encodeURIComponent(pool.pool_id)}` }, `open the ${pool.mod_name} page`)]);
  }
  const sig = JSON.stringify(pool) + (mod ? mod.has_pages : '');
  if (body.dataset.sig !== sig) {
    body.dataset.sig = sig;
    fill(body, kvList(pairs));
  }
}, { period: PERIOD });

const statsPanel = new Panel($('#stats-panel'));
statsPanel.watch(async () => {
  const id = picker.selected;
  const el = $('#stats-body');
  if (!id) {
    fill(el, h('p', { class: 'empty' }, 'No pool selected.'));
    return;
  }
  try {
    const body = await getJSON(`/api/pools/${encodeURIComponent(id)}/monitor`, { query: 'stats' });
    const pre = el.querySelector('pre') || fill(el, h('pre', { class: 'json', tabindex: '0', 'aria-label': 'stats answer' })).firstChild;
    const text = JSON.stringify(body.results, null, 2);
    if (pre.textContent !== text) pre.textContent = text;
  } catch (err) {
    if (err instanceof ApiError && err.status === 400 && /no query/.test(err.message)) {
      fill(el, h('p', { class: 'empty' }, `This module answers no stats query (${errorText(err)}).`));
      return;
    }
    throw err;
  }
}, { period: PERIOD });

const preds = watchPredictions($('#predictions-panel'), $('#predictions-body'), () => picker.selected, PERIOD);
