// Node detail: this process's own figures beside its machine's, injected faults, utilization
// of the whole machine, identity, workers, block devices, containers with task predictions.
// Each panel asks /api/nodes/<node>/<query> on its own poll, so a slow or silent peer shows its
// error on each panel (e.g. 503 "monitor 'workers' timed out after 5s") and each recovers alone.

import {
  $, h, fill, setText, getJSON, Panel, mountHeader, sparkline, drawSparkline, param,
  fmtPct, fmtBytes, fmtInt, fmtNum, fmtMBps, fmtUs, stateClass, stateLabel, levelClass,
  renderPredictions, cmpPoolId, kvList, Poller,
} from '/viz/common/app.js';
import { fmtDuration, paintFaultBadge } from '/viz/common/membership.js';

const PERIOD = 2000;
const KEEP = 120;
const node = param('node', 'local');
const api = (q) => `/api/nodes/${encodeURIComponent(node)}/${q}`;

mountHeader('cluster');
const title = node === 'local' || node === 'self' ? 'This node' : `Node ${node}`;
setText($('#node-title'), title);
document.title = `${title} · rtsim`;

// ---- this process and its machine -------------------------------------------------------------
const PROC_FIGS = [
  ['cpu', 'CPU (this process)', (p) => fmtPct(p.cpu_percent)],
  ['rss', 'RSS (this process)', (p) => fmtBytes(p.rss_bytes)],
  ['uptime', 'uptime', (p) => fmtDuration(p.uptime_s)],
  ['incarnation', 'SWIM incarnation', (p) => fmtInt(p.incarnation)],
  ['health', 'SWIM health (0 = healthy)', (p) => fmtInt(p.health_score)],
  ['lag', 'loop lag, last / max', (p) => `${fmtNum(p.loop_lag_ms, 1)} / ${fmtNum(p.loop_lag_max_ms, 1)} ms`],
];
const MACHINE_FIGS = [
  ['machine-cpu', 'CPU (whole machine)', (p) => fmtPct(p.machine && p.machine.cpu_percent)],
  ['machine-mem', 'memory (whole machine)', (p) => fmtPct(p.machine && p.machine.memory_percent)],
];

function figures(list) {
  return h('div', { class: 'summary-nums' }, list.map(([k, label]) => h('div', { 'data-k': k },
    h('span', { class: 'n' }, '—'), h('span', { class: 'l' }, label))));
}

function processSkeleton() {
  return h('div', { class: 'proc-split' },
    h('div', { class: 'proc-box', 'data-scope': 'process' },
      h('h3', {}, 'This process ', h('span', { class: 'muted pid-note' })),
      figures(PROC_FIGS),
      h('dl', { class: 'kv' },
        h('dt', {}, 'PID'), h('dd', { 'data-k': 'pid' }, '—'),
        h('dt', {}, 'Runtime port'), h('dd', { 'data-k': 'port' }, '—'),
        h('dt', {}, 'Dashboard'), h('dd', { 'data-k': 'dashboard' }, '—'))),
    h('div', { class: 'proc-box machine', 'data-scope': 'machine' },
      h('h3', {}, 'Whole machine'),
      figures(MACHINE_FIGS),
      h('p', { class: 'form-note' }, 'Shared by every process on the host: nodes started on one machine show the same machine figures.')));
}

new Panel($('#process-panel')).watch(async () => {
  const p = await getJSON(api('process'));
  const body = $('#process-body');
  if (!body.querySelector('.proc-split')) fill(body, processSkeleton());
  for (const [k, , get] of [...PROC_FIGS, ...MACHINE_FIGS]) setText(body.querySelector(`[data-k="${k}"] .n`), get(p));
  setText(body.querySelector('.pid-note'), `(node ${p.node_id}, pid ${p.pid})`);
  setText(body.querySelector('[data-k="pid"]'), p.pid ?? '—');
  setText(body.querySelector('[data-k="port"]'), p.runtime_port ?? '—');
  const dash = body.querySelector('[data-k="dashboard"]');
  const url = typeof p.dashboard_url === 'string' && /^https?:\/\//.test(p.dashboard_url) ? p.dashboard_url : null;
  if ((dash.dataset.url || '') !== (url || '')) {
    dash.dataset.url = url || '';
    fill(dash, url ? h('a', { href: url }, url) : 'not serving one');
  }
  setText($('#process-sub'), `node ${p.node_id}`);
}, { period: PERIOD });

new Poller(async () => {
  paintFaultBadge($('#fault-badge'), await getJSON(api('faults')),
    node === 'local' || node === 'self' ? 'faults injected at this node' : `faults injected at node ${node}`);
}, { period: PERIOD }).start();

// ---- utilization ---------------------------------------------------------------------------
const samples = [];
let full = true;
let latest = null;
const meters = {};

