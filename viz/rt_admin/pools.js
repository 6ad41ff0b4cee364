// Pools page: a section per module and a card per pool (sorted by pool id), painted from
// /api/pools first; each card's `stats` monitor answer streams in after, 6 requests at a time,
// cards on screen first. Corner control destroys a pool after confirmation. Add Pool (typed
// create forms, or the generic compose editor: for modules without a form, and for any module
// through the "Compose from YAML" button or /viz/rt_admin/pools.html#compose), the monitor
// explorer, task predictions.

import {
  $, h, fill, reconcile, setText, getJSON, postForm, errorText, mapLimit, Panel, mountHeader,
  confirmDialog, renderForm, mountMonitorExplorer, renderPredictions, isTrained, cmpPoolId, suggestPoolId,
  fmtValue, fmtStat, ApiError,
} from '/viz/common/app.js';

const PERIOD = 5000;
const STATS_CONCURRENCY = 6;
const MAX_STATS_SHOWN = 6;

mountHeader('pools');

let pools = [];
let chimods = [];
const hasPages = new Map();
const statsCache = new Map(); // pool_id -> {ok, data | error}
const visible = new Set();
const pageMsg = $('#pools-message');

function say(text, kind = 'info') {
  pageMsg.textContent = text;
  pageMsg.className = `form-message ${text ? kind : ''}`;
}

function pageOf(p) {
  if (p.mod_name !== 'rt_admin' && hasPages.get(p.mod_name)) {
    return `/viz/${encodeURIComponent(p.mod_name)}/?pool=${encodeURIComponent(p.pool_id)}`;
  }
  return `/viz/rt_admin/pool.html?pool=${encodeURIComponent(p.pool_id)}`;
}

// ---- cards ------------------------------------------------------------------------------------
const observer = 'IntersectionObserver' in window
  ? new IntersectionObserver((entries) => {
    for (const e of entries) {
      if (e.isIntersecting) visible.add(e.target.dataset.key);
      else visible.delete(e.target.dataset.key);
    }
  })
  : null;

function poolCard(p) {
  const card = h('article', { class: 'card pool-card' },
    h('h3', {}, h('a', {})),
    h('div', { class: 'badges' }),
    h('div', { class: 'stats' }, h('p', { class: 'loading meta' }, 'stats loading…')));
  if (p.pool_id !== '1.0') {
    const btn = h('button', { type: 'button', class: 'corner destroy', title: 'Shut down this pool' }, '×');
    btn.addEventListener('click', () => destroy(card.dataset.key, card.dataset.name, card));
    card.append(btn);
  }
  if (observer) observer.observe(card);
  return card;
}

function updatePoolCard(card, p) {
  card.dataset.name = p.pool_name;
  card.dataset.mod = p.mod_name;
  const a = card.querySelector('h3 a');
  a.href = pageOf(p);
  setText(a, p.pool_name);
  const btn = card.querySelector('button.destroy');
  if (btn) btn.setAttribute('aria-label', `Shut down pool ${p.pool_name} (${p.pool_id})`);
  const sig = `${p.pool_id}|${p.container_id}`;
  if (card.dataset.sig !== sig) {
    card.dataset.sig = sig;
    fill(card.querySelector('.badges'),
      h('span', { class: 'badge mono pool-id' }, p.pool_id),
      h('span', { class: 'badge' }, `node ${p.container_id}`));
  }
  paintStats(card, statsCache.get(p.pool_id));
}

