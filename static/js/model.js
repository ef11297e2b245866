/**
 * What the page shows, folded from records: the browser's half of backend/view/cluster_view.py,
 * plus the rules checked on it (invariants-model.js): together the port of backend/view/page.py.
 *
 * The server folds records with the Python module to hand a joining page a snapshot; the page
 * folds the records that follow with this one. Both must give exactly the same JSON for the
 * same records, so Python is the reference and tests/js/test_model_contract.py runs both on
 * real replay logs. Records come normalised (record.js: every field present, null when absent,
 * `detail` an object), so this file reads as JavaScript; the view keeps `null` (never
 * `undefined`, which JSON.stringify would drop) where Python keeps None.
 * No DOM, no globals, only relative imports: node runs this file as it is.
 */
import {checkRules, emptyChecks} from './invariants-model.js';
import {foldLesson} from './lesson-model.js';
import {BROKER_TO_CONTROLLER_REQUESTS, isObject, normalize} from './record.js';

export const REQUESTS_KEPT = 60;
const STATE_PATH = /^\/brokers\/topics\/([^/]+)\/partitions\/(\d+)\/state$/;
const TOPIC_PATH = /^\/brokers\/topics\/([^/]+)$/;
const BROKER_PATH = /^\/brokers\/ids\/(\d+)$/;
const CONFIG_PATH = /^\/config\/(topics|brokers)\/([^/]+)$/;
/** A crashed broker's countdown ends when ZooKeeper expires its session or a new process runs. */
const SESSION_EXPIRY_ENDS = ['session_expired', 'registered', 'started', 'stopped'];
const BROKER_STATES = new Map([
  ['started', 'alive'], ['registered', 'alive'], ['resumed', 'alive'], ['crashed', 'crashed'],
  ['paused', 'paused'], ['shutting_down', 'shutting_down'], ['stopped', 'stopped'],
]);

export function emptyView() {
  return {seq: -1, controller: null, controller_epoch: null, brokers: {}, znodes: {},
    partitions: {}, replicas: {}, events: {}, requests: {}, last_fault: null,
    last_refused: null, config: {topics: {}, brokers: {}}, lesson: null, invariants: emptyChecks(), metrics: {}};
}

/** Apply `records` (objects, as on the wire) in order to a copy of `view`. */
export function fold(records, view) {
  const out = view == null ? emptyView() : clone(view);
  for (const record of records) apply(out, normalize(record));
  return out;
}

/** Apply one normalised record to `view` in place (in seq order); returns the view. */
export function apply(view, r) {
  if (r.seq <= view.seq) return view; // already folded: a reconnecting page may see a record twice
  view.seq = r.seq;
  const handler = HANDLERS.get(r.kind);
  if (handler !== undefined) handler(view, r);
  checkRules(view, r);
  return view;
}

/** A deep copy of a view (plain JSON). */
export function clone(view) {
  return typeof structuredClone === 'function' ? structuredClone(view) : JSON.parse(JSON.stringify(view));
}

// -- ZooKeeper: the truth -----------------------------------------------------------------------
function zk(view, r) {
  const path = r.detail.path || r.subject.slice('znode:'.length);
  if (r.to_state === 'write_refused') {
    // Kept apart from the znode too: a refused delete of a znode already gone has no znode to
    // mark, and a page scrubbed to this seq must still show that ZooKeeper said no.
    view.last_refused = {path, seq: r.seq, write: r.detail.write ?? null, note: r.note, outcome: r.outcome};
    if (path in view.znodes) view.znodes[path].refused_seq = r.seq;
    return;
  }
  if (r.to_state === 'deleted') {
    delete view.znodes[path];
  } else {
    view.znodes[path] = {data: r.detail.data ?? null, version: r.zk_version,
      ephemeral_owner: r.detail.ephemeral_owner ?? null, owner_broker: r.broker_id,
      czxid: r.detail.czxid ?? null, zxid: r.zxid, changed_seq: r.seq};
  }
  const data = r.to_state !== 'deleted' ? r.detail.data ?? null : null;
  let m;
  if (path === '/controller') {
    view.controller = data === null ? null : {id: data.brokerid ?? null, epoch: view.controller_epoch};
  } else if (path === '/controller_epoch') {
    if (data !== null) {
      view.controller_epoch = data;
      if (view.controller !== null) view.controller.epoch = data;
    }
  } else if ((m = STATE_PATH.exec(path))) {
    if (isObject(data)) {
      Object.assign(partitionOf(view, m[1], Number(m[2])), {
        leader: data.leader ?? null, isr: data.isr ?? null, leader_epoch: data.leader_epoch ?? null,
        controller_epoch: data.controller_epoch ?? null, zk_version: r.zk_version, changed_seq: r.seq});
    }
  } else if ((m = TOPIC_PATH.exec(path))) {
    topicZnode(view, m[1], data);
  } else if ((m = CONFIG_PATH.exec(path))) {
    // Dynamic configs as kafka-configs.sh writes them: /config/topics/T, /config/brokers/<default>.
    const config = isObject(data) ? data.config : null;
    if (isObject(config)) view.config[m[1]][m[2]] = config;
    else delete view.config[m[1]][m[2]];
  } else if ((m = BROKER_PATH.exec(path))) {
    const broker = brokerOf(view, Number(m[1]));
    broker.registered = data !== null;
    if (data !== null) broker.broker_epoch = r.detail.czxid ?? null;
  }
}

