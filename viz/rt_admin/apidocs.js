// API page: every operation of this node's /openapi.json, grouped by module, with its
// parameters, request body, responses and links, and a "Try it" form for GETs.
//
// 1. Read once from /openapi.json (the node generates it from its running routes); nothing is
//    loaded from anywhere else.
// 2. Each operation is a <details> with id = its operationId (so #get_api_health links to it)
//    and data-method / data-path; the filter hides the ones whose method, path or words miss.
// 3. Try it fills path segments and query parameters from the inputs (first example as the
//    placeholder), sends the GET to this node and shows status, content type and body (JSON
//    pretty-printed, anything else as text, cut at MAX_SHOWN characters).
// 4. Every piece of the document goes into the page as text (dom.js h/fill), never as HTML.

import { $, h, fill, setText, mountHeader } from '/viz/common/app.js';

const MAX_SHOWN = 20000; // characters of a Try it answer shown
const METHOD_CLASS = { GET: 'ok', POST: 'warn' };

mountHeader('api');

/** The component a local $ref names (#/components/<kind>/<name>), or null. */
function deref(doc, node) {
  if (!node || typeof node.$ref !== 'string') return node;
  const parts = node.$ref.replace(/^#\//, '').split('/');
  let cur = doc;
  for (const p of parts) cur = cur ? cur[p] : undefined;
  return cur || null;
}

/** A short text for a schema: "integer 0 to 5000", "one of a, b", "array of ...", ... */
function typeText(doc, schema, depth = 0) {
  if (!schema || depth > 3) return 'any';
  if (schema.$ref) return schema.$ref.split('/').pop();
  if ('const' in schema) return JSON.stringify(schema.const);
  if (schema.enum) return `one of ${schema.enum.map((v) => (v === '' ? '""' : v)).join(', ')}`;
  for (const key of ['anyOf', 'oneOf']) {
    if (schema[key]) return schema[key].map((s) => typeText(doc, s, depth + 1)).join(' or ');
  }
  const t = Array.isArray(schema.type) ? schema.type.join(' or ') : schema.type;
  if (t === 'array') return `array of ${typeText(doc, schema.items, depth + 1)}`;
  if (t === 'object' || schema.properties) {
    const keys = Object.keys(schema.properties || {});
    if (keys.length) return `object {${keys.join(', ')}}`;
    if (schema.additionalProperties) return `map of ${typeText(doc, schema.additionalProperties, depth + 1)}`;
    return 'object';
  }
  const parts = [t || 'any'];
  if (schema.minimum !== undefined || schema.maximum !== undefined) {
    parts.push(`${schema.minimum ?? '…'} to ${schema.maximum ?? '…'}`);
  }
  if (schema.pattern) parts.push(`matching ${schema.pattern}`);
  if (schema.default !== undefined) parts.push(`(default ${JSON.stringify(schema.default)})`);
  return parts.join(' ');
}

function table(head, rows) {
  if (!rows.length) return null;
  return h('div', { class: 'table-wrap' }, h('table', {},
    h('thead', {}, h('tr', {}, head.map((c) => h('th', { scope: 'col' }, c)))),
    h('tbody', {}, rows.map((r) => h('tr', {}, r.map((c) => h('td', {}, c)))))));
}

function paramRows(doc, op) {
  return (op.parameters || []).map((p0) => {
    const p = deref(doc, p0);
    return [h('code', {}, p.name), p.in, typeText(doc, p.schema), p.required ? 'yes' : '', p.description || ''];
  });
}

function bodyRows(doc, op) {
  const content = op.requestBody ? op.requestBody.content || {} : {};
  const rows = [];
  for (const [media, m] of Object.entries(content)) {
    const schema = m.schema || {};
    const required = new Set(schema.required || []);
    for (const [name, s] of Object.entries(schema.properties || {})) {
      rows.push([h('code', {}, name), media, typeText(doc, s), required.has(name) ? 'yes' : '', s.description || '']);
    }
  }
  return rows;
}

function responseRows(doc, op) {
  return Object.entries(op.responses || {}).map(([status, r0]) => {
    const r = deref(doc, r0) || {};
    const content = Object.entries(r.content || {});
    const bodies = content.map(([media, m]) => `${media}: ${typeText(doc, m.schema)}`).join('; ');
    return [h('code', {}, status), r.description || '', bodies];
  });
}

function linkList(op) {
  const ok = op.responses && op.responses['200'];
  const links = ok && ok.links ? Object.entries(ok.links) : [];
  if (!links.length) return null;
  return h('p', { class: 'form-note' }, 'Then: ', links.map(([name, l], i) => [
    i ? ', ' : '', h('a', { href: `#${l.operationId}` }, name),
    ` (${Object.entries(l.parameters || {}).map(([k, v]) => `${k} = ${v}`).join(', ')})`,
  ]));
}

function firstExample(schema) {
  const ex = schema && Array.isArray(schema.examples) ? schema.examples : [];
  return ex.length ? String(ex[0]) : '';
}

/** Rule 3: the Try it form of a GET. */
function tryIt(doc, path, op) {
  const params = (op.parameters || []).map((p) => deref(doc, p));
  const inputs = params.map((p) => {
    const id = `try-${op.operationId}-${p.name}`;
    const input = h('input', { id, name: p.name, placeholder: firstExample(p.schema), value: firstExample(p.schema) });
    return { p, input, el: h('div', { class: 'field' }, h('label', { for: id }, `${p.name} (${p.in})`), input) };
  });
  const out = h('pre', { class: 'json', hidden: true });
  const status = h('p', { class: 'form-message', role: 'status' });
  const send = h('button', { type: 'submit', class: 'primary small' }, 'Send');
  const form = h('form', { class: 'inline-form', 'data-try': op.operationId },
    inputs.map((i) => i.el), h('div', { class: 'actions' }, send));
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    let url = path;
    const query = new URLSearchParams();
    for (const { p, input } of inputs) {
      if (p.in === 'path') url = url.replace(`{${p.name}}`, encodeURIComponent(input.value));
      else if (input.value !== '') query.set(p.name, input.value);
    }
    const target = query.toString() ? `${url}?${query}` : url;
    send.disabled = true;
    try {
      const resp = await fetch(target, { cache: 'no-store' });
      const type = resp.headers.get('content-type') || '';
      let text = await resp.text();
      if (type.startsWith('application/json')) {
        try { text = JSON.stringify(JSON.parse(text), null, 2); } catch { /* shown as sent */ }
      }
      status.className = `form-message ${resp.ok ? 'ok' : 'bad'}`;
      setText(status, `GET ${target} → ${resp.status} (${type || 'no content type'})`);
      out.textContent = text.length > MAX_SHOWN ? `${text.slice(0, MAX_SHOWN)}\n… (${text.length} characters)` : text;
      out.hidden = false;
    } catch (err) {
      status.className = 'form-message bad';
      setText(status, `GET ${target} failed: ${err && err.message ? err.message : err}`);
    } finally {
      send.disabled = false;
    }
  });
  return h('div', { class: 'try-it' }, h('h3', {}, 'Try it'), form, status, out);
}

