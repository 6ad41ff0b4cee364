// Membership history of the node serving the page: the event feed read with its cursor, the
// recent-events table and the band timeline drawn from it.
//
// 1. EventFeed asks `/api/events?after=<next>` and keeps the newest `keep` events in memory
//    (oldest first). A first read, a read after a failure, and a read whose `boot` differs from
//    the last one (the node restarted between polls: its seq started again from 1) start again
//    from after=0 and page until the ring is read.
// 2. The events table shows the newest `show` events, newest first; rows are added at the
//    top, never rebuilt, so a reader's scroll position stays.
// 3. The timeline is one band per member over the last `windowS` seconds (the history held,
//    1 to 5 minutes: timelineWindow), coloured by the state this node saw: before a member's first event in the window, its `old` state;
//    with no event in the window, its state now (from /api/topology).

import { h, fill, setText } from './dom.js';
import { getJSON } from './api.js';
import { viewState, fmtClock } from './membership.js';
import { memberName } from './names.js';

const PAGE = 2000; // events per request while catching up
const ROUNDS = 5; // requests per poll at most (the ring holds at least 10,000)

export class EventFeed {
  constructor(path = '/api/events', { keep = 2000 } = {}) {
    this.path = path;
    this.keep = keep;
    this.events = [];
    this.after = 0;
    this.dropped = 0;
    this.reset = true;
    this.boot = null; // the node process the cursor belongs to
    this.generation = 0; // bumped on every reset, so views know to rebuild
  }

  /** One poll: new events (oldest first) appended; returns the events added. */
  async poll() {
    let added = [];
    try {
      for (let round = 0; round < ROUNDS; round += 1) {
        const after = this.reset ? 0 : this.after;
        const body = await getJSON(this.path, { after, limit: PAGE });
        if (!this.reset && body.boot !== this.boot) { // a restart: this cursor means nothing now
          this.reset = true;
          continue;
        }
        this.boot = body.boot;
        if (this.reset) {
          this.events = [];
          this.dropped = 0;
          this.reset = false;
          this.generation += 1;
          added = [];
        }
        const last = this.events.length ? this.events[this.events.length - 1].seq : 0;
        const fresh = (body.events || []).filter((e) => e.seq > last);
        this.events.push(...fresh);
        added.push(...fresh);
        this.dropped += Number(body.dropped) || 0;
        if (typeof body.next === 'number') this.after = body.next;
        if ((body.events || []).length < PAGE) break;
      }
    } catch (err) {
      this.reset = true;
      throw err;
    }
    if (this.events.length > this.keep) this.events.splice(0, this.events.length - this.keep);
    if (added.length > this.keep) added = added.slice(-this.keep);
    return added;
  }
}

// ---- the recent-events table --------------------------------------------------------------------

function eventRow(e) {
  const now = viewState(e.new);
  return h('tr', { class: `ev vs-row-${now}`, dataset: { seq: e.seq, observer: e.observer, subject: e.subject, old: e.old === null || e.old === undefined ? 'none' : viewState(e.old), new: now } },
    h('td', { class: 'ev-time', 'data-label': 'Time', title: new Date(e.wall * 1000).toString() }, fmtClock(e.wall)),
    h('td', { class: 'ev-observer', 'data-label': 'Observer' }, memberName(e.observer)),
    h('td', { class: 'ev-subject', 'data-label': 'Subject' }, memberName(e.subject)),
    h('td', { class: 'ev-change', 'data-label': 'Change' },
      h('span', { class: `vs-text vs-${e.old === null || e.old === undefined ? 'unknown' : viewState(e.old)}` }, e.old ?? 'new'),
      h('span', { class: 'arrow', 'aria-label': 'to' }, ' → '),
      h('span', { class: `vs-text vs-${now}` }, e.new),
      e.incarnation !== undefined ? h('span', { class: 'muted inc' }, ` inc ${e.incarnation}`) : null),
    h('td', { class: 'ev-cause', 'data-label': 'Cause' }, e.cause || '—'));
}

/** The events panel body: a table of the newest `show` events of a feed, newest first. */
export class EventsTable {
  constructor(el, { show = 200 } = {}) {
    this.el = el;
    this.show = show;
    this.generation = -1;
    this.tbody = h('tbody');
    this.note = h('p', { class: 'panel-sub ev-note' });
    this.table = h('div', { class: 'table-wrap events-scroll' }, h('table', { class: 'events' },
      h('caption', { class: 'visually-hidden' }, 'Membership changes this node saw, newest first'),
      h('thead', {}, h('tr', {}, ['Time', 'Observer', 'Subject', 'Old → new', 'Cause'].map((c) => h('th', { scope: 'col' }, c)))),
      this.tbody));
  }

