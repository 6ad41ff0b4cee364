// The members of /api/topology as cards (small clusters) or a sortable table (large ones).
//
// 1. Layout 'auto' shows cards below TABLE_AT members and the table from TABLE_AT on; 'cards'
//    and 'table' force one. Both are keyed by node id and updated in place (reconcile).
// 2. Every member shows its state as a word, its incarnation and how long ago this node saw
//    it change ("since"); both come from the node's own table.
// 3. The table sorts by id, state, since or incarnation (a header button; again reverses) and
//    marks the sorted column with aria-sort.
// 4. A node speaking memberlist names its members: a member shows its name, its address with
//    its port, and its tags; one that is not an rtsim node (a Serf agent) is marked
//    'external' and has no node page to link to.

import { h, fill, reconcile, setText } from './dom.js';
import { stateClass, stateLabel } from './fmt.js';
import { memberView, viewRank, fmtSince } from './membership.js';

export const TABLE_AT = 20;

/** Does a member pass the state filter ('all', 'alive', 'suspect', 'down', 'not-alive')? */
export function passes(filter, n) {
  const v = memberView(n);
  switch (filter) {
    case 'alive': return v === 'alive';
    case 'suspect': return v === 'suspect';
    case 'down': return v === 'dead' || v === 'left';
    case 'not-alive': return v !== 'alive';
    default: return true;
  }
}

function title(n) {
  return n.name ?? `Node ${n.node_id}`;
}

/** Rule 4: a member with no node page of its own (not an rtsim node). */
function external(n) {
  return n.rtsim === false;
}

function setLink(link, n) {
  if (external(n)) link.removeAttribute('href');
  else link.href = `/viz/rt_admin/node.html?node=${encodeURIComponent(n.node_id)}`;
  setText(link, title(n));
}

function address(n) {
  const at = n.port === undefined ? n.ip_address : `${n.ip ?? n.ip_address}:${n.port}`;
  const tags = Object.entries(n.tags ?? {}).sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => `${k}=${v}`).join(', ');
  return tags ? `${at} · ${tags}` : at;
}

function badges(n) {
  const out = [h('span', { class: `badge state ${stateClass(n.state)}` }, stateLabel(n.state))];
  if (n.is_leader) out.push(h('span', { class: 'badge info leader' }, 'leader'));
  if (n.is_self) out.push(h('span', { class: 'badge self' }, 'this node'));
  if (external(n)) out.push(h('span', { class: 'badge external', title: 'a memberlist member that is not an rtsim node' }, 'external'));
  return out;
}

function sinceText(n) {
  return n.since === null || n.since === undefined ? 'no change seen' : `changed ${fmtSince(n.since)}`;
}

// ---- cards ----------------------------------------------------------------------------------------

function card() {
  return h('article', { class: 'card node-card' },
    h('h3', {}, h('a', {})),
    h('div', { class: 'badges' }),
    h('p', { class: 'meta ip' }),
    h('p', { class: 'meta' }, h('span', { class: 'inc' }), ' · ', h('span', { class: 'since' })));
}

function updateCard(el, n) {
  setLink(el.querySelector('h3 a'), n);
  el.dataset.state = n.state;
  el.dataset.view = memberView(n);
  el.classList.toggle('dead', memberView(n) === 'dead' || memberView(n) === 'left');
  el.classList.toggle('suspect', n.state === 'probe_failed' || memberView(n) === 'suspect');
  const sig = `${n.state}|${n.is_leader}|${n.is_self}`;
  if (el.dataset.sig !== sig) {
    el.dataset.sig = sig;
    fill(el.querySelector('.badges'), badges(n));
  }
  setText(el.querySelector('.ip'), `IP ${address(n)}`);
  setText(el.querySelector('.inc'), n.incarnation === undefined ? 'incarnation —' : `incarnation ${n.incarnation}`);
  setText(el.querySelector('.since'), sinceText(n));
  el.setAttribute('aria-label', `${title(n)}, ${stateLabel(n.state)}${n.is_leader ? ', leader' : ''}${n.is_self ? ', this node' : ''}`);
}

// ---- table ----------------------------------------------------------------------------------------

