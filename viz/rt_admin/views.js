// Views page: the observer x subject matrix of /api/cluster/views, live. Every row is what one
// node's own member table says, asked through the node serving the page (each peer in
// parallel, answered within 6 s even when peers hang).
//
// 1. Every cell is a <td> with data-observer, data-subject and data-state (alive, suspect,
//    dead, left, or unknown when its observer did not answer or does not know the subject);
//    it shows the state's word (a letter from COMPACT_AT subjects on, the word kept for screen
//    readers and in the title) and its colour.
// 2. A row whose observer did not answer (or was not asked) is marked `unreachable`, with the
//    error text.
// 3. The banner (class `disagree`) names who disagrees about whom, and the leaders when more
//    than one is seen; when all answering nodes agree it says so (class `agree`).
// 4. The table is rebuilt only when the observers or subjects change; otherwise its cells are
//    updated in place, so a reader's horizontal scroll stays put.

import { $, h, fill, setText, getJSON, Panel, mountHeader } from '/viz/common/app.js';
import { learnNames, memberName } from '/viz/common/names.js';
import {
  viewState, viewLetter, faultBadge, nodeList, viewLegend, fmtClock, viewsPeriod,
} from '/viz/common/membership.js';

const PERIOD = 2000;
const COMPACT_AT = 9; // subjects; from here on a cell shows a letter
const MAX_NAMED = 8; // subjects named in the banner before "and N more"

mountHeader('views');

// ---- who disagrees about whom ------------------------------------------------------------------

function stateOf(body, observer, subject) {
  const view = body.views ? body.views[observer] : null;
  if (!view) return 'unknown';
  return viewState(view[subject]);
}

function answering(body) {
  return (body.observers || []).filter((o) => body.views && body.views[o]);
}

/** {subjects: [{subject, groups: [[state, [observers]]]}], leaders: [[leader, [observers]]]} */
function disagreements(body) {
  const obs = answering(body);
  const subjects = [];
  for (const s of body.subjects || []) {
    const groups = new Map();
    for (const o of obs) {
      const st = stateOf(body, o, s);
      if (!groups.has(st)) groups.set(st, []);
      groups.get(st).push(o);
    }
    if (groups.size > 1) subjects.push({ subject: s, groups: [...groups].sort((a, b) => b[1].length - a[1].length) });
  }
  const leaders = new Map();
  for (const o of obs) {
    const l = body.leaders ? body.leaders[o] ?? null : null;
    if (!leaders.has(l)) leaders.set(l, []);
    leaders.get(l).push(o);
  }
  return { subjects, leaders: [...leaders].sort((a, b) => b[1].length - a[1].length) };
}

function leaderName(l) {
  return l === null ? 'no leader' : memberName(l);
}

function paintBanner(body) {
  const banner = $('#banner');
  const d = disagreements(body);
  const computed = d.subjects.length === 0 && d.leaders.length <= 1;
  const agree = typeof body.agree === 'boolean' ? body.agree : computed;
  const silent = (body.observers || []).filter((o) => !(body.views && body.views[o]));
  const silentNote = silent.length ? ` No view from ${nodeList(silent)}.` : '';
  banner.hidden = false;
  banner.className = `banner ${agree ? 'agree' : 'disagree'}`;
  if (agree) {
    const n = answering(body).length;
    const leader = d.leaders.length ? leaderName(d.leaders[0][0]) : 'no leader';
    const sig = `agree|${n}|${leader}|${silentNote}`;
    if (banner.dataset.sig === sig) return;
    banner.dataset.sig = sig;
    fill(banner, h('strong', {}, 'Views agree. '),
      `${n === 1 ? 'The one answering node sees' : `All ${n} answering nodes see`} the same members; leader: ${leader}.${silentNote}`);
    return;
  }
  const items = [];
  if (d.leaders.length > 1) {
    items.push(h('li', { class: 'leaders' }, h('strong', {}, `${d.leaders.length} leaders seen: `),
      d.leaders.map(([l, os]) => `${leaderName(l)} (by ${nodeList(os)})`).join('; ')));
  }
  for (const { subject, groups } of d.subjects.slice(0, MAX_NAMED)) {
    items.push(h('li', { class: 'about', dataset: { subject } }, h('strong', {}, `About ${memberName(subject)}: `),
      groups.map(([st, os]) => `${nodeList(os)} ${os.length === 1 ? 'sees' : 'see'} it ${st}`).join('; ')));
  }
  if (d.subjects.length > MAX_NAMED) items.push(h('li', {}, `and ${d.subjects.length - MAX_NAMED} more subjects`));
  if (!items.length) items.push(h('li', {}, 'The node serving this page judged the views different.'));
  const sig = JSON.stringify([items.map((li) => li.textContent), silentNote]);
  if (banner.dataset.sig === sig) return;
  banner.dataset.sig = sig;
  fill(banner, h('strong', {}, 'Views differ.'), silentNote ? h('span', {}, silentNote) : null, h('ul', {}, items));
}

