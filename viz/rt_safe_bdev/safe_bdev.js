// Safe block device page: pick an array (?pool=), watch its recovery progress and member roster
// (the `stats` monitor, every second while a recovery runs, else every 2 s), and add, replace or
// remove members (form-encoded POSTs to /api/mod/rt_safe_bdev/<pool>/{add_member,replace_member,
// remove_member}). Every figure is the API's as it is: recovery_state names the state, the
// counts are slots (completed + in flight + queued = total), the rate is slots per second.
// Members may live on other nodes: the roster names each one's node and how this node's
// membership holds it (/api/topology), and a degraded array says how many more failures it
// survives.

import {
  $, h, fill, setText, getJSON, postForm, Panel, mountHeader, poolPicker, watchPredictions,
  renderForm, confirmDialog, fmtBytes, fmtInt, stateClass, stateLabel,
} from '/viz/common/app.js';
import { memberView } from '/viz/common/membership.js';

const PERIOD = 2000;
const FAST_PERIOD = 1000; // while a recovery runs, so its steps can be watched
const MOD = 'rt_safe_bdev';
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
let members = [];
let nodeViews = new Map(); // node id -> how this node's membership holds it (alive, suspect, dead, left)

const action = (name) => `/api/mod/${MOD}/${encodeURIComponent(picker.selected)}/${name}`;

// ---- forms ------------------------------------------------------------------------------------
const addForm = renderForm({
  mod_name: 'add',
  fields: [
    { name: 'member_name', label: 'Member name', required: true, help: 'an existing rt_bdev pool, or the name of a new one' },
    { name: 'capacity', label: 'Capacity (for a new device)', placeholder: 'e.g. 4MB' },
    { name: 'bdev_type', label: 'Type', type: 'select', default: 'file', options: ['file', 'ram'] },
    { name: 'node_id', label: 'Node (empty: this one)', placeholder: 'e.g. 2', help: "a peer's rt_bdev pool of that name, or one made there from the capacity" },
    { name: 'as_parity', label: 'Add as parity (raises the parity level)', type: 'checkbox' },
  ],
}, {
  submitLabel: 'Add member',
  validate: false,
  idPrefix: 'add',
  onSubmit: async (v, _a, ctl) => {
    const form = { member_name: v.member_name, bdev_type: v.bdev_type, as_parity: v.as_parity };
    if (v.capacity) form.capacity = v.capacity;
    if (v.node_id) form.node_id = v.node_id;
    const res = await postForm(action('add_member'), form);
    ctl.clear();
    ctl.setMessage(`Added ${res.as_parity ? 'parity' : 'data'} member ${res.member_name ?? v.member_name} (${res.member_pool_id ?? '?'}).`, 'ok');
    panel.poller.now();
  },
});
$('#add-body').append(addForm.el);

const replaceForm = renderForm({
  mod_name: 'replace',
  fields: [
    { name: 'failed_pool_id', label: 'Failed member', type: 'select', required: true, options: [] },
    { name: 'member_name', label: 'New member name', required: true, placeholder: 'e.g. spare0' },
    { name: 'capacity', label: 'Capacity (for a new device)', placeholder: 'e.g. 4MB' },
    { name: 'bdev_type', label: 'Type', type: 'select', default: 'file', options: ['file', 'ram'] },
    { name: 'node_id', label: 'Node (empty: this one)', placeholder: 'e.g. 2', help: "a peer's rt_bdev pool of that name, or one made there from the capacity" },
  ],
}, {
  submitLabel: 'Replace and recover',
  validate: false,
  idPrefix: 'replace',
  onSubmit: async (v, _a, ctl) => {
    const form = { ...v };
    for (const k of ['capacity', 'node_id']) if (!form[k]) delete form[k];
    const res = await postForm(action('replace_member'), form);
    ctl.clear();
    ctl.setMessage(`Replaced ${res.failed_pool_id ?? v.failed_pool_id} with ${res.member_name ?? v.member_name} (${res.member_pool_id ?? '?'}); recovery runs.`, 'ok');
    panel.poller.now();
  },
});
$('#replace-body').append(replaceForm.el);

const removeForm = renderForm({
  mod_name: 'remove',
  fields: [
    { name: 'member_pool_id', label: 'Member', type: 'select', required: true, options: [] },
    { name: 'was_faulty', label: 'The member failed (mark it faulty)', type: 'checkbox' },
  ],
}, {
  submitLabel: 'Remove member',
  validate: false,
  idPrefix: 'remove',
  onSubmit: async (v, _a, ctl) => {
    const m = members.find((x) => x.pool_id === v.member_pool_id);
    const label = m ? `${m.pool_name} (${m.pool_id})` : v.member_pool_id;
    const yes = await confirmDialog(`Take member ${label} out of service${v.was_faulty === '1' ? ' as faulty' : ''}?`, { confirmLabel: 'Remove' });
    if (!yes) return;
    const res = await postForm(action('remove_member'), v);
    ctl.clear();
    ctl.setMessage(`Member ${label} is out of service (${res.member_pool_id ?? v.member_pool_id}).`, 'ok');
    panel.poller.now();
  },
});
$('#remove-body').append(removeForm.el);

