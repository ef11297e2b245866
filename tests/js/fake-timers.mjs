// Timers the tests drive by hand, for the modules that take a `timers` object (record store,
// record log): nothing runs until the test advances the clock.

export class FakeTimers {
  constructor() { this.now = 0; this.queue = new Map(); this.next = 1; }
  setTimeout(fn, ms) { const id = this.next++; this.queue.set(id, {at: this.now + ms, fn}); return id; }
  clearTimeout(id) { this.queue.delete(id); }
  /** Run every timer due within `ms`, in time order, moving the clock to each. */
  advance(ms) {
    const until = this.now + ms;
    for (;;) {
      const due = [...this.queue.entries()].filter(([, t]) => t.at <= until).sort((a, b) => a[1].at - b[1].at);
      if (due.length === 0) break;
      const [id, t] = due[0];
      this.queue.delete(id);
      this.now = t.at;
      t.fn();
    }
    this.now = until;
  }
}
