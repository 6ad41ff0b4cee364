// Config page: /api/config as a settings table (value, with paths shown expanded, and where each
// value came from: default, file, env, flag or derived); /api/routes as the route table (with the
// module that registered each route) and the asset mounts.

import { $, h, fill, setText, getJSON, Panel, mountHeader, fmtValue, table } from '/viz/common/app.js';

const PERIOD = 5000;
mountHeader('config');

function value(v) {
  if (Array.isArray(v)) return v.length ? v.map((x) => (typeof x === 'object' ? JSON.stringify(x) : String(x))).join(', ') : '(none)';
  if (v === '') return '(empty)';
  if (v !== null && typeof v === 'object') return JSON.stringify(v);
  if (typeof v === 'number') return String(v);
  return fmtValue(v);
}

const PATH_KEYS = ['conf_dir', 'hostfile'];

/** A path setting: the expanded path the node uses, and the text as configured when it differs. */
function pathValue(raw, expanded) {
  if (raw === '' || expanded === null || expanded === undefined) return value(raw);
  if (expanded === raw) return h('code', {}, raw);
  return h('span', {}, h('code', {}, expanded), h('span', { class: 'muted config-raw' }, ` (configured as ${raw})`));
}

function sourceCell(text) {
  if (!text) return h('span', { class: 'muted' }, '—');
  const kind = text.split(/[\s:]/)[0];
  return h('span', { class: `source source-${kind}` }, text);
}

new Panel($('#settings-panel')).watch(async () => {
  const cfg = await getJSON('/api/config');
  const el = $('#settings-body');
  const sig = JSON.stringify(cfg);
  if (el.dataset.sig === sig) return;
  el.dataset.sig = sig;
  const { sources = {}, paths = {}, ...settings } = cfg;
  const rows = Object.entries(settings).map(([k, v]) => [
    h('code', {}, k),
    PATH_KEYS.includes(k) ? pathValue(v, paths[k]) : value(v),
    sourceCell(sources[k]),
  ]);
  // paths the node uses that are no setting of their own
  if (paths.data_dir) rows.push([h('code', {}, 'data_dir'), h('code', {}, paths.data_dir), sourceCell(sources.data_dir)]);
  if ('config_file' in paths) {
    rows.push([h('code', {}, 'config_file'),
      paths.config_file ? h('code', {}, paths.config_file) : h('span', { class: 'muted' }, 'none: built-in defaults'),
      sourceCell(paths.config_file ? sources.config_file : 'default (no ~/.rt/rt.yaml)')]);
  }
  fill(el, table([{ label: 'Setting' }, { label: 'Value' }, { label: 'From' }], rows, 'Settings'));
}, { period: PERIOD });

let routes = null;
function paintRoutes() {
  if (!routes) return;
  const q = $('#route-filter').value.trim().toLowerCase();
  const list = (routes.routes || []).filter((r) => !q || `${r.method} ${r.path} ${r.mod_name} ${r.doc || ''}`.toLowerCase().includes(q));
  setText($('#routes-sub'), `${(routes.routes || []).length} routes`);
  fill($('#routes-body'), list.length
    ? table([{ label: 'Method' }, { label: 'Path' }, { label: 'Module' }, { label: 'What' }],
      list.map((r) => [h('span', { class: `badge ${r.method === 'POST' ? 'warn' : 'info'}` }, r.method), h('code', {}, r.path), h('code', {}, r.mod_name), r.doc || '']), 'Routes')
    : h('p', { class: 'empty' }, 'No route matches the filter.'));
  const mounts = routes.mounts || [];
  fill($('#mounts-body'), mounts.length
    ? table([{ label: 'Module' }, { label: 'URL prefix' }, { label: 'Folder' }],
      mounts.map((m) => [h('code', {}, m.mod_name), h('a', { href: `${m.url_prefix}/` }, m.url_prefix), h('code', {}, m.dir)]), 'Asset mounts')
    : h('p', { class: 'empty' }, 'No asset mounts.'));
}
$('#route-filter').addEventListener('input', paintRoutes);

new Panel($('#routes-panel')).watch(async () => {
  const body = await getJSON('/api/routes');
  const sig = JSON.stringify(body);
  if (routes && JSON.stringify(routes) === sig) return;
  routes = body;
  paintRoutes();
}, { period: PERIOD });
