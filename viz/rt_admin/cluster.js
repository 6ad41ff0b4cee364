// Cluster page: the members of /api/topology (cards, or a sortable table from 20 members) with
// their incarnation and "since"; this node's membership events (a live panel and a band
// timeline of up to the last 5 minutes, both from /api/events read with its cursor); a badge when
// faults are injected at this node (/api/faults); this node's machine-wide CPU and memory
// with sparklines from system_stats (last 120 samples, asked incrementally); the workers summary.

import {
  $, h, fill, setText, getJSON, Panel, Poller, mountHeader, sparkline, drawSparkline, param, setParam,
  fmtPct, fmtBytes, fmtInt, stateLabel, levelClass,
} from '/viz/common/app.js';
import { MemberList } from '/viz/common/memberlist.js';
import { learnNames } from '/viz/common/names.js';
import { EventFeed, EventsTable, paintTimeline, timelineWindow } from '/viz/common/history.js';
import { memberView, paintFaultBadge, viewLegend } from '/viz/common/membership.js';

const PERIOD = 2000;
const KEEP = 120;
const WINDOW_S = 300; // seconds of history in the band timeline at most

mountHeader('cluster');

// ---- nodes ----------------------------------------------------------------------------------
const filter = $('#node-filter');
const layout = $('#node-layout');
layout.value = ['auto', 'cards', 'table'].includes(param('layout')) ? param('layout') : 'auto';
filter.value = param('show', 'all');
if (!filter.value) filter.value = 'all';
const members = new MemberList($('#node-grid'), {
  layout: layout.value,
  sort: param('sort', 'id'),
  onSort: (key) => setParam('sort', key === 'id' ? null : key),
});
let lastTopology = null;

function paintSummary(nodes) {
  const counts = {};
  for (const n of nodes) counts[memberView(n)] = (counts[memberView(n)] || 0) + 1;
  const parts = [`${nodes.length} node${nodes.length === 1 ? '' : 's'}`];
  for (const s of ['alive', 'suspect', 'dead', 'left']) if (counts[s]) parts.push(`${counts[s]} ${stateLabel(s)}`);
  if (lastTopology.leader_node_id !== null && lastTopology.leader_node_id !== undefined) parts.push(`leader: node ${lastTopology.leader_node_id}`);
  setText($('#cluster-summary'), parts.join(' · '));
}

function paintNodes() {
  if (!lastTopology) return;
  const nodes = lastTopology.nodes || [];
  members.paint(nodes, filter.value);
  paintSummary(nodes);
}

filter.addEventListener('change', () => {
  setParam('show', filter.value === 'all' ? null : filter.value);
  paintNodes();
});
layout.addEventListener('change', () => {
  members.layout = layout.value;
  setParam('layout', layout.value === 'auto' ? null : layout.value);
  paintNodes();
});

new Panel($('#nodes-panel')).watch(async () => {
  lastTopology = await getJSON('/api/topology');
  learnNames(lastTopology.nodes);
  paintNodes();
  paintBands();
}, { period: PERIOD });

// ---- membership events and the band timeline -----------------------------------------------------
const feed = new EventFeed('/api/events', { keep: 2000 });
const eventsTable = new EventsTable($('#events'), { show: 200 });
fill($('#timeline-legend'), viewLegend(undefined, { unknown: 'not yet seen', cls: 'solid' }));

function paintBands() {
  if (!lastTopology || feed.reset) return;
  const list = (lastTopology.nodes || []).map((n) => ({ id: n.node_id, state: n.view ?? n.state }));
  if (!list.length) {
    fill($('#timeline'), h('p', { class: 'empty' }, 'No members.'));
    return;
  }
  const nowS = Date.now() / 1000;
  const windowS = timelineWindow(feed.events, nowS, { max: WINDOW_S });
  paintTimeline($('#timeline'), list, feed.events, { windowS, nowS });
  const span = windowS % 60 === 0 ? `${windowS / 60} min` : `${windowS} s`;
  setText($('#timeline-sub'), `each member's state as this node saw it, last ${span}`);
}

