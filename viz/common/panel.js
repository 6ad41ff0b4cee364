// A panel: a section whose data comes from one poll. It shows its own error, dims stale data
// with "last updated N s ago", and clears both when a later poll succeeds.

import { h } from './dom.js';
import { errorText } from './api.js';
import { fmtAgo, fmtSeconds } from './fmt.js';
import { Poller } from './poller.js';

const live = new Set();
setInterval(() => { for (const p of live) p.tick(); }, 1000);

export class Panel {
  /** `el` is the panel's element; its data goes in `.panel-body` (created when missing). */
  constructor(el) {
    this.el = el;
    this.body = el.querySelector('.panel-body');
    if (!this.body) {
      this.body = h('div', { class: 'panel-body' });
      el.append(this.body);
    }
    this.msg = h('span', { class: 'msg', role: 'alert' });
    this.since = h('span', { class: 'since' });
    this.status = h('div', { class: 'panel-status', hidden: true }, this.msg, this.since);
    this.body.before(this.status);
    this.lastOk = null;
    this.error = null;
    this.poller = null;
  }

  /** Poll `task` every `period` ms, reporting success and failure on this panel. */
  watch(task, { period = 2000, maxDelay } = {}) {
    this.poller = new Poller(task, {
      period,
      maxDelay,
      onSuccess: () => this.ok(),
      onError: (err) => this.fail(err),
    });
    this.poller.start();
    return this.poller;
  }

  ok() {
    this.lastOk = Date.now();
    this.error = null;
    this.el.classList.remove('stale');
    this.status.hidden = true;
    if (this.msg.textContent) this.msg.textContent = '';
    this.since.textContent = '';
    this.el.removeAttribute('aria-busy');
    live.delete(this);
  }

  fail(err) {
    this.error = err;
    const text = errorText(err);
    if (this.msg.textContent !== text) this.msg.textContent = text;
    this.status.hidden = false;
    if (this.lastOk !== null) this.el.classList.add('stale');
    else {
      for (const el of this.body.querySelectorAll('.loading')) {
        el.className = 'empty';
        el.textContent = 'No data yet.';
      }
    }
    this.el.removeAttribute('aria-busy');
    live.add(this);
    this.tick();
  }

  tick() {
    const parts = [];
    parts.push(this.lastOk === null ? 'no data yet' : `showing data last updated ${fmtAgo(Date.now() - this.lastOk)}`);
    const retry = this.poller ? this.poller.retryIn : null;
    if (retry !== null) parts.push(retry < 1000 ? 'retrying now' : `retrying in ${fmtSeconds(retry)}`);
    else if (this.poller && this.poller.inFlight) parts.push('retrying now');
    else if (document.hidden) parts.push('paused while the tab is hidden');
    const text = parts.join(' · ');
    if (this.since.textContent !== text) this.since.textContent = text;
  }
}
