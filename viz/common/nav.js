// The header every page shares: brand, tabs Cluster / Views / Pools / Config / API, a Modules menu
// (the loaded modules that ship pages, from /api/chimods), this node's identity and whether the
// node serving the page answers. The tabs wrap on a phone; the menu opens below its button.

import { h, fill, setText } from './dom.js';
import { getJSON } from './api.js';

const TABS = [
  ['cluster', 'Cluster', '/viz/rt_admin/index.html'],
  ['views', 'Views', '/views'],
  ['pools', 'Pools', '/viz/rt_admin/pools.html'],
  ['config', 'Config', '/viz/rt_admin/config.html'],
  ['api', 'API', '/api/docs'],
];

/** The module whose page this is (`/viz/<mod>/...`), or null on an rt_admin page. */
function pageModule() {
  const m = /^\/viz\/([^/]+)\//.exec(window.location.pathname);
  return m && m[1] !== 'rt_admin' && m[1] !== 'common' ? decodeURIComponent(m[1]) : null;
}

/** Put the header at the top of <body>; `active` is 'cluster', 'views', 'pools', 'config' or
 *  'modules' (a module's own page: the menu button is marked and so is the module's entry). */
export function mountHeader(active) {
  const ident = h('span', { class: 'node-ident' }, '');
  const net = h('span', { class: 'net-status', role: 'status', 'aria-live': 'polite' }, 'connected');
  const modules = modulesMenu(active === 'modules' ? pageModule() : null);
  const header = h('header', { class: 'site-header' },
    h('a', { class: 'skip-link', href: '#main' }, 'Skip to content'),
    h('a', { class: 'brand', href: '/viz/rt_admin/index.html' }, 'rtsim ', h('span', {}, 'dashboard')),
    h('nav', { 'aria-label': 'Sections' },
      h('div', { class: 'tabs' },
        TABS.map(([key, label, href]) =>
          h('a', { href, 'data-tab': key, 'aria-current': key === active ? 'page' : null }, label)),
        modules.el)),
    h('div', { class: 'header-status' }, ident, net));
  document.body.prepend(header);

  window.addEventListener('rt:net', (ev) => {
    const { ok } = ev.detail;
    net.classList.toggle('down', !ok);
    setText(net, ok ? 'connected' : 'node unreachable — showing stale data');
    if (ok) {
      loadIdentity(ident);
      modules.load();
    }
  });
  loadIdentity(ident);
  modules.load();
  return header;
}

/** The Modules menu: a disclosure button and a list of links to /viz/<mod>/index.html. */
function modulesMenu(current) {
  const list = h('ul', { class: 'nav-menu-list', id: 'nav-modules' }, h('li', { class: 'empty' }, 'Loading…'));
  const button = h('button', {
    type: 'button', class: 'nav-menu-button', 'aria-expanded': 'false', 'aria-controls': 'nav-modules',
    'aria-current': current ? 'page' : null,
  }, 'Modules');
  const el = h('div', { class: 'nav-menu', 'data-tab': 'modules' }, button, list);
  list.hidden = true;
  const setOpen = (open) => {
    list.hidden = !open;
    button.setAttribute('aria-expanded', String(open));
  };
  button.addEventListener('click', () => setOpen(list.hidden));
  document.addEventListener('click', (ev) => { if (!el.contains(ev.target)) setOpen(false); });
  el.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape' && !list.hidden) {
      setOpen(false);
      button.focus();
    }
  });
  let sig = '';
  async function load() {
    let mods;
    try {
      mods = ((await getJSON('/api/chimods')).chimods || []).filter((m) => m.has_pages && m.name !== 'rt_admin');
    } catch {
      return; // the net status says it; the menu stays as it was
    }
    const next = mods.map((m) => m.name).join(',');
    if (next === sig && list.dataset.loaded) return;
    sig = next;
    list.dataset.loaded = '1';
    fill(list, mods.length
      ? mods.map((m) => h('li', {}, h('a', {
        href: `/viz/${encodeURIComponent(m.name)}/index.html`,
        'data-mod': m.name,
        'aria-current': m.name === current ? 'page' : null,
      }, m.name)))
      : h('li', { class: 'empty' }, 'No module with pages is loaded.'));
  }
  return { el, load };
}

async function loadIdentity(el) {
  try {
    const hlt = await getJSON('/api/health');
    const parts = [`node ${hlt.node_id}`, hlt.hostname, hlt.ip_address].filter((p) => p !== undefined && p !== '');
    setText(el, parts.join(' · ') + (hlt.is_leader ? ' · leader' : ''));
  } catch {
    // the net status says it; identity stays as it was
  }
}