function operation(doc, path, method, op) {
  const m = method.toUpperCase();
  const words = `${m} ${path} ${op.summary || ''} ${op.description || ''}`.toLowerCase();
  const flagged = op['x-rt-undeclared'] ? h('span', { class: 'badge bad' }, 'undeclared') : null;
  return h('details', { class: 'op', id: op.operationId, 'data-method': m, 'data-path': path, 'data-words': words },
    h('summary', {}, h('span', { class: `badge ${METHOD_CLASS[m] || 'info'}` }, m), ' ',
      h('code', {}, path), ' ', h('span', { class: 'muted' }, op.summary || ''), ' ', flagged),
    op.description ? h('p', {}, op.description) : null,
    table(['Parameter', 'In', 'Type', 'Required', 'Meaning'], paramRows(doc, op)),
    table(['Field', 'Body', 'Type', 'Required', 'Meaning'], bodyRows(doc, op)),
    table(['Status', 'When', 'Body'], responseRows(doc, op)),
    linkList(op),
    m === 'GET' ? tryIt(doc, path, op) : null);
}

function render(doc) {
  const groups = new Map();
  for (const [path, item] of Object.entries(doc.paths || {})) {
    for (const [method, op] of Object.entries(item)) {
      const tag = (op.tags && op.tags[0]) || 'other';
      if (!groups.has(tag)) groups.set(tag, []);
      groups.get(tag).push(operation(doc, path, method, op));
    }
  }
  const sections = [...groups].map(([tag, ops]) => h('section', { class: 'panel', 'data-tag': tag },
    h('header', { class: 'panel-head' }, h('h2', {}, tag), h('span', { class: 'panel-sub' }, `${ops.length} operations`)),
    h('div', { class: 'panel-body' }, ops)));
  fill($('#api-ops'), sections);
  const count = [...groups.values()].reduce((n, ops) => n + ops.length, 0);
  fill($('#api-summary'), `${count} operations of `, h('code', {}, doc.info.title),
    ` (version ${doc.info.version}), from `, h('a', { href: '/openapi.json' }, '/openapi.json'), '.');
  applyFilter();
  openHash();
}

/** `/api/docs#<operationId>` opens that operation and scrolls to it. */
function openHash() {
  if (!location.hash) return;
  const target = document.getElementById(decodeURIComponent(location.hash.slice(1)));
  if (target && target.tagName === 'DETAILS') {
    target.open = true;
    target.scrollIntoView({ block: 'start' });
  }
}

function applyFilter() {
  const words = $('#api-filter').value.trim().toLowerCase().split(/\s+/).filter(Boolean);
  let shown = 0;
  for (const op of document.querySelectorAll('details.op')) {
    const hit = words.every((w) => op.dataset.words.includes(w));
    op.hidden = !hit;
    if (hit) shown += 1;
  }
  for (const section of document.querySelectorAll('section[data-tag]')) {
    section.hidden = !section.querySelector('details.op:not([hidden])');
  }
  setText($('#api-count'), words.length ? `${shown} shown` : '');
}

$('#api-filter').addEventListener('input', applyFilter);
window.addEventListener('hashchange', openHash);

(async () => {
  try {
    const resp = await fetch('/openapi.json', { cache: 'no-store' });
    if (!resp.ok) throw new Error(`HTTP ${resp.status}`);
    render(await resp.json());
  } catch (err) {
    fill($('#api-ops'));
    setText($('#api-error'), `Could not read /openapi.json: ${err && err.message ? err.message : err}`);
  }
})();
