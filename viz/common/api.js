// The fetch wrapper: JSON in and out, a timeout on every request, one error type.
//
// Every failure is an ApiError with `kind`:
//   'network'  the node serving this page did not answer at all (down, restarting)
//   'timeout'  no complete answer within the timeout
//   'http'     an HTTP error status; `message` is the body's "error" text when there is one
// Network reachability is announced on window as 'rt:net' events ({detail: {ok, error}}), so the
// header can say "node unreachable" once for the whole page.

export const DEFAULT_TIMEOUT_MS = 8000; // above the 5 s forward timeout, so a peer's 503 arrives

export class ApiError extends Error {
  constructor(message, { status = 0, body = null, kind = 'http', url = '' } = {}) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.body = body;
    this.kind = kind;
    this.url = url;
  }

  /** True when the node serving the page did not answer (as opposed to an error answer). */
  get unreachable() {
    return this.kind === 'network' || this.kind === 'timeout';
  }

  /** Field errors of a validation failure ({ok: false, errors: {...}}), or null. */
  get fieldErrors() {
    const e = this.body && this.body.errors;
    return e && typeof e === 'object' ? e : null;
  }
}

let netOk = true;
function announce(ok, error = null) {
  if (ok === netOk && ok) return;
  netOk = ok;
  window.dispatchEvent(new CustomEvent('rt:net', { detail: { ok, error } }));
}

/** Build a same-origin URL with query parameters (undefined/null values are left out). */
export function apiUrl(path, params) {
  const u = new URL(path, location.origin);
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null) u.searchParams.set(k, String(v));
  }
  return u;
}

/**
 * request('GET', '/api/pools', {params, form, timeout, signal}) -> parsed JSON body.
 * `form` is sent as application/x-www-form-urlencoded.
 */
export async function request(method, path, { params, form, timeout = DEFAULT_TIMEOUT_MS, signal } = {}) {
  const url = apiUrl(path, params);
  const ctl = new AbortController();
  let timedOut = false;
  const timer = setTimeout(() => { timedOut = true; ctl.abort(); }, timeout);
  const onAbort = () => ctl.abort();
  if (signal) signal.addEventListener('abort', onAbort, { once: true });
  const init = { method, signal: ctl.signal, cache: 'no-store', headers: { Accept: 'application/json' } };
  if (form) {
    const body = new URLSearchParams();
    for (const [k, v] of Object.entries(form)) if (v !== undefined && v !== null) body.append(k, String(v));
    init.body = body;
    init.headers['Content-Type'] = 'application/x-www-form-urlencoded';
  }
  let resp;
  let text;
  try {
    resp = await fetch(url, init);
    text = await resp.text();
  } catch (err) {
    if (signal && signal.aborted) throw err;
    const secs = Math.round(timeout / 1000);
    const e = timedOut
      ? new ApiError(`no answer from this node within ${secs} s`, { kind: 'timeout', url: String(url) })
      : new ApiError('this node is unreachable (connection failed)', { kind: 'network', url: String(url) });
    announce(false, e);
    throw e;
  } finally {
    clearTimeout(timer);
    if (signal) signal.removeEventListener('abort', onAbort);
  }
  announce(true);
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  if (!resp.ok) {
    let msg = body && typeof body.error === 'string' ? body.error : `HTTP ${resp.status} ${resp.statusText}`.trim();
    if (body && body.ok === false && body.errors) msg = 'some fields are not valid';
    throw new ApiError(msg, { status: resp.status, body, kind: 'http', url: String(url) });
  }
  if (body === null) {
    throw new ApiError(`answer of ${url.pathname} is not JSON`, { status: resp.status, kind: 'http', url: String(url) });
  }
  return body;
}

export function getJSON(path, params, opts = {}) {
  return request('GET', path, { ...opts, params });
}

export function postForm(path, form, opts = {}) {
  return request('POST', path, { ...opts, form });
}

/** A message for any error thrown by the helpers above (or anything else). */
export function errorText(err) {
  if (err instanceof ApiError) {
    return err.status ? `${err.status}: ${err.message}` : err.message;
  }
  return String(err && err.message ? err.message : err);
}

/** Run async `fn` over `items` with at most `limit` in flight; resolves when all settle. */
export async function mapLimit(items, limit, fn) {
  const queue = items.slice();
  const workers = [];
  for (let i = 0; i < Math.min(limit, queue.length); i += 1) {
    workers.push((async () => {
      while (queue.length) {
        const item = queue.shift();
        try {
          await fn(item);
        } catch {
          // each call reports its own failure
        }
      }
    })());
  }
  await Promise.all(workers);
}