function paintStats(card, entry) {
  const box = card.querySelector('.stats');
  if (!entry) return;
  const sig = JSON.stringify(entry);
  if (box.dataset.sig === sig) return;
  box.dataset.sig = sig;
  if (!entry.ok) {
    const quiet = entry.status === 400 && /no query/.test(entry.error);
    fill(box, h('p', { class: quiet ? 'meta' : 'card-error', role: quiet ? null : 'alert' }, quiet ? 'no stats query for this module' : `stats failed: ${entry.error}`));
    return;
  }
  const data = entry.data;
  if (data === null || typeof data !== 'object') {
    fill(box, h('p', { class: 'meta' }, data === null ? 'the container gave no answer' : fmtValue(data)));
    return;
  }
  const pairs = Object.entries(data).filter(([k]) => k !== 'pool_name' && k !== 'members').slice(0, MAX_STATS_SHOWN);
  const dl = h('dl', { class: 'kv' });
  const where = memberPlaces(data.members);
  if (where) dl.append(h('dt', {}, 'members'), h('dd', { class: 'members-where' }, where));
  for (const [k, v] of pairs) dl.append(h('dt', {}, k.replace(/_/g, ' ')), h('dd', {}, fmtStat(k, v)));
  fill(box, pairs.length ? dl : h('p', { class: 'meta' }, 'no stats'));
}

/** Where an array's members live: `name@node` each, with its state when not active. */
function memberPlaces(list) {
  if (!Array.isArray(list) || !list.length || !list.every((m) => m && 'node_id' in m)) return null;
  return list.map((m) => `${m.pool_name}@${m.node_id}${m.state && m.state !== 'active' ? ` (${m.state})` : ''}`).join(', ');
}

async function loadStats(poolId) {
  let entry;
  try {
    const body = await getJSON(`/api/pools/${encodeURIComponent(poolId)}/monitor`, { query: 'stats' });
    const answers = Object.values(body.results || {});
    const first = answers.find((a) => a !== null && a !== undefined);
    entry = { ok: true, data: first === undefined ? null : first };
  } catch (err) {
    if (err instanceof ApiError && err.status === 404 && !pools.some((p) => p.pool_id === poolId)) return;
    entry = { ok: false, error: errorText(err), status: err.status || 0 };
  }
  statsCache.set(poolId, entry);
  const card = document.querySelector(`#pools-body article[data-key="${CSS.escape(poolId)}"]`);
  if (card) paintStats(card, entry);
}

function paintPools() {
  const q = $('#pool-filter').value.trim().toLowerCase();
  const shown = pools.filter((p) => !q || `${p.pool_name} ${p.pool_id} ${p.mod_name}`.toLowerCase().includes(q));
  const byMod = new Map();
  for (const p of shown) {
    if (!byMod.has(p.mod_name)) byMod.set(p.mod_name, []);
    byMod.get(p.mod_name).push(p);
  }
  const order = chimods.map((m) => m.name);
  const mods = [...byMod.keys()].sort((a, b) => {
    const ia = order.indexOf(a);
    const ib = order.indexOf(b);
    return (ia < 0 ? 1e9 : ia) - (ib < 0 ? 1e9 : ib) || a.localeCompare(b);
  });
  const body = $('#pools-body');
  if (!shown.length) {
    fill(body, h('p', { class: 'empty' }, pools.length ? 'No pool matches the filter.' : 'No pools.'));
    return;
  }
  reconcile(body, mods, (m) => `mod:${m}`, (m) => h('section', { class: 'mod-section', 'aria-labelledby': `mod-${m}` },
    h('h3', { id: `mod-${m}`, style: 'margin:4px 0 10px' }, h('code', {}, m), h('span', { class: 'panel-sub count' })),
    h('div', { class: 'grid wide' })), (sec, m) => {
    const list = byMod.get(m).sort((a, b) => cmpPoolId(a.pool_id, b.pool_id));
    setText(sec.querySelector('.count'), ` · ${list.length} pool${list.length === 1 ? '' : 's'}`);
    reconcile(sec.querySelector('.grid'), list, (p) => p.pool_id, poolCard, updatePoolCard);
  });
  for (const sec of body.querySelectorAll('.mod-section')) sec.style.marginBottom = '18px';
}

$('#pool-filter').addEventListener('input', paintPools);

