/**
 * PURE the space-time diagram's model: records -> items on lanes, time (seq) running down.
 *
 * One lane per broker, one for ZooKeeper and one for "admin" (operators' tools and scripts).
 * Items, each drawn from the records that make it (`seqs`; `seq` is the one a click selects):
 *  - `zk`: a ZooKeeper write, an arrow from its writer into ZooKeeper's lane, with zxid and
 *    outcome; a write ZooKeeper refused bounces back, marked ✗ with why (`refused`).
 *  - `watch`: a watch notification, an arrow out of ZooKeeper to the broker whose controller
 *    queued the event (from the change that fired it, when the log holds it).
 *  - `event`: the controller's processing of one event, a bar on its lane (name, ControllerState).
 *  - `request`: a request and its response between brokers; a request refused for a stale
 *    epoch bounces back (`outcome` rejected). The name comes from the record, so any request
 *    kind is drawn; BROKER_TO_CONTROLLER lists the ones a broker sends to the controller.
 *  - `mark`: a moment on a lane — a fault, a broker crashing or pausing, a controller elected.
 * Who wrote a znode is not in the observer's record: spacetime-sources.js says where to look (the
 * partition record that wrote the same leader and epoch, the znode's owner, the controller…).
 * Items are kept in order of their first record, so the view finds what is in sight by bisection.
 */
import {BROKER_TO_CONTROLLER_REQUESTS, normalize} from './record.js';
import {LOOK, REFUSED, SESSION_EVENTS, WATCHED, broker, findLast, matches, writerLane} from './spacetime-sources.js';

export {broker};
export const BROKER_TO_CONTROLLER = new Set([...BROKER_TO_CONTROLLER_REQUESTS, 'ControlledShutdown']);
export const ITEM_KINDS = ['zk', 'watch', 'event', 'request', 'mark'];
const LONG = 400; // items longer than this are kept apart, so a query scans few
const STATE = /^\/brokers\/topics\/([^/]+)\/partitions\/(\d+)\/state$/;

const MARKS = {
  broker: {crashed: '✗ crashed', stopped: '■ stopped', paused: '❚❚ paused', resumed: '▶ resumed',
    session_expired: '⌛ session expired', session_lost: '⌛ session lost', registered: '● registered'},
  controller: {elected: '♛ elected', resigned: '♛ resigned', fenced: '✗ fenced'},
};

export class SpacetimeModel {
  constructor() {
    this.clear();
  }

  clear() {
    this.items = []; // short items, ordered by start
    this.long = []; // items longer than LONG records (or still open)
    this.open = new Map(); // id -> an item still waiting for its end (a request in flight, an event processing)
    this.brokers = new Set();
    this.partitions = new Set();
    this.maxSeq = -1;
    this._writes = new Map(); // partition key -> recent writer records (leader, epoch, isr, lane, seq)
    this._unwritten = []; // zk items still waiting for their writer's record
    this._unwatched = []; // watch items still waiting for the change that fired them
    this._changes = []; // recent zk changes: {path, seq}
    this._controller = null; // lane of the active controller
    this._queued = new Map(); // seq of a queued event -> its controller's lane (what a cause_seq points at)
  }

  /** Records in seq order, appended after the ones already added. */
  add(records) {
    for (const r of records) {
      if (r.seq <= this.maxSeq) continue;
      normalize(r); // as the page's records already are (a test may hand raw ones)
      this.maxSeq = r.seq;
      for (const id of [r.broker_id, r.controller_id]) if (Number.isInteger(id) && r.kind !== 'zk') this.brokers.add(id);
      ADD[r.kind]?.call(this, r);
    }
    this._unwritten = this._unwritten.filter((item) => item.to.seq >= this.maxSeq - LOOK);
    this._unwatched = this._unwatched.filter((item) => item.to.seq >= this.maxSeq - LOOK);
    this._changes = this._changes.filter((c) => c.seq >= this.maxSeq - LOOK);
    for (const seq of this._queued.keys()) if (seq < this.maxSeq - 20 * LOOK) this._queued.delete(seq);
  }

  /** Lanes left to right: admin, every broker in id order, ZooKeeper. */
  lanes(extraBrokers = []) {
    const ids = [...new Set([...this.brokers, ...extraBrokers])].sort((a, b) => a - b);
    return ['admin', ...ids.map(broker), 'zk'];
  }

  /** Items that reach into seqs [lo, hi] and pass `filter` ({kind, broker, partition}). */
  query(lo, hi, filter = {}) {
    const out = [];
    let i = bisect(this.items, lo - LONG);
    for (; i < this.items.length && start(this.items[i]) <= hi; i += 1) {
      const item = this.items[i];
      if (end(item) >= lo && passes(item, filter)) out.push(item);
    }
    for (const item of this.long) if (start(item) <= hi && end(item) >= lo && passes(item, filter)) out.push(item);
    return out;
  }

  /** The item a record belongs to (a click on it selects that record, and back). */
  itemOf(seq) {
    return this.query(seq, seq).find((item) => item.seqs.includes(seq)) ?? null;
  }

