// Core storage-target page: the target roster of a rt_cte_core pool (GET
// /api/mod/rt_cte_core/<pool>/targets every 3 s) with register and unregister controls.

import {
  $, h, fill, setText, getJSON, postForm, Panel, mountHeader, poolPicker, watchPredictions,
  renderForm, confirmDialog, fmtBytes, fmtInt, fmtNum, errorText, cmpPoolId,
} from '/viz/common/app.js';

const PERIOD = 3000;
const MOD = 'rt_cte_core';
mountHeader('modules');

const msg = $('#action-message');
function say(text, kind = 'info') {
  msg.textContent = text;
  msg.className = `form-message ${text ? kind : ''}`;
}

const picker = poolPicker($('#pool-select'), {
  mod: MOD,
  onChange: () => { panel.poller.now(); preds.paint(); say(''); },
});
const action = (name) => `/api/mod/${MOD}/${encodeURIComponent(picker.selected)}/${name}`;

// ---- register form ----------------------------------------------------------------------------
const regForm = renderForm({
  mod_name: 'register',
  note: 'Either give a capacity (a fresh block device is made) or attach an existing pool, such as a safe block-device array.',
  fields: [
    { name: 'name', label: 'Target name', required: true, placeholder: 'e.g. tier0' },
    { name: 'bdev_type', label: 'Type', type: 'select', default: 'ram', options: ['ram', 'file', 'hbm', 'pinned', 'noop'] },
    { name: 'capacity', label: 'Capacity', placeholder: 'e.g. 8MB' },
    { name: 'attach_pool_id', label: 'Or attach an existing pool', type: 'select', options: [] },
  ],
}, {
  submitLabel: 'Register target',
  validate: false,
  idPrefix: 'reg',
  onSubmit: async (v, _a, ctl) => {
    if (!picker.selected) throw new Error('pick a core pool first');
    const form = { name: v.name };
    if (v.attach_pool_id) form.attach_pool_id = v.attach_pool_id;
    else {
      form.bdev_type = v.bdev_type;
      if (v.capacity) form.capacity = v.capacity;
    }
    const res = await postForm(action('register_target'), form);
    ctl.clear();
    ctl.setMessage(`Registered target ${res.name ?? v.name}${res.bdev_pool_id ? ` on pool ${res.bdev_pool_id}` : ''}${res.attached ? ' (attached)' : ''}.`, 'ok');
    ctl.set('name', '');
    panel.poller.now();
  },
});
$('#register-body').append(regForm.el);
const attachSel = regForm.inputs.get('attach_pool_id');

async function refreshAttachable() {
  const body = await getJSON('/api/pools');
  const list = (body.pools || []).filter((p) => p.mod_name === 'rt_bdev' || p.mod_name === 'rt_safe_bdev')
    .sort((a, b) => cmpPoolId(a.pool_id, b.pool_id));
  const sig = JSON.stringify(list);
  if (attachSel.dataset.sig === sig) return;
  attachSel.dataset.sig = sig;
  const keep = attachSel.value;
  fill(attachSel, h('option', { value: '' }, '(none: make a fresh device)'),
    list.map((p) => h('option', { value: p.pool_id }, `${p.pool_name} (${p.pool_id}) · ${p.mod_name}`)));
  if (list.some((p) => p.pool_id === keep)) attachSel.value = keep;
}

async function unregister(name) {
  const yes = await confirmDialog(`Unregister target ${name} from pool ${picker.selected}?`, { confirmLabel: 'Unregister' });
  if (!yes) return;
  try {
    await postForm(action('unregister_target'), { name });
    say(`Target ${name} unregistered.`, 'ok');
    panel.poller.now();
  } catch (err) {
    say(`Could not unregister ${name}: ${errorText(err)}`, 'bad');
  }
}

// ---- roster -------------------------------------------------------------------------------------
function num(label, value) {
  return h('div', {}, h('span', { class: 'n' }, value), h('span', { class: 'l' }, label));
}

const panel = new Panel($('#targets-panel'));
panel.watch(async () => {
  const [pool] = await Promise.all([picker.update(), refreshAttachable()]);
  const none = $('#no-pool');
  if (!pool) {
    none.hidden = false;
    none.textContent = picker.selected ? `No ${MOD} pool with id ${picker.selected} on this node.` : 'No core storage pools on this node. Create one on the Pools page.';
    fill($('#targets-body'));
    fill($('#cte-summary'));
    return;
  }
  none.hidden = true;
  setText($('#cte-title'), `${pool.pool_name} (${pool.pool_id})`);
  document.title = `${pool.pool_name} · Storage targets · rtsim`;
  const [tb, mon] = await Promise.all([
    getJSON(action('targets')),
    getJSON(`/api/pools/${encodeURIComponent(pool.pool_id)}/monitor`, { query: 'stats' }).catch(() => null),
  ]);
  const s = mon ? Object.values(mon.results || {}).find((x) => x && typeof x === 'object') : null;
  fill($('#cte-summary'), s
    ? [num('targets', fmtInt(s.num_targets)), num('tags', fmtInt(s.num_tags)), num('blobs', fmtInt(s.num_blobs))]
    : []);
  const targets = (tb.targets || []).slice().sort((a, b) => (b.score ?? 0) - (a.score ?? 0) || String(a.name).localeCompare(String(b.name)));
  setText($('#targets-sub'), `${targets.length} registered · best score first`);
  const el = $('#targets-body');
  const sig = JSON.stringify(targets);
  if (el.dataset.sig === sig) return;
  el.dataset.sig = sig;
  if (!targets.length) {
    fill(el, h('p', { class: 'empty' }, 'No targets registered. Register one with the form.'));
    return;
  }
  const cols = [['Name'], ['Score', 1], ['Free', 1], ['Read', 1], ['Written', 1], ['Reads', 1], ['Writes', 1], ['']];
  fill(el, h('div', { class: 'table-wrap' }, h('table', { class: 'targets' },
    h('thead', {}, h('tr', {}, cols.map(([c, n]) => h('th', { scope: 'col', class: n ? 'num' : null }, c)))),
    h('tbody', {}, targets.map((t) => h('tr', { 'data-name': t.name },
      h('td', {}, h('strong', {}, t.name)),
      h('td', { class: 'num' }, fmtNum(t.score, 3)),
      h('td', { class: 'num' }, fmtBytes(t.remaining_space)),
      h('td', { class: 'num' }, fmtBytes(t.bytes_read)),
      h('td', { class: 'num' }, fmtBytes(t.bytes_written)),
      h('td', { class: 'num' }, fmtInt(t.ops_read)),
      h('td', { class: 'num' }, fmtInt(t.ops_written)),
      h('td', {}, h('button', { type: 'button', class: 'small', 'aria-label': `Unregister ${t.name}`, onclick: () => unregister(t.name) }, 'Unregister'))))))));
}, { period: PERIOD });

const preds = watchPredictions($('#predictions-panel'), $('#predictions-body'), () => picker.selected, PERIOD);