/** /brokers/topics/T: the assignment, with the replicas a reassignment adds and removes. */
function topicZnode(view, topic, data) {
  if (data === null) {
    for (const [key, partition] of Object.entries(view.partitions)) {
      if (partition.topic === topic) delete view.partitions[key];
    }
  } else if (isObject(data)) {
    const adding = data.adding_replicas || {};
    const removing = data.removing_replicas || {};
    for (const [p, replicas] of Object.entries(data.partitions || {})) {
      Object.assign(partitionOf(view, topic, Number(p)), {replicas, adding: adding[p] ?? [], removing: removing[p] ?? []});
    }
  }
}

// -- what the controller and brokers report -----------------------------------------------------
function controller(view, r) {
  if (r.to_state === 'elected') {
    view.controller = {id: r.broker_id, epoch: r.controller_epoch};
    view.controller_epoch = r.controller_epoch;
  } else if (r.to_state === 'resigned' && view.controller && view.controller.id === r.broker_id) {
    view.controller.resigned = true;
  }
}

function partitionRecord(view, r) {
  if ((r.outcome !== null && r.outcome !== 'ok') || r.topic === null) return;
  const partition = partitionOf(view, r.topic, r.partition);
  partition.state = r.to_state;
  if (r.to_state === 'NonExistentPartition') {
    delete view.partitions[`${r.topic}-${r.partition}`];
    return;
  }
  leaderFields(partition, r);
  if (r.note) partition.why = r.note;
}

function electionOrIsr(view, r) {
  if (r.outcome !== 'ok' || r.topic === null) return;
  const partition = partitionOf(view, r.topic, r.partition);
  if (r.leader !== null) leaderFields(partition, r);
  partition.why = r.note;
}

function replica(view, r) {
  if (r.outcome !== 'ok') return;
  const key = `${r.topic}-${r.partition}/${r.broker_id}`;
  if (r.to_state === 'NonExistentReplica') {
    delete view.replicas[key];
  } else {
    view.replicas[key] = {state: r.to_state, broker: r.broker_id, topic: r.topic, partition: r.partition};
  }
}

function brokerRecord(view, r) {
  const broker = brokerOf(view, r.broker_id);
  if (r.to_state === 'pause_armed') {
    broker.pause_armed = r.detail.during ?? null;
  } else if (BROKER_STATES.has(r.to_state)) {
    broker.state = BROKER_STATES.get(r.to_state);
    if (['paused', 'crashed', 'stopped'].includes(r.to_state)) broker.pause_armed = null;
  }
  if (r.to_state === 'registered') {
    broker.broker_epoch = r.detail.broker_epoch ?? null;
    broker.session = r.detail.session_id ?? null;
  }
  if (r.to_state === 'session_lost' || r.to_state === 'session_expired') broker.session_expired_seq = r.seq;
  if (r.to_state === 'started' && r.detail.session_timeout_ms != null) broker.session_timeout_ms = r.detail.session_timeout_ms;
  if (r.to_state === 'crashed' && r.detail.session_expires_ms != null) {
    broker.session_expiry = {session: r.detail.session_id ?? null, timeout_ms: r.detail.session_timeout_ms ?? null,
      expires_ms: r.detail.session_expires_ms};
  } else if (SESSION_EXPIRY_ENDS.includes(r.to_state)) {
    broker.session_expiry = null;
  }
}

