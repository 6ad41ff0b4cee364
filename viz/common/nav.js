// The header every page shares: brand, tabs Cluster / Pools / Config, this node's identity and
// whether the node serving the page answers.

import { h, setText } from './dom.js';
import { getJSON } from './api.js';

const TABS = [
  ['cluster', 'Cluster', '/viz/rt_admin/index.html'],
  ['pools', 'Pools', '/viz/rt_admin/pools.html'],
  ['config', 'Config', '/viz/rt_admin/config.html'],
];

/** Put the header at the top of <body>; `active` is 'cluster', 'pools' or 'config'. */
export function mountHeader(active) {
  const ident = h('span', { class: 'node-ident' }, '');
  const net = h('span', { class: 'net-status', role: 'status', 'aria-live': 'polite' }, 'connected');
  const header = h('header', { class: 'site-header' },
    h('a', { class: 'skip-link', href: '#main' }, 'Skip to content'),
    h('a', { class: 'brand', href: '/viz/rt_admin/index.html' }, 'rtsim ', h('span', {}, 'dashboard')),
    h('nav', { 'aria-label': 'Sections' },
      h('div', { class: 'tabs' }, TABS.map(([key, label, href]) =>
        h('a', { href, 'aria-current': key === active ? 'page' : null }, label)))),
    h('div', { class: 'header-status' }, ident, net));
  document.body.prepend(header);

  window.addEventListener('rt:net', (ev) => {
    const { ok } = ev.detail;
    net.classList.toggle('down', !ok);
    setText(net, ok ? 'connected' : 'node unreachable — showing stale data');
    if (ok) loadIdentity(ident);
  });
  loadIdentity(ident);
  return header;
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