function setMemberOptions(select, list, preferFailed) {
  const sig = JSON.stringify(list.map((m) => [m.pool_id, m.pool_name, m.state]));
  if (select.dataset.sig === sig) return;
  select.dataset.sig = sig;
  const keep = select.value;
  fill(select, list.map((m) => h('option', { value: m.pool_id }, `${m.pool_name} (${m.pool_id}) · ${m.role} · ${stateLabel(m.state)}`)));
  if (list.some((m) => m.pool_id === keep)) select.value = keep;
  else if (preferFailed) {
    const failed = list.find((m) => m.state === 'faulty');
    if (failed) select.value = failed.pool_id;
  }
}

// ---- the array ----------------------------------------------------------------------------------
function num(label, value) {
  return h('div', {}, h('span', { class: 'n' }, value), h('span', { class: 'l' }, label));
}

const panel = new Panel($('#array-panel'));
panel.watch(async () => {
  const pool = await picker.update();
  const none = $('#no-array');
  if (!pool) {
    none.hidden = false;
    none.textContent = picker.selected ? `No array with pool id ${picker.selected} on this node.` : 'No safe block-device arrays on this node. Create one on the Pools page.';
    $('#array-view').hidden = true;
    return;
  }
  const [body, topo] = await Promise.all([
    getJSON(`/api/pools/${encodeURIComponent(pool.pool_id)}/monitor`, { query: 'stats' }),
    getJSON('/api/topology').catch(() => null), // the roster shows "unknown" without it
  ]);
  nodeViews = new Map((topo?.nodes || []).map((n) => [n.node_id, memberView(n)]));
  const s = Object.values(body.results || {}).find((x) => x && typeof x === 'object');
  if (!s) throw new Error(`pool ${pool.pool_id} gave no stats answer`);
  none.hidden = true;
  $('#array-view').hidden = false;
  setText($('#array-title'), `${s.pool_name || pool.pool_name} (${pool.pool_id})`);
  document.title = `${s.pool_name || pool.pool_name} · Safe block device · rtsim`;

  const serving = Number(s.active_members) + Number(s.recovering_members);
  fill($('#array-summary'),
    num('data members', fmtInt(s.data_count)),
    num('parity level', fmtInt(s.parity_level)),
    num('max failures', fmtInt(s.max_failures)),
    num('members active', `${fmtInt(s.active_members)} / ${fmtInt((s.members || []).length)}`),
    num('faulty', fmtInt(s.faulty_members)),
    num('removed', fmtInt(s.removed_members)),
    num('capacity', fmtBytes(s.total_capacity)),
    num('free', fmtBytes(s.remaining_capacity)),
    num('written slots', `${fmtInt(s.written_slots)} / ${fmtInt(s.total_slots)}`),
    num('dirty slots', fmtInt(s.dirty_slots)));
  paintRecovery(s, serving);
  paintBanner(s);
  panel.poller.period = s.recovery_state === 'recovering' || s.recovery_state === 'starting' ? FAST_PERIOD : PERIOD;

  // roster
  members = (s.members || []).slice();
  const roster = $('#roster');
  const rsig = JSON.stringify([members, members.map((m) => nodeViews.get(m.node_id) ?? null)]);
  if (roster.dataset.sig !== rsig) {
    roster.dataset.sig = rsig;
    paintRoster(roster);
  }
  const inService = members.filter((m) => m.state !== 'removed');
  setMemberOptions(replaceForm.inputs.get('failed_pool_id'), inService, true);
  setMemberOptions(removeForm.inputs.get('member_pool_id'), inService, false);
}, { period: PERIOD });

const STATE_BADGE = {
  recovering: ['warn', 'recovering'],
  starting: ['warn', 'starting'],
  degraded: ['bad', 'degraded'],
  complete: ['ok', 'complete'],
  idle: ['', 'idle'],
};

