/**
 * The record log: every record of one sandbox, dense by seq, and the *head* fold over them.
 *
 * It starts from a snapshot {seq, view} the server folded. Records then come from the socket
 * and from HTTP, in any order and possibly twice (a catch-up batch and a live batch can cross):
 * a record at or below the head, or already held, is dropped; one beyond the next expected seq
 * is held until the gap fills; a gap still open after `gapWaitMs` is fetched over HTTP, at once
 * when a rejoin's snapshot shows that records were missed. Checkpoints of the head fold (every
 * `checkpointEvery` records) let the store rebuild the view at any seq quickly; the records
 * before the snapshot can be fetched (loadHistory), after which the log starts at seq 0.
 * Every record is normalised as it comes in (record.js): the rest of the page reads plain fields.
 *
 * The log tells its owner what happens through `hooks`: beforeAppend(), added(records),
 * reset(), prepended(records), status(status), error(message). Pure: no DOM.
 */
import {apply, clone, emptyView} from './model.js';
import {normalize} from './record.js';

export const GAP_WAIT_MS = 1000;
export const CHECKPOINT_EVERY = 250;
export const PAGE = 1000;
const GIVE_UP_AFTER = 3;

export class RecordLog {
  constructor({fetchRecords = null, timers = globalThis, gapWaitMs = GAP_WAIT_MS,
    checkpointEvery = CHECKPOINT_EVERY, hooks = {}} = {}) {
    this._fetchRecords = fetchRecords; // async (since, limit) => {records, next}
    this._timers = timers;
    this._gapWaitMs = gapWaitMs;
    this._checkpointEvery = checkpointEvery;
    this._hooks = hooks;
    this.clear();
  }

  /** Forget everything; the next snapshot starts the log again. */
  clear() {
    this._clearGapTimer();
    this._ready = false;
    this._log = []; // contiguous: _log[i].seq === this._first + i
    this._first = 0;
    this._head = -1;
    this._headView = emptyView();
    this._checkpoints = [{seq: -1, view: emptyView()}];
    this._pending = new Map();
    this._mustReach = -1; // a rejoin's snapshot seq, not reached yet
    this._lastSnapshot = null;
    this._causes = new Map();
    this._duplicates = 0;
    this._failures = 0;
    this._fetching = false;
  }

  get ready() { return this._ready; }
  get head() { return this._head; }
  get headView() { return this._headView; }
  get first() { return this._first; }
  get count() { return this._log.length; }
  get duplicates() { return this._duplicates; }
  /** The lowest seq whose view can be built now (-1: the empty cluster before seq 0). */
  get minSeq() { return this._checkpoints[0].seq; }
  get canFetch() { return this._fetchRecords !== null; }

  setFetcher(fetchRecords) {
    this._fetchRecords = fetchRecords;
  }

  record(seq) {
    return this._log[seq - this._first];
  }

  /** Records with from <= seq <= to that are held (a copy). */
  slice(from, to) {
    return this._log.slice(Math.max(0, from - this._first), Math.max(0, to - this._first + 1));
  }

  /** Seqs of the records whose cause_seq is `seq`: what it led to. */
  consequences(seq) {
    return this._causes.get(seq) ?? [];
  }

  status() {
    return {gap: this._missing(), pending: this._pending.size, fetching: this._fetching, duplicates: this._duplicates};
  }

  /** The view right after record `seq` (minSeq <= seq <= head): a checkpoint plus a short fold. */
  viewAt(seq) {
    let lo = 0;
    let hi = this._checkpoints.length - 1;
    while (lo < hi) { // the last checkpoint at or before seq
      const mid = (lo + hi + 1) >> 1;
      if (this._checkpoints[mid].seq <= seq) lo = mid;
      else hi = mid - 1;
    }
    const checkpoint = this._checkpoints[lo];
    const view = clone(checkpoint.view);
    for (const r of this.slice(checkpoint.seq + 1, seq)) apply(view, r);
    return view;
  }

  // -- data in --------------------------------------------------------------------------------------
  /** Start over from a snapshot (a new sandbox, the first join, or a gap that cannot be filled). */
  reset(snapshot) {
    const held = this._ready ? new Map() : this._pending; // records that came before the first snapshot
    this.clear();
    this._ready = true;
    this._lastSnapshot = snapshot;
    this._head = snapshot.seq;
    this._first = snapshot.seq + 1;
    this._headView = clone(snapshot.view);
    this._checkpoints = [{seq: snapshot.seq, view: clone(snapshot.view)}];
    for (const [seq, r] of held) if (seq > this._head) this._pending.set(seq, r);
    this._hooks.reset?.();
    this._drain();
  }

  /** A rejoin's snapshot: if it is ahead of the head, the records in between are fetched now. */
  applySnapshot(snapshot) {
    this._lastSnapshot = snapshot;
    if (snapshot.seq > this._head) {
      this._mustReach = Math.max(this._mustReach, snapshot.seq);
      this._checkGap(true);
    }
  }

  /**
   * Records from the socket or from HTTP, in any order, possibly twice. `head` (optional) is the
   * newest seq the sender sent: records up to it that did not come are fetched.
   */
  ingest(records, head) {
    if (Number.isInteger(head)) this._mustReach = Math.max(this._mustReach, head);
    for (const r of records) {
      if (!Number.isInteger(r?.seq)) continue;
      if ((this._ready && r.seq <= this._head) || this._pending.has(r.seq)) {
        this._duplicates += 1;
        continue;
      }
      this._pending.set(r.seq, normalize(r));
    }
    if (this._ready) this._drain();
  }