  _put(item, r) {
    item.seqs = [r.seq];
    item.seq = r.seq;
    if (item.open) {
      this.open.set(item.id, item);
      this.long.push(item);
    } else {
      this.items.push(item);
    }
    for (const p of item.partitions) this.partitions.add(p);
    return item;
  }

  _extend(item, r, to) {
    item.to = to;
    item.seqs.push(r.seq);
    this.open.delete(item.id);
    if (item.open) {
      item.open = false;
      if (end(item) - start(item) <= LONG) {
        this.long.splice(this.long.indexOf(item), 1);
        this.items.splice(bisect(this.items, start(item)), 0, item);
      }
    }
  }
}

// -- records -> items ------------------------------------------------------------------------------
const ADD = {
  zk(r) {
    const detail = r.detail ?? {};
    const path = detail.path ?? r.subject.slice('znode:'.length);
    const refused = r.to_state === 'write_refused';
    const m = STATE.exec(path);
    const item = {id: `zk:${r.seq}`, kind: 'zk', subject: r.subject, path, refused, outcome: r.outcome ?? 'ok',
      zxid: r.zxid ?? null, data: m ? detail.data ?? null : null,
      to: {lane: 'zk', seq: r.seq}, from: {lane: 'admin', seq: r.seq}, partitions: m ? [`${m[1]}-${m[2]}`] : [],
      label: refused ? `✗ ZooKeeper refused the write of ${path}: ${REFUSED[r.outcome] ?? r.outcome}`
        : `${r.to_state} ${path}${r.zxid ? ` · zxid ${r.zxid}` : ''}`,
      why: r.note ?? ''};
    if (refused) { // the writer: named by the record, or (older logs) by the event it was handling
      const lane = r.controller_id !== null ? broker(r.controller_id) : this._queued.get(r.cause_seq);
      item.from = {lane: lane ?? 'admin', seq: r.seq};
    } else {
      if (m && detail.data) item.label += ` · leader ${detail.data.leader} epoch ${detail.data.leader_epoch}`;
      item.from = {lane: writerLane.call(this, r, path, m), seq: r.seq};
      if (item.from.lane === null) {
        item.from.lane = 'admin';
        this._unwritten.push(item);
      }
      this._changes.push({path, seq: r.seq});
      for (let i = this._unwatched.length - 1; i >= 0; i -= 1) {
        const watch = this._unwatched[i];
        if (watch.to.seq >= r.seq - LOOK && WATCHED[watch.op](path)) {
          watch.label = `watch: ${r.to_state} ${path} → ${watch.op}`; // seen by the observer after the watch fired
          this._unwatched.splice(i, 1);
        }
      }
    }
    if (path === '/controller') this._controller = r.to_state === 'deleted' ? null : broker(r.broker_id ?? detail.data?.brokerid);
    this._put(item, r);
  },

  controller(r) {
    if (r.broker_id === null) return;
    if (r.to_state === 'elected') this._controller = broker(r.broker_id);
    if (r.to_state === 'resigned' && this._controller === broker(r.broker_id)) this._controller = null;
    if (r.to_state === 'controlled_shutdown_answered') answerShutdown.call(this, r);
    const label = MARKS.controller[r.to_state];
    if (label) mark.call(this, r, broker(r.broker_id), `${label}${r.controller_epoch ? ` · epoch ${r.controller_epoch}` : ''}`);
  },

  broker(r) {
    const label = MARKS.broker[r.to_state];
    if (label) mark.call(this, r, broker(r.broker_id), label);
  },

  fault(r) {
    const target = r.subject.startsWith('broker:') ? r.subject : null;
    const item = {id: `fault:${r.seq}`, kind: 'mark', subject: r.subject, from: {lane: 'admin', seq: r.seq},
      to: {lane: target ?? 'admin', seq: r.seq},
      label: `${r.op}${r.outcome && r.outcome !== 'ok' ? ` (${r.outcome})` : ''}`, outcome: r.outcome ?? 'ok', partitions: []};
    this._put(item, r);
  },

  controller_event(r) {
    const lane = broker(r.broker_id);
    const id = r.subject;
    if (r.to_state === 'queued') {
      this._queued.set(r.seq, lane);
      queued.call(this, r, lane);
    } else if (r.to_state === 'processing') {
      const state = r.detail?.controller_state ?? r.op;
      this._put({id, kind: 'event', subject: r.subject, op: r.op, from: {lane, seq: r.seq}, to: {lane, seq: r.seq}, open: true,
        label: `${r.op} · ${state}`, outcome: 'processing', partitions: []}, r);
    } else if (this.open.has(id)) {
      const item = this.open.get(id);
      item.outcome = r.to_state;
      this._extend(item, r, {lane, seq: r.seq});
    }
  },

  request(r) {
    const name = r.op ?? r.subject.slice('request:'.length).split('#')[0];
    const id = r.subject;
    const partitions = Object.keys(r.detail?.partitions ?? {});
    const [fromLane, toLane] = BROKER_TO_CONTROLLER.has(name)
      ? [broker(r.broker_id), broker(r.controller_id)] : [broker(r.controller_id), broker(r.broker_id)];
    if (r.to_state === 'sent' || r.to_state === 'undeliverable') {
      const undeliverable = r.to_state === 'undeliverable';
      this._put({id, kind: 'request', subject: r.subject, name, epoch: r.controller_epoch ?? null, from: {lane: fromLane, seq: r.seq},
        to: {lane: toLane, seq: r.seq}, open: !undeliverable, outcome: undeliverable ? 'undeliverable' : 'pending',
        label: `${name} · epoch ${r.controller_epoch ?? '?'}${undeliverable ? ' ✗ not delivered' : ''}`, partitions}, r);
    } else if (this.open.has(id)) {
      const item = this.open.get(id);
      item.outcome = r.to_state;
      if (r.to_state === 'rejected') item.label += ` ✗ ${r.outcome === 'rejected_stale_epoch' ? 'STALE_CONTROLLER_EPOCH' : r.detail?.error ?? r.outcome}`;
      this._extend(item, r, {lane: toLane, seq: r.seq});
    }
  },

  partition(r) { this._noteWrite(r); },
  election(r) { this._noteWrite(r); },
  isr(r) { this._noteWrite(r); },
};