async function destroy(poolId, name, card) {
  const yes = await confirmDialog(`Shut down pool ${name} (${poolId})?`, { confirmLabel: 'Shut down' });
  if (!yes) {
    card.querySelector('button.destroy')?.focus();
    return;
  }
  try {
    await postForm(`/api/pools/${encodeURIComponent(poolId)}/destroy`, {});
    pools = pools.filter((p) => p.pool_id !== poolId);
    statsCache.delete(poolId);
    paintPools();
    say(`Pool ${name} (${poolId}) shut down.`, 'ok');
    pollerRef.now();
    refreshSuggestion();
  } catch (err) {
    say(`Could not shut down pool ${name} (${poolId}): ${errorText(err)}`, 'bad');
  }
}

// ---- the list poll --------------------------------------------------------------------------------
const explorer = mountMonitorExplorer($('#monitor-body'));

const listPanel = new Panel($('#pools-panel'));
const pollerRef = listPanel.watch(async () => {
  const [pbody, cbody] = await Promise.all([getJSON('/api/pools'), getJSON('/api/chimods')]);
  pools = (pbody.pools || []).slice().sort((a, b) => cmpPoolId(a.pool_id, b.pool_id));
  setChimods(cbody.chimods || []);
  const ids = new Set(pools.map((p) => p.pool_id));
  for (const id of statsCache.keys()) if (!ids.has(id)) statsCache.delete(id);
  paintPools();
  const mods = new Set(pools.map((p) => p.mod_name));
  setText($('#pools-summary'), `${pools.length} pool${pools.length === 1 ? '' : 's'} of ${mods.size} module${mods.size === 1 ? '' : 's'}`);
  explorer.setPools(pools);
  updatePredictionSelect();
  // stats stream in after the list is painted: cards on screen first
  const order = pools.map((p) => p.pool_id).sort((a, b) => (visible.has(b) ? 1 : 0) - (visible.has(a) ? 1 : 0));
  await mapLimit(order, STATS_CONCURRENCY, loadStats);
}, { period: PERIOD, maxDelay: 20000 });

// ---- Add Pool ---------------------------------------------------------------------------------
let selectedMod = null;
let activeForm = null; // {mod, ctl, kind}

function setChimods(list) {
  const sig = JSON.stringify(list);
  if (sig === JSON.stringify(chimods)) return;
  chimods = list;
  hasPages.clear();
  for (const m of list) hasPages.set(m.name, Boolean(m.has_pages));
  paintModList();
  if (location.hash === '#compose' && !activeForm) openCompose(null);
}

// rt_admin has one pool, the admin pool 1.0 (the runtime itself): nothing to add
const composable = () => chimods.filter((m) => m.name !== 'rt_admin');

function paintModList() {
  const q = $('#mod-search').value.trim().toLowerCase();
  const shown = composable().filter((m) => !q || m.name.toLowerCase().includes(q));
  const ul = $('#mod-list');
  if (!shown.length) {
    fill(ul, h('li', { class: 'empty' }, 'No loaded module matches.'));
    return;
  }
  fill(ul, shown.map((m) => h('li', {},
    h('button', {
      type: 'button', class: 'mod-pick', 'data-mod': m.name, 'aria-pressed': String(m.name === selectedMod),
      onclick: () => pickModule(m.name),
    }, m.name, h('span', { class: 'hint' }, m.has_create ? 'form' : 'compose')))));
}

$('#mod-search').addEventListener('input', paintModList);
$('#mod-search').addEventListener('keydown', (ev) => {
  if (ev.key === 'Enter') {
    ev.preventDefault();
    const first = $('#mod-list button');
    if (first) first.click();
  }
});

function freeSuggestion(base = 800) {
  return suggestPoolId(pools.map((p) => p.pool_id), base);
}

async function fetchSpec(mod) {
  return getJSON(`/api/mod/${encodeURIComponent(mod)}/create`);
}

