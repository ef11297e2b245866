/**
 * The record store: the record log (record-log.js: order, duplicates, gaps, history) and the
 * playback cursor over it — RaftScope's model apart from its view, with checkpoints to seek.
 *
 * The page shows the *display* view: the fold at the cursor. Live at speed 1 it is the log's
 * head view itself; in slow motion it trails the head one record at a time, at the pace of the
 * speed; paused or scrubbed it stays where it was while records keep arriving. Scrubbing
 * rebuilds the view from the nearest checkpoint; scrubbing before the snapshot first fetches
 * the records from seq 0.
 *
 * Events: 'records' {added, prepended, reset} when the log grows or starts again;
 * 'view' {view, seq, applied, jumped} when the displayed view changes; 'mode' {mode, speed};
 * 'status' {gap, pending, fetching, duplicates}; 'error' {message}. Pure: no DOM, so node
 * tests it (tests/js/records.test.mjs).
 */
import {Emitter} from './emitter.js';
import {apply, clone} from './model.js';
import {CHECKPOINT_EVERY, GAP_WAIT_MS, RecordLog} from './record-log.js';

export const SPEEDS = [1, 1 / 2, 1 / 5, 1 / 10, 1 / 20];
export const MIN_STEP_MS = 25; // slow motion: every record takes at least this long at speed 1 …
export const MAX_GAP_MS = 300; // … plus the real time to the next record, capped (2 s timeouts would drag)
const JUMP = 200; // applying more records than this at once is a jump: views do not animate it

export class RecordStore extends Emitter {
  constructor({fetchRecords = null, timers = globalThis, gapWaitMs = GAP_WAIT_MS,
    checkpointEvery = CHECKPOINT_EVERY, clock = () => Date.now()} = {}) {
    super();
    this._timers = timers;
    this._mode = 'live';
    this._speed = 1;
    this._paced = false;
    this._timer = null;
    this._scrubToken = 0;
    this._log = new RecordLog({fetchRecords, timers, gapWaitMs, checkpointEvery, hooks: {
      beforeAppend: () => {
        // the display is about to fall behind the head: stop sharing the head's view
        if (this._display === this._log.headView && !this._followsHead()) this._display = clone(this._display);
      },
      added: (added) => {
        this._observeClock(added);
        this.emit('records', {added, prepended: false});
        this._pump(added);
      },
      reset: () => this._restart(),
      prepended: (history) => this.emit('records', {added: history, prepended: true}),
      status: (status) => this.emit('status', status),
      error: (message) => this.emit('error', {message}),
    }});
    this._display = this._log.headView;
    this._cursor = -1;
    this._serverOffsetMs = null;
    this._wallClock = clock; // this browser's clock (the tests' fake one)
  }

  // -- reading --------------------------------------------------------------------------------------
  get ready() { return this._log.ready; }
  get seq() { return this._cursor; }
  get head() { return this._log.head; }
  get view() { return this._display; }
  get headView() { return this._log.headView; }
  get mode() { return this._mode; }
  get speed() { return this._speed; }
  get duplicates() { return this._log.duplicates; }
  get first() { return this._log.first; }
  get count() { return this._log.count; }
  get minSeq() { return this._log.minSeq; }
  /** True when the cursor may go back to -1 (earlier records are held or can be fetched). */
  get canFetchHistory() { return this._log.canFetch || this.minSeq === -1; }
  isLive() { return this._mode === 'live'; }
  record(seq) { return this._log.record(seq); }

  /**
   * The moment the display shows, on the server's clock (records' `ts_ms`), for a countdown such
   * as a crashed broker's session (session-countdown.js): {ms, running}. Live at the head it is
   * now, running — this browser's clock corrected by how far the server's is from it (a laptop's
   * clock may be seconds off; see _observeClock); otherwise (paused, scrubbed, a recorded session
   * playing) it is the time of the record shown, standing still; null before any record.
   */
  moment() {
    if (this._followsHead() && !this._paced && this._serverOffsetMs !== null) {
      return {ms: this._wallClock() + this._serverOffsetMs, running: true};
    }
    return {ms: this.record(this._cursor)?.ts_ms ?? null, running: false};
  }

  /** A record reaches us after it was made, so ts_ms - now is at most the clocks' offset: the
   * largest seen is the best estimate (older records filling a gap only come out smaller). */
  _observeClock(added) {
    const newest = added.reduce((m, r) => (Number.isFinite(r.ts_ms) && r.ts_ms > m ? r.ts_ms : m), -Infinity);
    if (newest === -Infinity) return;
    const offset = newest - this._wallClock();
    if (this._serverOffsetMs === null || offset > this._serverOffsetMs) this._serverOffsetMs = offset;
  }
  slice(from, to) { return this._log.slice(from, to); }
  consequences(seq) { return this._log.consequences(seq); }
  status() { return this._log.status(); }

  // -- data in --------------------------------------------------------------------------------------
  /** Where missing records come from: async (since, limit) => {records, next}, or null. */
  setFetcher(fetchRecords) {
    this._log.setFetcher(fetchRecords);
  }

  /** Forget everything (another sandbox): the next snapshot starts the store again. */
  clear() {
    this._log.clear();
    this._cursor = -1;
    this._restart();
  }

  /** Start over from a snapshot {seq, view}. */
  reset(snapshot) {
    this._log.reset(snapshot);
  }