const COLUMNS = [
  ['id', 'Node', (a, b) => a.node_id - b.node_id],
  ['state', 'State', (a, b) => viewRank(a.view ?? a.state) - viewRank(b.view ?? b.state)],
  ['since', 'Since', (a, b) => (b.since ?? -Infinity) - (a.since ?? -Infinity)], // newest change first
  ['incarnation', 'Incarnation', (a, b) => (a.incarnation ?? -1) - (b.incarnation ?? -1)],
];

function row() {
  return h('tr', {},
    h('th', { scope: 'row', 'data-label': 'Node' }, h('a', {})),
    h('td', { class: 'm-state', 'data-label': 'State' }),
    h('td', { class: 'm-since', 'data-label': 'Since' }),
    h('td', { class: 'num m-inc', 'data-label': 'Incarnation' }),
    h('td', { class: 'm-ip', 'data-label': 'IP' }));
}

function updateRow(el, n) {
  setLink(el.querySelector('a'), n);
  el.dataset.state = n.state;
  el.dataset.view = memberView(n);
  const sig = `${n.state}|${n.is_leader}|${n.is_self}`;
  if (el.dataset.sig !== sig) {
    el.dataset.sig = sig;
    fill(el.querySelector('.m-state'), h('span', { class: 'badges' }, badges(n)));
  }
  setText(el.querySelector('.m-since'), n.since === null || n.since === undefined ? '—' : fmtSince(n.since));
  setText(el.querySelector('.m-inc'), n.incarnation ?? '—');
  setText(el.querySelector('.m-ip'), address(n));
}

/** Cards or table of members inside `el`; call paint(nodes, filter) on every poll. */
export class MemberList {
  constructor(el, { layout = 'auto', sort = 'id', onSort } = {}) {
    this.el = el;
    this.layout = layout;
    this.sort = { key: COLUMNS.some(([k]) => k === sort) ? sort : 'id', dir: 1 };
    this.onSort = onSort || (() => {});
    this.grid = h('div', { class: 'grid', id: 'node-grid-cards' });
    this.tbody = h('tbody');
    this.heads = COLUMNS.map(([key, label]) => h('th', { scope: 'col', class: key === 'incarnation' ? 'num' : null, dataset: { sort: key } },
      h('button', { type: 'button', class: 'sort', onclick: () => this.sortBy(key) }, label)));
    this.table = h('div', { class: 'table-wrap' }, h('table', { class: 'members stack' },
      h('caption', { class: 'visually-hidden' }, 'Members of this node\'s host table'),
      h('thead', {}, h('tr', {}, this.heads, h('th', { scope: 'col' }, 'IP'))),
      this.tbody));
    this.nodes = [];
    this.filter = 'all';
  }

  sortBy(key) {
    this.sort = { key, dir: this.sort.key === key ? -this.sort.dir : 1 };
    this.onSort(key);
    this.paint(this.nodes, this.filter);
  }

  mode(count) {
    if (this.layout === 'cards' || this.layout === 'table') return this.layout;
    return count >= TABLE_AT ? 'table' : 'cards';
  }

  paint(nodes, filter) {
    this.nodes = nodes;
    this.filter = filter;
    const mode = this.mode(nodes.length);
    const shown = nodes.filter((n) => passes(filter, n));
    this.el.dataset.layout = mode;
    if (!shown.length) {
      this.el.dataset.shown = 'none';
      fill(this.el, h('p', { class: 'empty' }, nodes.length ? 'No node matches the filter.' : 'No nodes in the host table.'));
      return;
    }
    const box = mode === 'table' ? this.table : this.grid;
    if (this.el.dataset.shown !== mode) {
      this.el.dataset.shown = mode;
      fill(this.el, box);
    }
    if (mode === 'cards') {
      reconcile(this.grid, shown, (n) => n.node_id, card, updateCard);
      return;
    }
    const [, , cmp] = COLUMNS.find(([k]) => k === this.sort.key);
    const sorted = shown.slice().sort((a, b) => this.sort.dir * cmp(a, b) || a.node_id - b.node_id);
    for (const th of this.heads) {
      if (th.dataset.sort === this.sort.key) th.setAttribute('aria-sort', this.sort.dir > 0 ? 'ascending' : 'descending');
      else th.removeAttribute('aria-sort');
    }
    reconcile(this.tbody, sorted, (n) => n.node_id, row, updateRow);
  }
}