async function pickModule(mod) {
  selectedMod = mod;
  paintModList();
  const area = $('#add-form');
  const info = chimods.find((m) => m.name === mod) || { name: mod, has_create: false };
  if (!info.has_create) {
    openCompose(mod);
    return;
  }
  fill(area, h('p', { class: 'loading' }, `Loading the form of ${mod}…`));
  let spec;
  try {
    spec = await fetchSpec(mod);
  } catch (err) {
    fill(area, h('p', { class: 'form-message bad', role: 'alert' }, `Could not load the create form of ${mod}: ${errorText(err)}`));
    return;
  }
  if (selectedMod !== mod) return;
  const ctl = renderForm(spec, {
    idPrefix: `create-${mod}`,
    onSubmit: async (values, action) => {
      const form = { ...values };
      if (action === 'validate') form.action = 'validate';
      const res = await postForm(`/api/mod/${encodeURIComponent(mod)}/create`, form);
      done(ctl, res, action, values);
    },
  });
  activeForm = { mod, ctl, kind: 'create', specDefault: (spec.fields || []).find((f) => f.name === 'pool_id')?.default || '' };
  const yaml = h('button', { type: 'button', class: 'link-button', onclick: () => openCompose(mod) }, 'compose it from YAML');
  fill(area, h('h3', { style: 'margin-bottom:10px' }, spec.title || `New ${mod} pool`), ctl.el,
    h('p', { class: 'form-note' }, 'Or ', yaml, ' with any module parameter.'));
  if (!ctl.values().pool_id) ctl.set('pool_id', freeSuggestion());
}

/** The generic compose editor (the path of rt_run compose), preset to module `mod`; its heading
 *  follows the module picked in it. */
function openCompose(mod) {
  const mods = composable().map((m) => m.name);
  const first = mods.includes(mod) ? mod : (mods[0] || '');
  selectedMod = first;
  paintModList();
  const spec = {
    mod_name: 'compose',
    note: 'Identity fields and the module parameters as YAML, the same path as rt_run compose. Errors in the YAML name their line and column.',
    fields: [
      { name: 'mod_name', label: 'Module (mod_name)', type: 'select', required: true, default: first, options: mods, placeholder: '', help: '' },
      { name: 'pool_name', label: 'Pool name', type: 'text', required: true, default: '', options: [], placeholder: 'e.g. my_pool', help: '' },
      { name: 'pool_id', label: 'Pool id', type: 'text', required: true, default: '', options: [], placeholder: 'major.minor', help: 'A free id is suggested; you may edit it.' },
      { name: 'pool_query', label: 'Pool query (routing)', type: 'text', required: false, default: 'local', options: [], placeholder: 'local', help: '' },
      { name: 'config', label: 'Module parameters (YAML)', type: 'textarea', required: false, default: '', options: [], placeholder: 'capacity: 16M', help: 'A YAML mapping; leave empty for none. A key the module does not know is refused.' },
    ],
  };
  const heading = h('h3', { id: 'compose-title', style: 'margin-bottom:10px' });
  const ctl = renderForm(spec, {
    idPrefix: 'compose',
    onSubmit: async (values, action) => {
      const form = { ...values };
      if (action === 'validate') form.action = 'validate';
      try {
        const res = await postForm('/api/pools/compose', form);
        done(ctl, res, action, values);
      } catch (err) {
        throw asConfigErrors(err, spec.fields);
      }
    },
  });
  const modSel = ctl.inputs.get('mod_name');
  const title = () => setText(heading, modSel.value ? `Compose a ${modSel.value} pool` : 'Compose a pool');
  modSel.addEventListener('change', () => {
    title();
    selectedMod = modSel.value;
    paintModList();
    if (activeForm && activeForm.ctl === ctl) activeForm.mod = modSel.value;
  });
  title();
  activeForm = { mod: first, ctl, kind: 'compose', specDefault: '' };
  fill($('#add-form'), heading, ctl.el);
  ctl.set('pool_id', freeSuggestion());
}