new Panel($('#events-panel')).watch(async () => {
  const added = await feed.poll();
  eventsTable.paint(feed, added);
  paintBands();
}, { period: PERIOD });

// ---- faults injected at this node ----------------------------------------------------------------
new Poller(async () => {
  paintFaultBadge($('#fault-badge'), await getJSON('/api/faults'), 'faults injected at this node');
}, { period: PERIOD }).start();

// ---- this node's utilization -------------------------------------------------------------------
const samples = [];
let full = true; // ask for the whole ring first and after any failure (the node may have restarted)
const cpuSpark = sparkline({ label: 'CPU utilization, last 120 samples' });
const ramSpark = sparkline({ label: 'Memory utilization, last 120 samples' });
$('#cpu-box').append(cpuSpark);
$('#ram-box').append(ramSpark);

function paintMeter(box, pct, detail) {
  setText(box.querySelector('.value'), fmtPct(pct));
  setText(box.querySelector('.detail'), detail);
  const bar = box.querySelector('.bar');
  bar.className = `bar ${levelClass(pct)}`;
  bar.firstElementChild.style.width = `${Math.max(0, Math.min(100, pct || 0))}%`;
  bar.setAttribute('aria-valuenow', String(Math.round(pct || 0)));
}

async function pollStats() {
  const last = samples.length ? samples[samples.length - 1].event_id : null;
  const params = full || last === null ? {} : { min_event_id: last + 1 };
  let body;
  try {
    body = await getJSON('/api/nodes/local/system_stats', params);
  } catch (err) {
    full = true;
    throw err;
  }
  const entries = body.entries || [];
  if (full) {
    samples.length = 0;
    full = false;
  }
  for (const e of entries) {
    if (!samples.length || e.event_id > samples[samples.length - 1].event_id) samples.push(e);
  }
  samples.splice(0, Math.max(0, samples.length - KEEP));
  const cur = samples[samples.length - 1];
  if (!cur) return;
  paintMeter($('#cpu-box'), cur.cpu_usage_pct, `${samples.length} samples`);
  const used = cur.ram_total_bytes - cur.ram_available_bytes;
  paintMeter($('#ram-box'), cur.ram_usage_pct, `${fmtBytes(used)} of ${fmtBytes(cur.ram_total_bytes)}`);
  drawSparkline(cpuSpark, samples.map((s) => s.cpu_usage_pct));
  drawSparkline(ramSpark, samples.map((s) => s.ram_usage_pct));
  setText($('#local-sub'), `node ${cur.node_id} · ${cur.hostname} · ${cur.ip_address}${cur.is_leader ? ' · leader' : ''}`);
}

new Panel($('#local-panel')).watch(pollStats, { period: PERIOD });

// ---- workers summary -------------------------------------------------------------------------
new Panel($('#workers-panel')).watch(async () => {
  const body = await getJSON('/api/nodes/local/workers');
  const ws = body.workers || [];
  const sum = (k) => ws.reduce((acc, w) => acc + (Number(w[k]) || 0), 0);
  const items = [
    ['workers', ws.length],
    ['active', ws.filter((w) => w.is_active).length],
    ['queued', sum('num_queued_tasks')],
    ['blocked', sum('num_blocked_tasks')],
    ['processed', sum('num_tasks_processed')],
  ];
  const box = $('#workers-summary');
  if (box.dataset.ready !== '1') {
    box.dataset.ready = '1';
    fill(box, items.map(([label]) => h('div', { 'data-k': label }, h('span', { class: 'n' }, '—'), h('span', { class: 'l' }, label))));
  }
  for (const [label, value] of items) setText(box.querySelector(`[data-k="${label}"] .n`), fmtInt(value));
}, { period: PERIOD });