function meterBox(key, label) {
  const spark = sparkline({ label: `${label}, last ${KEEP} samples` });
  const box = h('div', { class: 'meter-box', id: `${key}-box` },
    h('div', { class: 'label' }, h('span', {}, label), h('span', { class: 'detail' })),
    h('div', { class: 'value' }, '—'),
    h('div', { class: 'bar', role: 'meter', 'aria-label': label, 'aria-valuemin': '0', 'aria-valuemax': '100' }, h('span', {})),
    spark);
  meters[key] = { box, spark };
  return box;
}

function paintMeter(key, pct, detail) {
  const { box } = meters[key];
  setText(box.querySelector('.value'), fmtPct(pct));
  setText(box.querySelector('.detail'), detail);
  const bar = box.querySelector('.bar');
  bar.className = `bar ${levelClass(pct)}`;
  bar.firstElementChild.style.width = `${Math.max(0, Math.min(100, pct || 0))}%`;
  bar.setAttribute('aria-valuenow', String(Math.round(pct || 0)));
}

new Panel($('#util-panel')).watch(async () => {
  const last = samples.length ? samples[samples.length - 1].event_id : null;
  let body;
  try {
    body = await getJSON(api('system_stats'), full || last === null ? {} : { min_event_id: last + 1 });
  } catch (err) {
    full = true;
    throw err;
  }
  if (full) {
    samples.length = 0;
    full = false;
  }
  for (const e of body.entries || []) {
    if (!samples.length || e.event_id > samples[samples.length - 1].event_id) samples.push(e);
  }
  samples.splice(0, Math.max(0, samples.length - KEEP));
  latest = samples[samples.length - 1] || latest;
  if (!latest) return;
  const wrap = $('#util-meters');
  if (!meters.cpu) {
    fill(wrap, meterBox('cpu', 'CPU'), meterBox('ram', 'Memory'));
  }
  if (latest.gpu_count > 0 && !meters.gpu) wrap.append(meterBox('gpu', 'GPU'), meterBox('hbm', 'GPU memory'));
  paintMeter('cpu', latest.cpu_usage_pct, '');
  paintMeter('ram', latest.ram_usage_pct, `${fmtBytes(latest.ram_total_bytes - latest.ram_available_bytes)} of ${fmtBytes(latest.ram_total_bytes)}`);
  drawSparkline(meters.cpu.spark, samples.map((s) => s.cpu_usage_pct));
  drawSparkline(meters.ram.spark, samples.map((s) => s.ram_usage_pct));
  if (meters.gpu) {
    paintMeter('gpu', latest.gpu_usage_pct, `${latest.gpu_count} GPU${latest.gpu_count === 1 ? '' : 's'}`);
    paintMeter('hbm', latest.hbm_usage_pct, `${fmtBytes(latest.hbm_used_bytes)} of ${fmtBytes(latest.hbm_total_bytes)}`);
    drawSparkline(meters.gpu.spark, samples.map((s) => s.gpu_usage_pct));
    drawSparkline(meters.hbm.spark, samples.map((s) => s.hbm_usage_pct));
  }
  setText($('#util-sub'), `sample #${latest.event_id} · ${new Date(latest.wall_time_ns / 1e6).toLocaleTimeString()}`);
  paintIdentity();
}, { period: PERIOD });

// ---- identity: this node's host table entry for the node, plus the sampled identity -----------
let topo = null;
function paintIdentity() {
  const entry = topo ? (topo.nodes || []).find((n) => (node === 'local' || node === 'self' ? n.is_self : String(n.node_id) === String(node))) : null;
  if (!entry && !latest) return;
  const state = entry ? entry.state : null;
  const pairs = [
    ['Node id', entry ? String(entry.node_id) : String(latest.node_id)],
    ['Hostname', latest ? latest.hostname : '—'],
    ['IP address', entry ? entry.ip_address : latest.ip_address],
    ['State', state ? h('span', { class: `badge ${stateClass(state)}` }, stateLabel(state)) : '—'],
    ['Leader', (entry ? entry.is_leader : latest.is_leader) ? 'yes' : 'no'],
    ['Serves this page', entry ? (entry.is_self ? 'yes' : 'no (answers are forwarded)') : '—'],
  ];
  if (latest && latest.gpu_count) pairs.push(['GPUs', String(latest.gpu_count)]);
  const sig = JSON.stringify(pairs.map(([k, v]) => [k, typeof v === 'string' ? v : v.textContent]));
  const body = $('#ident-body');
  if (body.dataset.sig !== sig) {
    body.dataset.sig = sig;
    fill(body, kvList(pairs));
  }
  setText($('#node-note'), entry && entry.state === 'dead' ? 'This node is dead in the host table; its panels cannot be answered.' : '');
}

new Panel($('#ident-panel')).watch(async () => {
  topo = await getJSON('/api/topology');
  const known = (topo.nodes || []).some((n) => String(n.node_id) === String(node));
  if (node !== 'local' && node !== 'self' && !known) throw new Error(`node ${node} is not in this node's host table`);
  paintIdentity();
}, { period: PERIOD });