// ---- the matrix --------------------------------------------------------------------------------------

let skeleton = '';

function buildTable(body, compact) {
  const subjects = body.subjects || [];
  const head = h('tr', {},
    h('th', { scope: 'col', class: 'corner' }, 'Observer ↓ / subject →'),
    h('th', { scope: 'col', title: 'the leader this observer sees' }, 'Leader'),
    subjects.map((s) => h('th', { scope: 'col', class: 'subj', dataset: { subject: s } }, compact ? memberName(s).replace(/^node /, '') : memberName(s))));
  const rows = (body.observers || []).map((o) => h('tr', { dataset: { observer: o } },
    h('th', { scope: 'row', class: 'obs' },
      h('span', { class: 'obs-name' }, memberName(o)),
      String(o) === String(body.node_id) ? h('span', { class: 'badge self' }, 'this node') : null,
      h('span', { class: 'row-faults' }),
      h('span', { class: 'row-error' })),
    h('td', { class: 'leader-cell' }),
    subjects.map((s) => h('td', { class: 'cell', dataset: { observer: o, subject: s } },
      h('span', { class: 'l', 'aria-hidden': compact ? 'true' : null }),
      compact ? h('span', { class: 'visually-hidden w' }) : null))));
  return h('div', { class: 'table-wrap matrix-wrap' }, h('table', { class: `matrix${compact ? ' compact' : ''}` },
    h('caption', { class: 'visually-hidden' }, 'Rows: observers; columns: subjects; cells: the state the observer holds for the subject'),
    h('thead', {}, head), h('tbody', {}, rows)));
}

function paintRow(tr, body, compact) {
  const o = tr.dataset.observer;
  const view = body.views ? body.views[o] : null;
  const unreachable = !view;
  tr.classList.toggle('unreachable', unreachable);
  const reason = (body.errors && body.errors[o]) || 'unreachable';
  const error = unreachable ? `no answer: ${reason}` : '';
  setText(tr.querySelector('.row-error'), error);
  const faults = body.faults ? body.faults[o] : null;
  const badge = faultBadge(faults);
  const faultBox = tr.querySelector('.row-faults');
  if ((badge ? badge.textContent : '') !== faultBox.textContent) fill(faultBox, badge);
  const leader = unreachable ? '—' : leaderName(body.leaders ? body.leaders[o] ?? null : null);
  setText(tr.querySelector('.leader-cell'), leader);
  for (const td of tr.querySelectorAll('td.cell')) {
    const st = stateOf(body, o, td.dataset.subject);
    if (td.dataset.state !== st) {
      td.dataset.state = st;
      td.className = `cell vs-${st}${td.dataset.subject === o ? ' self-cell' : ''}`;
      td.title = `${memberName(o)} sees ${memberName(td.dataset.subject)} as ${st}`;
    }
    setText(td.querySelector('.l'), compact ? viewLetter(st) : st);
    const w = td.querySelector('.w');
    if (w) setText(w, st);
  }
}

function paintMatrix(body) {
  const compact = (body.subjects || []).length >= COMPACT_AT;
  const sig = `${(body.observers || []).join(',')}|${(body.subjects || []).join(',')}|${compact}`;
  const box = $('#matrix');
  if (!(body.observers || []).length) {
    skeleton = '';
    fill(box, h('p', { class: 'empty' }, 'This node knows no members.'));
    return;
  }
  if (sig !== skeleton) {
    skeleton = sig;
    fill(box, buildTable(body, compact));
    fill($('#matrix-legend'), viewLegend(undefined, { letters: compact }));
  }
  for (const tr of box.querySelectorAll('tbody tr')) paintRow(tr, body, compact);
}

function paintSummary(body) {
  const obs = body.observers || [];
  const answered = answering(body).length;
  const parts = [`asked through node ${body.node_id} at ${fmtClock(Date.now() / 1000)}`,
    `${obs.length} observer${obs.length === 1 ? '' : 's'}`, `${answered} answered`];
  if (answered < obs.length) parts.push(`${obs.length - answered} without a view`);
  parts.push(`every ${viewsPeriod(obs.length) / 1000} s`);
  setText($('#views-summary'), parts.join(' · '));
}

const poller = new Panel($('#matrix-panel')).watch(async () => {
  const body = await getJSON('/api/cluster/views');
  learnNames(body.names);
  paintMatrix(body);
  paintBanner(body);
  paintSummary(body);
  // Every look asks every member: beyond 50 members, look less often (viewsPeriod).
  poller.period = viewsPeriod((body.observers || []).length);
  poller.maxDelay = Math.max(poller.maxDelay, poller.period);
}, { period: PERIOD });
