// Block-device page: one rt_bdev pool at a time (select, ?pool=): capacity meter, bandwidth,
// latency and operation counts from the pool's `stats` monitor, every 3 s.

import {
  $, h, fill, setText, getJSON, Panel, mountHeader, poolPicker, watchPredictions, sparkline,
  drawSparkline, fmtBytes, fmtMBps, fmtUs, fmtInt, fmtNum, fmtPct, levelClass, table,
} from '/viz/common/app.js';

const PERIOD = 3000;
const KEEP = 120;
mountHeader('modules');

const history = { r: [], w: [], iops: [] };
const sparks = {
  r: sparkline({ label: 'read bandwidth trend', max: null }),
  w: sparkline({ label: 'write bandwidth trend', max: null }),
  iops: sparkline({ label: 'IOPS trend', max: null }),
};
$('#rbw').append(sparks.r);
$('#wbw').append(sparks.w);
$('#iops').append(sparks.iops);

const picker = poolPicker($('#pool-select'), {
  mod: 'rt_bdev',
  onChange: () => {
    history.r.length = 0; history.w.length = 0; history.iops.length = 0;
    panel.poller.now();
    preds.paint();
  },
});

function push(arr, v) {
  arr.push(typeof v === 'number' ? v : 0);
  arr.splice(0, Math.max(0, arr.length - KEEP));
}

const panel = new Panel($('#device-panel'));
panel.watch(async () => {
  const pool = await picker.update();
  const none = $('#no-device');
  if (!pool) {
    none.hidden = false;
    none.textContent = picker.selected ? `No block device with pool id ${picker.selected} on this node.` : 'No block-device pools on this node. Create one on the Pools page.';
    $('#device-view').hidden = true;
    setText($('#dev-title'), 'Block device');
    return;
  }
  const body = await getJSON(`/api/pools/${encodeURIComponent(pool.pool_id)}/monitor`, { query: 'stats' });
  const s = Object.values(body.results || {}).find((x) => x && typeof x === 'object');
  if (!s) throw new Error(`pool ${pool.pool_id} gave no stats answer`);
  none.hidden = true;
  $('#device-view').hidden = false;
  setText($('#dev-title'), `${s.pool_name || pool.pool_name} (${pool.pool_id})`);
  document.title = `${s.pool_name || pool.pool_name} · Block device · rtsim`;
  setText($('#dev-type'), s.bdev_type || '?');
  setText($('#dev-sub'), `node ${pool.container_id}`);

  const total = s.total_capacity || 0;
  const used = total - (s.remaining_capacity || 0);
  const pct = total ? (100 * used) / total : 0;
  setText($('#cap-text'), `${fmtBytes(used)} used of ${fmtBytes(total)} · ${fmtBytes(s.remaining_capacity)} free`);
  setText($('#cap-pct'), fmtPct(pct));
  const bar = $('#cap-bar');
  bar.className = `bar big ${levelClass(pct)}`;
  bar.firstElementChild.style.width = `${pct}%`;
  bar.setAttribute('aria-valuenow', String(Math.round(pct)));

  push(history.r, s.read_bandwidth_mbps);
  push(history.w, s.write_bandwidth_mbps);
  push(history.iops, s.iops);
  setText($('#rbw .value'), fmtMBps(s.read_bandwidth_mbps));
  setText($('#rbw .detail'), `latency ${fmtUs(s.read_latency_us)}`);
  setText($('#wbw .value'), fmtMBps(s.write_bandwidth_mbps));
  setText($('#wbw .detail'), `latency ${fmtUs(s.write_latency_us)}`);
  setText($('#iops .value'), fmtNum(s.iops, 0));
  drawSparkline(sparks.r, history.r, { max: Math.max(1, ...history.r) });
  drawSparkline(sparks.w, history.w, { max: Math.max(1, ...history.w) });
  drawSparkline(sparks.iops, history.iops, { max: Math.max(1, ...history.iops) });

  const cols = [{ label: 'Statistic' }, { label: 'Read', num: true }, { label: 'Write', num: true }];
  fill($('#stats-table'), table(cols, [
    ['Bandwidth', fmtMBps(s.read_bandwidth_mbps), fmtMBps(s.write_bandwidth_mbps)],
    ['Latency', fmtUs(s.read_latency_us), fmtUs(s.write_latency_us)],
    ['Operations', fmtInt(s.total_reads), fmtInt(s.total_writes)],
    ['Bytes', fmtBytes(s.total_bytes_read), fmtBytes(s.total_bytes_written)],
  ], 'Device statistics', { stack: false }),
  h('p', { class: 'panel-sub' }, `IOPS ${fmtNum(s.iops, 0)} · capacity ${fmtBytes(total)} (${fmtInt(total)} bytes)`));
}, { period: PERIOD });

const preds = watchPredictions($('#predictions-panel'), $('#predictions-body'), () => picker.selected, PERIOD);