/** The recovery block: state badge, bar, and one line of counts that add up to the total. */
function paintRecovery(s, inService) {
  const total = Number(s.recovery_ops_total) || 0;
  const done = Number(s.recovery_ops_completed) || 0;
  const state = s.recovery_state || (s.recovery_active ? 'recovering' : total > 0 ? 'complete' : 'idle');
  const [cls, label] = STATE_BADGE[state] || ['', state];
  const running = state === 'recovering';
  const pct = total > 0 ? Math.min(100, Math.floor((100 * done) / total)) : null;
  const badge = $('#recovery-state');
  badge.className = `badge ${cls}`;
  badge.dataset.state = state;
  setText(badge, label);
  setText($('#recovery-pct'), pct === null ? '—' : `${pct} %`);
  const rate = Number(s.recovery_rate_slots_per_s) || 0;
  let text;
  if (running) {
    text = `${fmtInt(done)} of ${fmtInt(total)} slots recovered · ${fmtInt(s.recovery_ops_in_flight)} in flight · ${fmtInt(s.recovery_ops_queued)} queued`
      + (rate ? ` · ${rate.toFixed(1)} slots/s` : '')
      + (s.recovery_eta_s !== null && s.recovery_eta_s !== undefined ? ` · about ${Math.ceil(s.recovery_eta_s)} s left` : '');
  } else if (state === 'starting') {
    text = `${fmtInt(s.recovering_members)} member${s.recovering_members === 1 ? '' : 's'} waiting to be rebuilt; the recovery starts within a moment.`;
  } else if (state === 'degraded') {
    const out = Number(s.faulty_members) + Number(s.removed_members);
    text = `${fmtInt(out)} member${out === 1 ? ' is' : 's are'} out of service (${fmtInt(inService)} in service): replace ${out === 1 ? 'it' : 'them'} below to rebuild redundancy.`;
  } else if (total > 0) {
    text = `Last recovery: ${fmtInt(done)} of ${fmtInt(total)} slots recovered in ${Number(s.recovery_elapsed_s || 0).toFixed(1)} s`
      + (rate ? ` (${rate.toFixed(1)} slots/s)` : '') + '.';
  } else {
    text = 'No recovery has run: every member is in service.';
  }
  setText($('#recovery-text'), text);
  const bar = $('#recovery-bar');
  bar.className = `bar big ${running || state === 'starting' ? 'warn' : state === 'degraded' ? 'bad' : ''}`;
  bar.firstElementChild.style.width = `${pct ?? 0}%`;
  bar.setAttribute('aria-valuenow', String(pct ?? 0));
  bar.setAttribute('aria-valuetext', pct === null ? 'no recovery' : `${pct} percent, ${label}`);
  setText($('#recovery-pace'), `pace ${Number(s.recovery_pace_s ?? 0)} s per step`);
}

/** What a degraded array risks: members out, and how many more failures it survives. */
function paintBanner(s) {
  const banner = $('#degraded-banner');
  const all = (s.members || []).length;
  const out = all - Number(s.active_members);
  const down = (s.members || []).filter((m) => m.state === 'faulty' || m.state === 'removed');
  if (!down.length) {
    banner.hidden = true;
    return;
  }
  const more = Number(s.parity_level) - out;
  const where = down.map((m) => `${m.pool_name} on node ${m.node_id} (${nodeViews.get(m.node_id) ?? 'unknown'})`).join(', ');
  const risk = more > 0
    ? `It survives ${more} more member failure${more === 1 ? '' : 's'}.`
    : more === 0 ? 'One more member failure loses data.' : 'Data is unreadable until members come back.';
  banner.hidden = false;
  banner.dataset.more = String(more);
  fill(banner, h('strong', {}, 'Degraded: '), `${out} of ${all} members out of service (${where}). ${risk}`);
}

function paintRoster(roster) {
  const node = (m) => {
    const view = nodeViews.get(m.node_id);
    return h('td', { class: 'nowrap' }, `node ${m.node_id} `, h('span', { class: `badge ${stateClass(view || 'unknown')}` }, view || 'unknown'));
  };
  const rows = members.map((m) => h('tr', { 'data-pool': m.pool_id, 'data-node': String(m.node_id) },
    h('td', {}, m.role), h('td', { class: 'num' }, String(m.index)), h('td', {}, m.pool_name), h('td', {}, h('code', {}, m.pool_id)), node(m),
    h('td', {}, h('span', { class: `badge ${stateClass(m.state)}` }, stateLabel(m.state)), m.recovering && m.state !== 'recovering' ? h('span', { class: 'badge warn' }, 'recovering') : null),
    h('td', { class: 'nowrap' },
      h('button', { type: 'button', class: 'small', 'aria-label': `Replace ${m.pool_name}`, onclick: () => pick(replaceForm, 'failed_pool_id', m.pool_id) }, 'Replace…'), ' ',
      h('button', { type: 'button', class: 'small', 'aria-label': `Remove ${m.pool_name}`, onclick: () => pick(removeForm, 'member_pool_id', m.pool_id) }, 'Remove…'))));
  fill(roster, members.length
    ? h('div', { class: 'table-wrap' }, h('table', { class: 'roster' },
      h('thead', {}, h('tr', {}, ['Role', 'Index', 'Member', 'Pool id', 'Node', 'State', 'Actions'].map((c, i) => h('th', { scope: 'col', class: i === 1 ? 'num' : null }, c)))),
      h('tbody', {}, rows)))
    : h('p', { class: 'empty' }, 'No members.'));
}

function pick(ctl, field, poolId) {
  ctl.set(field, poolId);
  ctl.inputs.get(field).focus();
  ctl.el.scrollIntoView({ block: 'nearest' });
}

const preds = watchPredictions($('#predictions-panel'), $('#predictions-body'), () => picker.selected, PERIOD);