  paint(feed, added) {
    if (this.generation !== feed.generation) {
      this.generation = feed.generation;
      this.tbody.replaceChildren();
      added = feed.events;
    }
    const rows = added.slice(-this.show).map(eventRow).reverse();
    if (rows.length) this.tbody.prepend(...rows);
    while (this.tbody.children.length > this.show) this.tbody.lastElementChild.remove();
    if (!feed.events.length) {
      if (this.el.dataset.mode !== 'empty') {
        this.el.dataset.mode = 'empty';
        fill(this.el, h('p', { class: 'empty' }, 'No membership changes seen yet.'));
      }
      return;
    }
    if (this.el.dataset.mode !== 'table') {
      this.el.dataset.mode = 'table';
      fill(this.el, this.note, this.table);
    }
    const n = this.tbody.children.length;
    const parts = [`newest ${n} of ${feed.events.length} held`];
    if (feed.dropped) parts.push(`${feed.dropped} older events dropped by the node's ring`);
    setText(this.note, parts.join(' · '));
  }
}

// ---- the band timeline --------------------------------------------------------------------------

/** Segments [{from, to, state}] of one member between t0 and t1 (epoch seconds). */
export function bandSegments(events, current, t0, t1) {
  let state = current;
  let i = 0;
  while (i < events.length && events[i].wall <= t0) i += 1;
  if (i > 0) state = viewState(events[i - 1].new);
  else if (events.length) state = events[0].old === null || events[0].old === undefined ? 'unknown' : viewState(events[0].old);
  const segs = [];
  let from = t0;
  for (; i < events.length; i += 1) {
    const e = events[i];
    const at = Math.min(Math.max(e.wall, t0), t1);
    if (at > from) segs.push({ from, to: at, state });
    state = viewState(e.new);
    from = at;
  }
  if (t1 > from) segs.push({ from, to: t1, state });
  const merged = [];
  for (const s of segs) {
    const prev = merged[merged.length - 1];
    if (prev && prev.state === s.state) prev.to = s.to;
    else merged.push({ ...s });
  }
  return merged;
}

const W = 1000; // viewBox width of a band

function bandSvg(id, segs, t0, t1) {
  const span = t1 - t0;
  const x = (t) => ((t - t0) / span) * W;
  const said = segs.map((s) => `${s.state} from ${fmtClock(s.from)}`).join(', ');
  const svg = h('svg:svg', {
    class: 'band', viewBox: `0 0 ${W} 10`, preserveAspectRatio: 'none', role: 'img',
    'aria-label': `${memberName(id)}: ${said}`, 'data-subject': id,
  });
  for (const s of segs) {
    const rect = h('svg:rect', {
      class: `vs-fill-${s.state}`, x: x(s.from).toFixed(1), y: 0, width: Math.max(0.5, x(s.to) - x(s.from)).toFixed(1), height: 10, 'data-state': s.state,
    });
    rect.append(h('svg:title', {}, `${memberName(id)}: ${s.state}, ${fmtClock(s.from)} – ${fmtClock(s.to)}`));
    svg.append(rect);
  }
  return svg;
}

/** The window to draw (seconds): the history held, at least `min`, at most `max`, in 30 s steps. */
export function timelineWindow(events, nowS, { min = 60, max = 300 } = {}) {
  const held = events.length ? nowS - events[0].wall : 0;
  return Math.min(max, Math.max(min, Math.ceil((held + 5) / 30) * 30));
}

function ago(s) {
  if (s === 0) return 'now';
  return s % 60 === 0 ? `−${s / 60} min` : `−${s} s`;
}

/** Draw one band per member of `members` ([{id, state}]) over the last `windowS` seconds. */
export function paintTimeline(el, members, events, { windowS = 300, nowS = Date.now() / 1000 } = {}) {
  const t1 = Math.max(nowS, events.length ? events[events.length - 1].wall : 0);
  const t0 = t1 - windowS;
  const bySubject = new Map();
  for (const e of events) {
    if (!bySubject.has(e.subject)) bySubject.set(e.subject, []);
    bySubject.get(e.subject).push(e);
  }
  const rows = members.map((m) => h('div', { class: 'band-row', dataset: { subject: m.id } },
    h('span', { class: 'band-label' }, memberName(m.id)),
    bandSvg(m.id, bandSegments(bySubject.get(m.id) || [], viewState(m.state), t0, t1), t0, t1)));
  const step = windowS / 5;
  const ticks = [];
  for (let i = 5; i >= 0; i -= 1) ticks.push(h('span', {}, ago(Math.round(i * step))));
  el.dataset.window = String(windowS);
  fill(el, rows, h('div', { class: 'band-row band-axis', 'aria-hidden': 'true' }, h('span', { class: 'band-label' }), h('div', { class: 'ticks' }, ticks)));
}