  /** A join's snapshot: the first starts the store; a later one may reveal records to fetch. */
  applySnapshot(snapshot) {
    if (this._log.ready) this._log.applySnapshot(snapshot);
    else this._log.reset(snapshot);
  }

  /** Records from the socket or from HTTP, in any order, possibly twice; `head`: see RecordLog.ingest. */
  ingest(records, head) {
    this._log.ingest(records, head);
  }

  /** Fetch the records before the snapshot; resolves true when the log starts at seq 0. */
  loadHistory() {
    return this._log.loadHistory();
  }

  _restart() {
    this._stopPacing();
    this._scrubToken += 1;
    this._display = this._log.headView;
    this._cursor = this._log.head;
    this._mode = 'live';
    this.emit('records', {added: [], prepended: false, reset: true});
    this._emitView([], true);
    this._emitMode();
  }

  // -- playback -------------------------------------------------------------------------------------
  _followsHead() {
    return this._mode === 'live' && this._instant() && this._cursor === this._log.head;
  }

  /** Playing applies every record at once (a live cluster at 1×), rather than one at a time. */
  _instant() {
    return this._speed >= 1 && !this._paced;
  }

  /**
   * A recorded session: every record is already here, so "play" means watching them go by —
   * paced one at a time at every speed, 1× included — not jumping to the newest.
   */
  setPaced(paced) {
    this._paced = Boolean(paced);
    if (this._paced && this._display === this._log.headView) this._display = clone(this._display);
  }

  get paced() { return this._paced; }

  _pump(added) {
    if (this._mode !== 'live') return;
    if (this._display === this._log.headView) {
      this._cursor = this._log.head;
      this._emitView(added, false);
    } else if (this._instant()) {
      this._advance(this._log.head - this._cursor);
    } else {
      this._schedule();
    }
  }

  _advance(n) {
    const applied = this.slice(this._cursor + 1, Math.min(this._log.head, this._cursor + n));
    for (const r of applied) apply(this._display, r);
    this._cursor += applied.length;
    if (this._followsHead()) this._display = this._log.headView;
    if (applied.length > 0) this._emitView(applied, applied.length > JUMP);
  }

  _schedule() {
    if (this._timer != null || this._mode !== 'live' || this._cursor >= this._log.head) return;
    const next = this.record(this._cursor + 1);
    const previous = this.record(this._cursor);
    const gap = previous && next ? Math.min(MAX_GAP_MS, Math.max(0, next.ts_ms - previous.ts_ms)) : 0;
    this._timer = this._timers.setTimeout(() => {
      this._timer = null;
      if (this._mode !== 'live') return;
      this._advance(1);
      if (this._instant()) this._advance(this._log.head - this._cursor);
      else this._schedule();
    }, (MIN_STEP_MS + gap) / this._speed);
  }

  _stopPacing() {
    if (this._timer != null) this._timers.clearTimeout(this._timer);
    this._timer = null;
  }

  play() {
    this._stopPacing();
    this._scrubToken += 1;
    this._mode = 'live';
    this._emitMode();
    if (this._instant()) this._advance(this._log.head - this._cursor);
    else this._schedule();
  }

  pause() {
    this._stopPacing();
    if (this._mode === 'live') this._mode = 'paused';
    this._emitMode();
  }

  togglePlay() {
    if (this._mode === 'live') this.pause();
    else this.play();
  }

  /** Apply the next record only (pauses first). */
  step() {
    this._stopPacing();
    this._scrubToken += 1;
    if (this._mode === 'live') this._mode = 'paused';
    if (this._display === this._log.headView) this._display = clone(this._display);
    this._advance(1);
    this._emitMode();
  }

  setSpeed(speed) {
    if (!(speed > 0)) return;
    this._speed = speed;
    this._stopPacing();
    if (this._mode === 'live') {
      if (this._instant()) this._advance(this._log.head - this._cursor);
      else if (this._display === this._log.headView) this._display = clone(this._display);
      this._schedule();
    }
    this._emitMode();
  }

  /** Back to now: every received record applied at once, then follow the head. */
  goLive() {
    this._stopPacing();
    this._scrubToken += 1;
    this._mode = 'live';
    if (this._display !== this._log.headView) {
      this._cursor = this._log.head;
      this._display = this._instant() ? this._log.headView : clone(this._log.headView);
      this._emitView([], true);
    }
    this._emitMode();
  }

  /** Show the cluster as it was right after record `seq` (-1: before anything). */
  async scrubTo(seq) {
    this._stopPacing();
    const token = ++this._scrubToken;
    this._mode = 'scrubbed';
    this._emitMode();
    let target = Math.max(-1, Math.min(Math.round(seq), this._log.head));
    if (target < this.minSeq) await this._log.loadHistory();
    if (token !== this._scrubToken) return; // a later scrub, step or play won
    target = Math.max(target, this.minSeq);
    this._display = this._log.viewAt(target);
    this._cursor = target;
    this._emitView([], true);
  }

  _emitView(applied, jumped) {
    this.emit('view', {view: this._display, seq: this._cursor, applied, jumped});
  }

  _emitMode() {
    this.emit('mode', {mode: this._mode, speed: this._speed, seq: this._cursor, head: this._log.head});
  }

  /** Stop every timer (the page is going away, or the sandbox changes). */
  close() {
    this._stopPacing();
    this._log.close();
  }
}
