// The poller: runs a task every `period` ms, one at a time, with backoff and a tab-visibility pause.
//
// 1. A new run starts only after the previous one ended (no overlapping requests).
// 2. After a failure the delay doubles (period·2, ·4, ...) up to `maxDelay`; a success resets it.
// 3. While the tab is hidden nothing is scheduled; showing the tab runs the task at once.
// 4. `now()` asks for a run as soon as possible (after the one in flight, if any).

export class Poller {
  constructor(task, { period = 2000, maxDelay = 15000, onSuccess, onError } = {}) {
    this.task = task;
    this.period = period;
    this.maxDelay = Math.max(maxDelay, period);
    this.onSuccess = onSuccess || (() => {});
    this.onError = onError || (() => {});
    this.failures = 0;
    this.inFlight = false;
    this.pending = false;
    this.running = false;
    this.timer = null;
    this.nextAt = null;
    this.onVisibility = () => {
      if (!this.running) return;
      if (document.hidden) this.clearTimer();
      else if (!this.inFlight) this.schedule(0);
    };
  }

  start() {
    if (this.running) return this;
    this.running = true;
    document.addEventListener('visibilitychange', this.onVisibility);
    this.schedule(0);
    return this;
  }

  stop() {
    this.running = false;
    this.clearTimer();
    document.removeEventListener('visibilitychange', this.onVisibility);
  }

  now() {
    if (!this.running) return;
    if (this.inFlight) this.pending = true;
    else this.schedule(0);
  }

  /** Milliseconds until the next run, or null when none is scheduled. */
  get retryIn() {
    return this.nextAt === null ? null : Math.max(0, this.nextAt - Date.now());
  }

  clearTimer() {
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    this.nextAt = null;
  }

  schedule(ms) {
    this.clearTimer();
    if (!this.running || document.hidden) return;
    this.nextAt = Date.now() + ms;
    this.timer = setTimeout(() => this.run(), ms);
  }

  delay() {
    if (!this.failures) return this.period;
    return Math.min(this.period * 2 ** this.failures, this.maxDelay);
  }

  async run() {
    this.timer = null;
    this.nextAt = null;
    if (this.inFlight || !this.running) return;
    this.inFlight = true;
    let ok = false;
    let error = null;
    try {
      await this.task();
      ok = true;
    } catch (err) {
      error = err;
    }
    this.inFlight = false;
    if (ok) this.failures = 0;
    else this.failures += 1;
    const next = this.pending ? 0 : this.delay();
    this.pending = false;
    this.schedule(next);
    try {
      if (ok) this.onSuccess();
      else this.onError(error, next);
    } catch (err) {
      console.error(err);
    }
  }
}