// ---- workers -----------------------------------------------------------------------------------
const WCOLS = [
  ['Worker', (w) => String(w.worker_id)],
  ['State', (w) => h('span', { class: `badge ${w.is_active ? 'ok' : ''}` }, w.is_running === false ? 'stopped' : w.is_active ? 'active' : 'idle')],
  ['Queued', (w) => fmtInt(w.num_queued_tasks), true],
  ['Blocked', (w) => fmtInt(w.num_blocked_tasks), true],
  ['Periodic', (w) => fmtInt(w.num_periodic_tasks), true],
  ['Retry', (w) => fmtInt(w.num_retry_tasks), true],
  ['Processed', (w) => fmtInt(w.num_tasks_processed), true],
  ['Load (µs)', (w) => fmtNum(w.load, 1), true],
  ['Suspend period', (w) => fmtUs(w.suspend_period_us), true],
  ['Idle iterations', (w) => fmtInt(w.idle_iterations), true],
];

new Panel($('#workers-panel')).watch(async () => {
  const body = await getJSON(api('workers'));
  const ws = body.workers || [];
  setText($('#workers-sub'), `node ${body.node_id} · ${ws.length} workers · ${ws.filter((w) => w.is_active).length} active`);
  const el = $('#workers-body');
  if (!ws.length) {
    fill(el, h('p', { class: 'empty' }, 'No workers.'));
    return;
  }
  let tbody = el.querySelector('tbody');
  if (!tbody) {
    tbody = h('tbody');
    fill(el, h('div', { class: 'table-wrap' }, h('table', { class: 'workers' },
      h('thead', {}, h('tr', {}, WCOLS.map(([label, , num]) => h('th', { scope: 'col', class: num ? 'num' : null }, label)))),
      tbody)));
  }
  fill(tbody, ws.map((w) => h('tr', {}, WCOLS.map(([, get, num]) => h('td', { class: num ? 'num' : null }, get(w))))));
}, { period: PERIOD });

// ---- block devices -------------------------------------------------------------------------------
new Panel($('#bdevs-panel')).watch(async () => {
  const body = await getJSON(api('bdevs'));
  const devs = (body.devices || []).slice().sort((a, b) => cmpPoolId(a.pool_id, b.pool_id));
  const el = $('#bdevs-body');
  if (!devs.length) {
    fill(el, h('p', { class: 'empty' }, 'No block devices on this node.'));
    return;
  }
  const cols = ['Pool', 'Type', 'Used', 'Capacity', 'Read', 'Write', 'Read lat.', 'Write lat.', 'IOPS'];
  fill(el, h('div', { class: 'table-wrap' }, h('table', { class: 'bdevs' },
    h('thead', {}, h('tr', {}, cols.map((c, i) => h('th', { scope: 'col', class: i >= 3 ? 'num' : null }, c)))),
    h('tbody', {}, devs.map((d) => {
      const s = d.stats || {};
      const used = s.total_capacity ? (100 * (s.total_capacity - s.remaining_capacity)) / s.total_capacity : null;
      return h('tr', {},
        h('td', {}, `${s.pool_name ?? '?'} (${d.pool_id})`),
        h('td', {}, s.bdev_type ?? '—'),
        h('td', {}, h('div', { class: `bar ${levelClass(used)}`, role: 'meter', 'aria-label': 'used', 'aria-valuemin': '0', 'aria-valuemax': '100', 'aria-valuenow': String(Math.round(used || 0)), style: 'min-width:80px' }, h('span', { style: `width:${used || 0}%` })), fmtPct(used)),
        h('td', { class: 'num' }, fmtBytes(s.total_capacity)),
        h('td', { class: 'num' }, fmtMBps(s.read_bandwidth_mbps)),
        h('td', { class: 'num' }, fmtMBps(s.write_bandwidth_mbps)),
        h('td', { class: 'num' }, fmtUs(s.read_latency_us)),
        h('td', { class: 'num' }, fmtUs(s.write_latency_us)),
        h('td', { class: 'num' }, fmtNum(s.iops, 0)));
    })))));
}, { period: PERIOD });

// ---- containers with task predictions -----------------------------------------------------------------
new Panel($('#containers-panel')).watch(async () => {
  const body = await getJSON(api('containers'));
  const cs = (body.containers || []).slice().sort((a, b) => cmpPoolId(a.pool_id, b.pool_id));
  const el = $('#containers-body');
  if (!cs.length) fill(el, h('p', { class: 'empty' }, 'No containers.'));
  else {
    fill(el, h('div', { class: 'table-wrap' }, h('table', { class: 'containers' },
      h('thead', {}, h('tr', {}, ['Pool id', 'Pool name', 'Module', 'Container', 'Methods'].map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, cs.map((c) => h('tr', {},
        h('td', {}, String(c.pool_id)), h('td', {}, c.pool_name), h('td', {}, h('code', {}, c.mod_name)),
        h('td', {}, String(c.container_id)), h('td', {}, String((c.methods || []).length))))))));
  }
  renderPredictions($('#predictions-body'), body);
}, { period: PERIOD });