function controllerEvent(view, r) {
  const events = view.events[r.broker_id] ??= {state: 'Idle', current: null, queue: []};
  const eventId = Number(r.subject.slice(r.subject.lastIndexOf('#') + 1));
  const name = r.op;
  events.queue = events.queue.filter((e) => e.id !== eventId);
  if (r.to_state === 'queued') {
    events.queue.push({id: eventId, name});
  } else if (r.to_state === 'processing') {
    events.current = {id: eventId, name};
    events.state = 'controller_state' in r.detail ? r.detail.controller_state : name;
  } else if ((r.to_state === 'processed' || r.to_state === 'failed') && events.current?.id === eventId) {
    events.current = null;
    events.state = 'Idle';
  }
}

function request(view, r) {
  const key = r.subject.slice('request:'.length);
  const [from, to] = BROKER_TO_CONTROLLER_REQUESTS.has(r.op) ? [r.broker_id, r.controller_id]
    : [r.controller_id, r.broker_id];
  view.requests[key] ??= {name: r.op, from, epoch: r.controller_epoch, to, sent_seq: r.seq};
  Object.assign(view.requests[key], {state: r.to_state, outcome: r.outcome, error: r.detail?.error ?? null, seq: r.seq});
  const keys = Object.keys(view.requests);
  if (keys.length > REQUESTS_KEPT) {
    const oldest = keys.reduce((a, b) => (view.requests[b].seq < view.requests[a].seq ? b : a));
    delete view.requests[oldest];
  }
}

/** The data plane: log end offsets and high watermarks, acknowledged messages lost. */
function log(view, r) {
  if (r.topic === null) return;
  const partition = partitionOf(view, r.topic, r.partition);
  const {detail} = r;
  if ((r.to_state === 'fetched' || r.to_state === 'truncated') && r.broker_id !== null) {
    const key = `${r.topic}-${r.partition}/${r.broker_id}`;
    view.replicas[key] ??= {state: null, broker: r.broker_id, topic: r.topic, partition: r.partition};
    Object.assign(view.replicas[key], {leo: detail.leo ?? null, hw: detail.hw ?? null});
  } else if (r.to_state === 'hw') {
    Object.assign(partition, {hw: r.offset, leo: detail.leo ?? null});
  } else if (r.to_state === 'leader_log') {
    Object.assign(partition, {hw: detail.hw ?? null, leo: detail.leo ?? null});
  } else if (r.to_state === 'acknowledged' && r.offset !== null) {
    partition.leo = Math.max(partition.leo || 0, r.offset + (r.count || 0));
  } else if (r.to_state === 'lost') {
    partition.lost = (partition.lost || 0) + (r.count || 0);
  }
}

/** The controller gauges each broker last reported, by Kafka's names (`metric` records). */
function metric(view, r) {
  (view.metrics[String(r.broker_id)] ??= {})[r.op] = r.count;
}

function fault(view, r) {
  view.last_fault = {op: r.op, outcome: r.outcome, note: r.note, seq: r.seq};
}

// -- helpers --------------------------------------------------------------------------------------
function partitionOf(view, topic, partition) {
  return view.partitions[`${topic}-${partition}`] ??= {topic, partition, replicas: [], adding: [], removing: [],
    leader: null, isr: [], leader_epoch: null, controller_epoch: null, zk_version: null, state: null, why: null,
    changed_seq: null, hw: null, leo: null, lost: 0};
}

function brokerOf(view, brokerId) {
  return view.brokers[brokerId] ??= {id: brokerId, state: 'stopped', registered: false, broker_epoch: null,
    session: null, pause_armed: null, session_expired_seq: null, session_expiry: null,
    session_timeout_ms: null};
}

function leaderFields(partition, r) {
  for (const field of ['leader', 'isr', 'leader_epoch', 'zk_version']) {
    if (r[field] !== null) partition[field] = r[field];
  }
  if (r.controller_epoch !== null && r.kind !== 'isr') partition.controller_epoch = r.controller_epoch;
  if (r.detail.replicas?.length) partition.replicas = r.detail.replicas;
}

const HANDLERS = new Map([
  ['zk', zk], ['controller', controller], ['partition', partitionRecord], ['election', electionOrIsr],
  ['isr', electionOrIsr], ['replica', replica], ['broker', brokerRecord],
  ['controller_event', controllerEvent], ['request', request], ['fault', fault], ['log', log],
  ['lesson', foldLesson], ['metric', metric],
]);
