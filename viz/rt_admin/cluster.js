// Cluster page: a card per node of /api/topology, this node's CPU and memory with sparklines from
// system_stats (last 120 samples, asked incrementally), and the workers summary.

import {
  $, h, fill, reconcile, setText, getJSON, Panel, mountHeader, sparkline, drawSparkline,
  fmtPct, fmtBytes, fmtInt, stateClass, stateLabel, levelClass,
} from '/viz/common/app.js';

const PERIOD = 2000;
const KEEP = 120;

mountHeader('cluster');

// ---- nodes ----------------------------------------------------------------------------------
const grid = $('#node-grid');
const filter = $('#node-filter');
let lastTopology = null;

function nodeCard() {
  const link = h('a', {});
  return h('article', { class: 'card node-card' },
    h('h3', {}, link),
    h('div', { class: 'badges' }),
    h('p', { class: 'meta' }));
}

function updateNodeCard(el, n) {
  const link = el.querySelector('h3 a');
  link.href = `/viz/rt_admin/node.html?node=${encodeURIComponent(n.node_id)}`;
  setText(link, `Node ${n.node_id}`);
  el.dataset.state = n.state;
  el.classList.toggle('dead', n.state === 'dead');
  el.classList.toggle('suspect', n.state === 'probe_failed' || n.state === 'suspected');
  const badges = [h('span', { class: `badge state ${stateClass(n.state)}` }, stateLabel(n.state))];
  if (n.is_leader) badges.push(h('span', { class: 'badge info leader' }, 'leader'));
  if (n.is_self) badges.push(h('span', { class: 'badge self' }, 'this node'));
  const sig = `${n.state}|${n.is_leader}|${n.is_self}`;
  if (el.dataset.sig !== sig) {
    el.dataset.sig = sig;
    fill(el.querySelector('.badges'), badges);
  }
  setText(el.querySelector('.meta'), `IP ${n.ip_address}`);
  el.setAttribute('aria-label', `Node ${n.node_id}, ${stateLabel(n.state)}${n.is_leader ? ', leader' : ''}${n.is_self ? ', this node' : ''}`);
}

function paintNodes() {
  if (!lastTopology) return;
  const nodes = lastTopology.nodes || [];
  const shown = nodes.filter((n) => filter.value === 'all' || (filter.value === 'alive') === (n.state === 'alive'));
  if (!shown.length) {
    fill(grid, h('p', { class: 'empty' }, nodes.length ? 'No node matches the filter.' : 'No nodes in the host table.'));
    return;
  }
  reconcile(grid, shown, (n) => n.node_id, nodeCard, updateNodeCard);
  const counts = {};
  for (const n of nodes) counts[n.state] = (counts[n.state] || 0) + 1;
  const parts = [`${nodes.length} node${nodes.length === 1 ? '' : 's'}`];
  for (const s of ['alive', 'probe_failed', 'suspected', 'dead']) if (counts[s]) parts.push(`${counts[s]} ${stateLabel(s)}`);
  if (lastTopology.leader_node_id !== null && lastTopology.leader_node_id !== undefined) parts.push(`leader: node ${lastTopology.leader_node_id}`);
  setText($('#cluster-summary'), parts.join(' · '));
}

filter.addEventListener('change', paintNodes);

new Panel($('#nodes-panel')).watch(async () => {
  lastTopology = await getJSON('/api/topology');
  paintNodes();
}, { period: PERIOD });

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
