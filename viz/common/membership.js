// Membership words shared by the Cluster, Views and Node pages: view states, injected faults,
// clock times and "since" figures.
//
// 1. A member's state as one observer sees it is one of VIEW_STATES; the SWIM table's names
//    (probe_failed, suspected) fold into them the way /api/topology's `view` does. Anything
//    else, and a row no observer answered, is 'unknown'.
// 2. Every state is shown with its word (or its letter, with the word in the title), never
//    by colour alone; the colour classes are `vs-<state>` (app.css).
// 3. Times from the API are wall-clock epoch seconds; "ago" figures use the browser's clock.

import { h } from './dom.js';
import { fmtAgo, isNum } from './fmt.js';
import { memberName } from './names.js';

export const VIEW_STATES = ['alive', 'suspect', 'dead', 'left', 'unknown'];
const LETTER = { alive: 'A', suspect: 'S', dead: 'D', left: 'L', unknown: '?' };

/** 'alive' | 'suspect' | 'dead' | 'left' | 'unknown' for any state name of the API. */
export function viewState(state) {
  switch (state) {
    case 'alive': case 'probe_failed': return 'alive';
    case 'suspect': case 'suspected': return 'suspect';
    case 'dead': return 'dead';
    case 'left': return 'left';
    default: return 'unknown';
  }
}

/** The view of a topology entry: its `view` field when the node gives one, else its state. */
export function memberView(n) {
  return viewState(n.view ?? n.state);
}

export function viewRank(state) {
  const i = VIEW_STATES.indexOf(viewState(state));
  return i < 0 ? VIEW_STATES.length : i;
}

export function viewLetter(state) {
  return LETTER[viewState(state)];
}

/** A small legend: one swatch and word per view state. */
export function viewLegend(states = VIEW_STATES, { letters = false, unknown = 'unknown (no view)', cls = '' } = {}) {
  return h('ul', { class: `vs-legend ${cls}`.trim(), 'aria-label': 'Legend' }, states.map((s) => h('li', {},
    h('span', { class: `vs-swatch vs-${s}`, 'aria-hidden': 'true' }, letters ? LETTER[s] : ''),
    s === 'unknown' ? unknown : s)));
}

// ---- injected faults -------------------------------------------------------------------------

function entries(map) {
  return map && typeof map === 'object' ? Object.entries(map).filter(([, v]) => isNum(v) && v > 0) : [];
}

/** True when a faults object (/api/faults, or a row of /api/cluster/views) injects anything. */
export function faultsActive(f) {
  if (!f || typeof f !== 'object') return false;
  if (typeof f.active === 'boolean') return f.active;
  return (Array.isArray(f.blocked) && f.blocked.length > 0) || entries(f.loss).length > 0 || entries(f.delay).length > 0;
}

function toWhom(key) {
  return key === 'all' ? 'all peers' : `node ${key}`;
}

/** "blocks 2, 3 · loss 20 % to all peers · delay 150 ms to node 1 · sends nothing to node 4 ·
 * clock -3600 s x1 · disk m1: full", or '' when none. */
export function faultsText(f) {
  if (!faultsActive(f)) return '';
  const parts = [];
  const blocked = Array.isArray(f.blocked) ? f.blocked : [];
  if (blocked.length) parts.push(`blocks ${blocked.length === 1 ? 'node' : 'nodes'} ${blocked.join(', ')}`);
  for (const [k, v] of entries(f.loss)) parts.push(`loss ${v} % to ${toWhom(k)}`);
  for (const [k, v] of entries(f.delay)) parts.push(`delay ${v} ms to ${toWhom(k)}`);
  const cut = Array.isArray(f.cut) ? f.cut.filter(isNum) : [];
  if (cut.length) parts.push(`sends nothing to ${cut.length === 1 ? 'node' : 'nodes'} ${cut.join(', ')}`);
  const clock = clockText(f.clock);
  if (clock) parts.push(clock);
  const disks = f.disk && typeof f.disk === 'object' ? Object.entries(f.disk) : [];
  for (const [pool, d] of disks) parts.push(`disk ${pool}: ${diskText(d)}`);
  return parts.join(' · ');
}

/** "clock -3600 s x1.5": a clock set off true or off pace; '' for the host's own. */
function clockText(c) {
  if (!c || typeof c !== 'object' || !isNum(c.offset) || !isNum(c.rate)) return '';
  if (c.offset === 0 && c.rate === 1) return '';
  return `clock ${c.offset > 0 ? '+' : ''}${c.offset} s x${c.rate}`;
}

/** "200 ms, 10 % errors, full": what a device's disk fault does. */
function diskText(d) {
  if (!d || typeof d !== 'object') return '?';
  const parts = [];
  if (isNum(d.latency_ms) && d.latency_ms > 0) parts.push(`${d.latency_ms} ms`);
  if (isNum(d.errors) && d.errors > 0) parts.push(`${d.errors} % errors`);
  if (d.full === true) parts.push('full');
  return parts.join(', ') || 'none';
}

/** A badge naming the active faults (class `fault-badge`), or null when there are none. */
export function faultBadge(f, { prefix = 'faults' } = {}) {
  const text = faultsText(f);
  if (!text) return null;
  return h('span', { class: 'badge bad fault-badge', title: `injected faults: ${text}` }, `${prefix}: ${text}`);
}

/** Show a faults object in a badge element kept on the page (hidden when none). */
export function paintFaultBadge(el, f, prefix = 'injected faults') {
  const text = faultsText(f);
  el.hidden = !text;
  const shown = text ? `${prefix}: ${text}` : '';
  if (el.textContent !== shown) el.textContent = shown;
  el.title = shown;
}

// ---- times -------------------------------------------------------------------------------------

/** "14:03:21" (local time) for epoch seconds. */
export function fmtClock(wallSec) {
  if (!isNum(wallSec)) return '—';
  return new Date(wallSec * 1000).toLocaleTimeString([], { hour12: false });
}

/** "12 s ago" for epoch seconds, or '—'. */
export function fmtSince(wallSec, nowMs = Date.now()) {
  return isNum(wallSec) ? fmtAgo(nowMs - wallSec * 1000) : '—';
}

/** "45 s", "12 min 3 s", "3 h 12 min", "2 d 4 h" for a duration in seconds. */
export function fmtDuration(sec) {
  if (!isNum(sec)) return '—';
  const s = Math.max(0, Math.floor(sec));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
}

/** "node 3", "nodes 0, 1" for a list of ids. */
/** How often the view matrix asks (ms): every 2 s up to 50 members, then 2 s more per 50, so
 *  a look costs at most one question per member per 2 s per 50 members (a node of a
 *  1,000-member cluster is asked once in 40 s, not every 2 s). */
export function viewsPeriod(members) {
  return 2000 * Math.max(1, Math.ceil(members / 50));
}

export function nodeList(ids) {
  const list = Array.from(ids);
  const names = list.map((id) => memberName(id));
  if (names.some((name, i) => name !== `node ${list[i]}`)) return names.join(', ');
  return `${list.length === 1 ? 'node' : 'nodes'} ${list.join(', ')}`;
}
