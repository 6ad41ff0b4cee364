// DOM helpers. Every piece of data goes in through textContent or setAttribute, never innerHTML.

/**
 * h('a', {href: '/x', class: 'c', onclick: fn, dataset: {id: 1}}, 'text', child, [more])
 * Strings and numbers become text nodes; null/undefined/false children are skipped.
 */
export function h(tag, attrs = {}, ...children) {
  const el = tag.includes(':')
    ? document.createElementNS('http://www.w3.org/2000/svg', tag.split(':')[1])
    : document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === 'class') el.setAttribute('class', value);
    else if (key === 'text') el.textContent = String(value);
    else if (key === 'dataset') Object.assign(el.dataset, value);
    else if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2), value);
    else if (key === 'value' && 'value' in el) el.value = value;
    else if (key === 'checked' || key === 'selected' || key === 'disabled') el[key] = Boolean(value);
    else el.setAttribute(key, value === true ? '' : String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else if (child instanceof Node) el.appendChild(child);
    else el.appendChild(document.createTextNode(String(child)));
  }
}

/** Replace every child of el with the given children. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

export function $(selector, root = document) {
  return root.querySelector(selector);
}

export function $$(selector, root = document) {
  return Array.from(root.querySelectorAll(selector));
}

/** Set text only when it changed (keeps screen readers and layout calm). */
export function setText(el, text) {
  const s = String(text ?? '');
  if (el.textContent !== s) el.textContent = s;
}

/**
 * Keyed list update: keeps existing children (and so focus and scroll) for keys still present,
 * creates new ones, removes the rest, and puts them in the order of `items`.
 */
export function reconcile(parent, items, keyOf, create, update) {
  const existing = new Map();
  for (const child of Array.from(parent.children)) {
    if (child.dataset && child.dataset.key !== undefined) existing.set(child.dataset.key, child);
    else child.remove();
  }
  let cursor = parent.firstElementChild;
  for (const item of items) {
    const key = String(keyOf(item));
    let el = existing.get(key);
    if (el) existing.delete(key);
    else {
      el = create(item);
      el.dataset.key = key;
    }
    update(el, item);
    if (el !== cursor) parent.insertBefore(el, cursor);
    else cursor = cursor.nextElementSibling;
  }
  for (const el of existing.values()) el.remove();
}

/** A definition list from [label, value] pairs (values may be nodes). */
export function kvList(pairs, cls = 'kv') {
  const dl = h('dl', { class: cls });
  for (const [k, v] of pairs) dl.append(h('dt', {}, k), h('dd', {}, v));
  return dl;
}

/** A simple table: columns [{label, num}] and rows of cell values (strings or nodes). */
export function table(columns, rows, caption, { stack = true } = {}) {
  return h('div', { class: 'table-wrap' },
    h('table', { class: stack ? 'stack' : null },
      caption ? h('caption', { class: 'visually-hidden' }, caption) : null,
      h('thead', {}, h('tr', {}, columns.map((c) => h('th', { scope: 'col', class: c.num ? 'num' : null }, c.label)))),
      h('tbody', {}, rows.map((r) => h('tr', {}, r.map((cell, i) => h('td', { class: columns[i] && columns[i].num ? 'num' : null, 'data-label': columns[i] ? columns[i].label : null }, cell)))))));
}

let uid = 0;
export function uniqueId(prefix = 'id') {
  uid += 1;
  return `${prefix}-${uid}`;
}

/** Query-string parameter of the current page. */
export function param(name, fallback = null) {
  const v = new URLSearchParams(location.search).get(name);
  return v === null || v === '' ? fallback : v;
}

/** Replace a query parameter in the address bar without reloading. */
export function setParam(name, value) {
  const u = new URL(location.href);
  if (value === null || value === undefined || value === '') u.searchParams.delete(name);
  else u.searchParams.set(name, value);
  history.replaceState(null, '', u);
}