/** Errors of module parameters (keys that are no field of the editor) belong to the YAML box. */
function asConfigErrors(err, fields) {
  const fe = err instanceof ApiError ? err.fieldErrors : null;
  if (!fe) return err;
  const names = new Set(fields.map((f) => f.name));
  const moved = Object.entries(fe).filter(([k]) => !names.has(k));
  if (!moved.length) return err;
  const kept = Object.fromEntries(Object.entries(fe).filter(([k]) => names.has(k)));
  const lines = moved.map(([k, v]) => `${k}: ${v}`);
  kept.config = [kept.config, ...lines].filter(Boolean).join('\n');
  err.body = { ...err.body, errors: kept };
  return err;
}

window.addEventListener('hashchange', () => {
  if (location.hash === '#compose' && chimods.length) openCompose(selectedMod);
});
$('#compose-open').addEventListener('click', () => {
  if (!chimods.length) { // the module list is not here yet: setChimods opens the editor then
    activeForm = null;
    history.replaceState(null, '', '#compose');
    fill($('#add-form'), h('p', { class: 'muted', id: 'compose-title' }, 'Loading the modules…'));
    return;
  }
  openCompose(selectedMod);
  $('#compose-title').scrollIntoView({ block: 'nearest' });
  $('#add-form select[name="mod_name"]').focus();
});

function done(ctl, res, action, values) {
  ctl.setErrors({});
  if (action === 'validate') {
    ctl.setMessage('All fields are valid. Nothing was created.', 'ok');
    return;
  }
  const name = res.pool_name || values.pool_name;
  ctl.setMessage(`Created pool ${name} (${res.pool_id}).`, 'ok');
  say(`Created pool ${name} (${res.pool_id}).`, 'ok');
  ctl.set('pool_name', '');
  pollerRef.now();
  refreshSuggestion(res.pool_id);
}

/** After a create or destroy, put a fresh free id in the form (never the one just used). */
async function refreshSuggestion(justUsed = null) {
  if (!activeForm) return;
  const { mod, ctl, kind } = activeForm;
  let next = '';
  if (kind === 'create') {
    try {
      const spec = await fetchSpec(mod);
      next = (spec.fields || []).find((f) => f.name === 'pool_id')?.default || '';
    } catch {
      next = '';
    }
  }
  if (!next || next === justUsed) {
    const ids = pools.map((p) => p.pool_id);
    if (justUsed) ids.push(justUsed);
    next = suggestPoolId(ids, 800);
  }
  if (activeForm && activeForm.ctl === ctl) ctl.set('pool_id', next);
}

// ---- predictions ----------------------------------------------------------------------------------
let containersBody = null;
const predSel = $('#pred-pool');
function updatePredictionSelect() {
  const sig = pools.map((p) => p.pool_id).join(',');
  if (predSel.dataset.sig === sig) return;
  predSel.dataset.sig = sig;
  const keep = predSel.value;
  fill(predSel, h('option', { value: '' }, 'all pools'), pools.map((p) => h('option', { value: p.pool_id }, `${p.pool_name} (${p.pool_id})`)));
  if (pools.some((p) => p.pool_id === keep)) predSel.value = keep;
}
function paintPredictions() {
  if (!containersBody) return;
  const cs = containersBody.containers || [];
  const methods = cs.reduce((n, c) => n + (c.methods || []).length, 0);
  const trained = cs.reduce((n, c) => n + (c.methods || []).filter(isTrained).length, 0);
  setText($('#predictions-summary'), predSel.value
    ? `Show the methods of pool ${predSel.value}`
    : `Show all ${methods} methods of ${cs.length} pools (${trained} trained)`);
  if (!$('#predictions-more').open) return; // painted when opened
  renderPredictions($('#predictions-body'), containersBody, { poolId: predSel.value || null });
}
predSel.addEventListener('change', () => {
  if (predSel.value) $('#predictions-more').open = true;
  paintPredictions();
});
$('#predictions-more').addEventListener('toggle', paintPredictions);
new Panel($('#predictions-panel')).watch(async () => {
  containersBody = await getJSON('/api/nodes/local/containers');
  paintPredictions();
}, { period: PERIOD });
