// Formatting of numbers, sizes, durations and pool ids.

const nf = new Intl.NumberFormat('en-US');

export function isNum(x) {
  return typeof x === 'number' && Number.isFinite(x);
}

export function fmtInt(x) {
  return isNum(x) ? nf.format(Math.round(x)) : '—';
}

export function fmtNum(x, digits = 2) {
  if (!isNum(x)) return '—';
  if (Number.isInteger(x)) return nf.format(x);
  const abs = Math.abs(x);
  if (abs !== 0 && (abs < 0.001 || abs >= 1e7)) return x.toExponential(2);
  return x.toFixed(digits);
}

export function fmtPct(x, digits = 1) {
  return isNum(x) ? `${x.toFixed(digits)} %` : '—';
}

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
export function fmtBytes(x) {
  if (!isNum(x)) return '—';
  let v = x;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < UNITS.length - 1) {
    v /= 1024;
    i += 1;
  }
  return `${i === 0 ? v : v.toFixed(v >= 100 ? 0 : 1)} ${UNITS[i]}`;
}

export function fmtMBps(x) {
  return isNum(x) ? `${fmtNum(x, x >= 100 ? 0 : 1)} MB/s` : '—';
}

export function fmtUs(x) {
  if (!isNum(x)) return '—';
  if (x >= 1e6) return `${(x / 1e6).toFixed(2)} s`;
  if (x >= 1e3) return `${(x / 1e3).toFixed(2)} ms`;
  return `${x.toFixed(x >= 100 ? 0 : 1)} µs`;
}

/** "12 s ago", "3 min ago" from a duration in milliseconds. */
export function fmtAgo(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 90) return `${s} s ago`;
  const m = Math.round(s / 60);
  if (m < 90) return `${m} min ago`;
  return `${Math.round(m / 60)} h ago`;
}

export function fmtSeconds(ms) {
  const s = Math.max(0, Math.ceil(ms / 1000));
  return `${s} s`;
}

/** Any JSON value in one short line. */
export function fmtValue(v) {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  if (typeof v === 'number') return fmtNum(v);
  if (typeof v === 'string') return v;
  if (Array.isArray(v)) return `${v.length} item${v.length === 1 ? '' : 's'}`;
  return JSON.stringify(v);
}

/** "12.3" -> [12, 3]; anything else -> [Infinity, Infinity] so it sorts last. */
export function parsePoolId(id) {
  const m = /^(\d+)\.(\d+)$/.exec(String(id ?? '').trim());
  return m ? [Number(m[1]), Number(m[2])] : [Infinity, Infinity];
}

export function cmpPoolId(a, b) {
  const [am, an] = parsePoolId(a);
  const [bm, bn] = parsePoolId(b);
  return am - bm || an - bn || String(a).localeCompare(String(b));
}

/** The smallest free major >= base (minor 0), given the pool ids in use. */
export function suggestPoolId(poolIds, base = 800) {
  const used = new Set(poolIds.map((id) => parsePoolId(id)[0]));
  let major = base;
  while (used.has(major)) major += 1;
  return `${major}.0`;
}

/** A label like "lead" / "self" from the state of a node: css class for the state badge. */
export function stateClass(state) {
  switch (state) {
    case 'alive': case 'active': return 'ok';
    case 'probe_failed': case 'suspected': case 'suspect': case 'recovering': return 'warn';
    case 'dead': case 'left': case 'faulty': case 'removed': return 'bad';
    default: return '';
  }
}

export function stateLabel(state) {
  return String(state ?? 'unknown').replace(/_/g, ' ');
}

/** Level class of a percentage for meters. */
export function levelClass(pct) {
  if (!isNum(pct)) return '';
  if (pct >= 90) return 'bad';
  if (pct >= 75) return 'warn';
  return '';
}

/** A statistic by its key's convention: *_capacity, *_bytes*, *_space -> bytes; *_mbps; *_us; *_pct. */
export function fmtStat(key, v) {
  if (!isNum(v)) return fmtValue(v);
  const k = String(key);
  if (/(capacity|bytes|_space)/.test(k)) return fmtBytes(v);
  if (k.endsWith('_mbps')) return fmtMBps(v);
  if (k.endsWith('_us')) return fmtUs(v);
  if (k.endsWith('_pct')) return fmtPct(v);
  return fmtNum(v);
}