  _drain() {
    const added = [];
    if (this._pending.has(this._head + 1)) this._hooks.beforeAppend?.();
    while (this._pending.has(this._head + 1)) {
      const r = this._pending.get(this._head + 1);
      this._pending.delete(r.seq);
      this._append(r);
      added.push(r);
    }
    if (added.length > 0) {
      this._failures = 0;
      this._hooks.added?.(added);
    }
    this._checkGap(false);
  }

  _append(r) {
    this._log.push(r);
    this._head = r.seq;
    apply(this._headView, r);
    this._index(r);
    const last = this._checkpoints[this._checkpoints.length - 1].seq;
    if (r.seq - last >= this._checkpointEvery) this._checkpoints.push({seq: r.seq, view: clone(this._headView)});
  }

  _index(r) {
    if (!Number.isInteger(r.cause_seq)) return;
    if (!this._causes.has(r.cause_seq)) this._causes.set(r.cause_seq, []);
    const list = this._causes.get(r.cause_seq);
    list.push(r.seq);
    if (list.length > 1 && list[list.length - 2] > r.seq) list.sort((a, b) => a - b);
  }

  // -- gaps -----------------------------------------------------------------------------------------
  /** The range of seqs known to be missing: {from, to}, or null. */
  _missing() {
    if (!this._ready) return null;
    let to = this._mustReach;
    if (this._pending.size > 0) to = Math.max(to, Math.min(...this._pending.keys()) - 1);
    return to > this._head ? {from: this._head + 1, to} : null;
  }

  _checkGap(now) {
    if (this._missing() === null) {
      this._clearGapTimer();
      this._failures = 0;
    } else if (!this._fetching && (this._gapTimer == null || (now && !this._gapNow))) {
      this._clearGapTimer(); // a rejoin's snapshot shows records are missing: do not wait for them
      this._gapNow = now;
      this._gapTimer = this._timers.setTimeout(() => this._fillGap(), now ? 0 : this._gapWaitMs);
    }
    this._hooks.status?.(this.status());
  }

  async _fillGap() {
    this._gapTimer = null;
    this._gapNow = false;
    const missing = this._missing();
    if (missing === null) return;
    if (this._fetchRecords === null) {
      this._hooks.error?.(`records ${missing.from}–${missing.to} are missing and cannot be fetched`);
      return;
    }
    this._fetching = true;
    const before = this._head;
    try {
      const answer = await this._fetchRecords(missing.from, Math.min(PAGE, missing.to - missing.from + 1));
      this.ingest(answer.records ?? []); // still marked as fetching: no second timer meanwhile
      this._fetching = false;
      if (this._head === before) this._failures += 1;
    } catch (error) {
      this._fetching = false;
      this._failures += 1;
      this._hooks.error?.(`could not fetch missing records ${missing.from}–${missing.to}: ${error.message}`);
    }
    if (this._failures >= GIVE_UP_AFTER) this._giveUp(missing);
    else this._checkGap(this._head !== before);
  }

  /** The server cannot give us the missing records: start again from its newest snapshot. */
  _giveUp(missing) {
    const snapshot = this._lastSnapshot;
    this._hooks.error?.(`records ${missing.from}–${missing.to} could not be fetched; `
      + 'the timeline starts again from the server\'s snapshot');
    if (snapshot !== null && snapshot.seq > this._head) {
      const held = [...this._pending.values()];
      this.reset(snapshot);
      this.ingest(held);
    } else {
      this._failures = 0;
      this._mustReach = this._head;
      this._checkGap(false);
    }
  }

  _clearGapTimer() {
    if (this._gapTimer != null) this._timers.clearTimeout(this._gapTimer);
    this._gapTimer = null;
    this._gapNow = false;
  }

  // -- history --------------------------------------------------------------------------------------
  /** Fetch the records before the snapshot (from seq 0); true when the log then starts at 0. */
  async loadHistory() {
    const base = this._checkpoints[0];
    if (base.seq < 0) return true;
    if (this._fetchRecords === null) return false;
    this._historyPromise ??= this._fetchHistory(base).finally(() => { this._historyPromise = null; });
    return this._historyPromise;
  }

  async _fetchHistory(base) {
    const history = [];
    try {
      while (history.length <= base.seq) {
        const since = history.length;
        const answer = await this._fetchRecords(since, Math.min(PAGE, base.seq + 1 - since));
        const before = history.length;
        for (const r of (answer.records ?? []).filter((x) => x.seq <= base.seq).sort((a, b) => a.seq - b.seq)) {
          if (r.seq === history.length) history.push(normalize(r));
        }
        if (history.length === before) throw new Error(`the server has no records from seq ${since}`);
      }
    } catch (error) {
      this._hooks.error?.(`could not fetch earlier records: ${error.message}`);
      return false;
    }
    if (this._checkpoints[0] !== base) return true; // a reset happened meanwhile
    const view = emptyView();
    const checkpoints = [{seq: -1, view: emptyView()}];
    for (const r of history) {
      apply(view, r);
      if (r.seq - checkpoints[checkpoints.length - 1].seq >= this._checkpointEvery) {
        checkpoints.push({seq: r.seq, view: clone(view)});
      }
    }
    if (JSON.stringify(sortKeys(view)) !== JSON.stringify(sortKeys(base.view))) {
      this._hooks.error?.(`the page and the server disagree: the records up to seq ${base.seq} do not fold to `
        + 'the server\'s snapshot (is this page older than the server? reload it)');
    }
    this._checkpoints = [...checkpoints, ...this._checkpoints];
    this._log = [...history, ...this._log];
    this._first = 0;
    for (const r of history) this._index(r);
    this._hooks.prepended?.(history);
    return true;
  }

  close() {
    this._clearGapTimer();
  }
}

function sortKeys(value) {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.keys(value).sort().map((k) => [k, sortKeys(value[k])]));
}
