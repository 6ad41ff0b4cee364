// Config page: /api/config as a settings table; /api/routes as the route table (with the module
// that registered each route) and the asset mounts.

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

new Panel($('#settings-panel')).watch(async () => {
  const cfg = await getJSON('/api/config');
  const el = $('#settings-body');
  const sig = JSON.stringify(cfg);
  if (el.dataset.sig === sig) return;
  el.dataset.sig = sig;
  fill(el, table([{ label: 'Setting' }, { label: 'Value' }],
    Object.entries(cfg).map(([k, v]) => [h('code', {}, k), value(v)]), 'Settings'));
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