SpacetimeModel.prototype._noteWrite = function noteWrite(r) {
  if (r.outcome !== 'ok' || r.leader === null || r.topic === null) return;
  const key = `${r.topic}-${r.partition}`;
  this.partitions.add(key);
  const lane = r.detail.written_by === 'leader' || r.controller_id === null ? broker(r.broker_id) : broker(r.controller_id);
  const write = {lane, seq: r.seq, leader: r.leader, epoch: r.leader_epoch, isr: String(r.isr ?? '')};
  const recent = (this._writes.get(key) ?? []).filter((w) => w.seq >= r.seq - LOOK);
  recent.push(write);
  this._writes.set(key, recent);
  for (let i = this._unwritten.length - 1; i >= 0; i -= 1) { // ZooKeeper's change was seen first
    const item = this._unwritten[i];
    if (item.partitions[0] === key && item.to.seq >= r.seq - LOOK && item.data && matches(write, item.data)) {
      item.from = {lane, seq: item.to.seq};
      this._unwritten.splice(i, 1);
    }
  }
};

/** A queued event: a watch notification out of ZooKeeper, or a broker's ControlledShutdown request. */
function queued(r, lane) {
  if (r.op === 'ControlledShutdown' && r.detail?.event?.broker_id !== undefined) {
    const from = broker(r.detail.event.broker_id);
    this._put({id: `shutdown:${r.seq}`, kind: 'request', subject: r.subject, name: 'ControlledShutdown', epoch: null,
      from: {lane: from, seq: r.seq}, to: {lane, seq: r.seq}, open: true, outcome: 'pending',
      label: `ControlledShutdown from broker ${r.detail.event.broker_id}`, partitions: [], requester: from}, r);
    return;
  }
  const watched = WATCHED[r.op];
  if (!watched && !SESSION_EVENTS.has(r.op)) return;
  const item = {id: `watch:${r.seq}`, kind: 'watch', subject: r.subject, op: r.op, from: {lane: 'zk', seq: r.seq},
    to: {lane, seq: r.seq},
    label: SESSION_EVENTS.has(r.op) ? `session: ${r.op}` : `watch → ${r.op}`, partitions: []};
  if (watched) {
    const change = findLast(this._changes, (c) => c.seq >= r.seq - LOOK && watched(c.path));
    if (change) {
      item.from = {lane: 'zk', seq: change.seq};
      item.label = `watch: ${change.path} → ${r.op}`;
    } else {
      this._unwatched.push(item);
    }
  }
  this._put(item, r);
}

function answerShutdown(r) {
  const lane = broker(r.broker_id);
  const item = findLast([...this.open.values()], (i) => i.name === 'ControlledShutdown' && i.requester === lane);
  if (item) {
    item.outcome = 'applied';
    this._extend(item, r, {lane: item.to.lane, seq: r.seq});
  }
}

function mark(r, lane, label) {
  this._put({id: `mark:${r.seq}`, kind: 'mark', subject: r.subject, from: {lane, seq: r.seq}, to: {lane, seq: r.seq}, label,
    outcome: r.outcome ?? 'ok', partitions: []}, r);
}

// -- helpers ------------------------------------------------------------------------------------------
export function start(item) {
  return Math.min(item.from.seq, item.to.seq);
}

export function end(item) {
  return item.open ? Infinity : Math.max(item.from.seq, item.to.seq);
}

function bisect(items, seq) {
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (start(items[mid]) < seq) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** The filter of the diagram's controls: item kind, a broker's lane, a partition. */
export function passes(item, {kind = '', broker: b = '', partition = ''} = {}) {
  if (kind && item.kind !== kind) return false;
  if (b !== '' && item.from.lane !== broker(b) && item.to.lane !== broker(b)) return false;
  if (partition && !(item.partitions ?? []).includes(partition)) return false;
  return true;
}
