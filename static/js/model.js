/**
 * What the page shows, folded from records: a pure port of backend/core/cluster_view.py, plus
 * the rules checked on it (invariants-model.js): together the port of backend/view/page.py.
 *
 * The server folds records with the Python module to hand a joining page a snapshot; the page
 * folds the records that follow with this one. Both must give exactly the same JSON for the
 * same records (tests/js/test_model_contract.py runs both on real replay logs), so this file
 * follows the Python line by line, including Python's quirks: `None` becomes `null` (never
 * `undefined`, which JSON.stringify would drop), `if x:` is Python truthiness (an empty list is
 * false), `d.get(k, default)` uses the default only when the key is absent.
 * No DOM, no globals, only relative imports: node runs this file as it is.
 */
import {checkRules, emptyChecks} from './invariants-model.js';
import {foldLesson} from './lesson-model.js';
import {get, has, isDict, orEmpty, pyStr, truthy} from './py.js';

export const REQUESTS_KEPT = 60;
const STATE_PATH = /^\/brokers\/topics\/([^/]+)\/partitions\/(\d+)\/state$/;
const TOPIC_PATH = /^\/brokers\/topics\/([^/]+)$/;
const BROKER_PATH = /^\/brokers\/ids\/(\d+)$/;
const CONFIG_PATH = /^\/config\/(topics|brokers)\/([^/]+)$/;
const BROKER_STATES = new Map([
  ['started', 'alive'], ['registered', 'alive'], ['resumed', 'alive'], ['crashed', 'crashed'],
  ['paused', 'paused'], ['shutting_down', 'shutting_down'], ['stopped', 'stopped'],
]);

export function emptyView() {
  return {seq: -1, controller: null, controller_epoch: null, brokers: {}, znodes: {},
    partitions: {}, replicas: {}, events: {}, requests: {}, last_fault: null,
    last_refused: null, config: {topics: {}, brokers: {}}, lesson: null, invariants: emptyChecks()};
}

/** Apply `records` (objects, as on the wire) in order to a copy of `view`. */
export function fold(records, view) {
  const out = view == null ? emptyView() : clone(view);
  for (const record of records) apply(out, record);
  return out;
}

/** Apply one record to `view` in place (records must come in seq order); returns the view. */
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
  const detail = orEmpty(r.detail);
  const path = truthy(get(detail, 'path')) ? detail.path : r.subject.slice('znode:'.length);
  if (r.to_state === 'write_refused') {
    view.last_refused = {path, seq: r.seq, write: get(detail, 'write'), note: get(r, 'note'),
      outcome: get(r, 'outcome')};
    if (has(view.znodes, path)) view.znodes[path].refused_seq = r.seq;
    return;
  }
  if (r.to_state === 'deleted') {
    delete view.znodes[path];
  } else {
    view.znodes[path] = {data: get(detail, 'data'), version: get(r, 'zk_version'),
      ephemeral_owner: get(detail, 'ephemeral_owner'), owner_broker: get(r, 'broker_id'),
      czxid: get(detail, 'czxid'), zxid: get(r, 'zxid'), changed_seq: r.seq};
  }
  const data = r.to_state !== 'deleted' ? get(detail, 'data') : null;
  let m;
  if (path === '/controller') {
    view.controller = data === null ? null : {id: get(data, 'brokerid'), epoch: view.controller_epoch};
  } else if (path === '/controller_epoch') {
    if (data !== null) {
      view.controller_epoch = data;
      if (view.controller !== null) view.controller.epoch = data;
    }
  } else if ((m = STATE_PATH.exec(path)) && isDict(data)) {
    Object.assign(partitionOf(view, m[1], Number.parseInt(m[2], 10)), {
      leader: get(data, 'leader'), isr: get(data, 'isr'), leader_epoch: get(data, 'leader_epoch'),
      controller_epoch: get(data, 'controller_epoch'), zk_version: get(r, 'zk_version'), changed_seq: r.seq});
  } else if (STATE_PATH.test(path)) {
    // a partition state znode without a JSON object: nothing to fold (Python's elif chain stops here)
  } else if ((m = TOPIC_PATH.exec(path))) {
    const topic = m[1];
    if (data === null) {
      for (const key of Object.keys(view.partitions)) {
        if (view.partitions[key].topic === topic) delete view.partitions[key];
      }
    } else if (isDict(data)) {
      const adding = orEmpty(get(data, 'adding_replicas'));
      const removing = orEmpty(get(data, 'removing_replicas'));
      for (const [p, replicas] of Object.entries(orEmpty(get(data, 'partitions')))) {
        Object.assign(partitionOf(view, topic, Number.parseInt(p, 10)), {
          replicas, adding: get(adding, p, []), removing: get(removing, p, [])});
      }
    }
  } else if ((m = CONFIG_PATH.exec(path))) {
    // Dynamic configs as kafka-configs.sh writes them: /config/topics/T, /config/brokers/<default>.
    const config = isDict(data) ? get(data, 'config') : null;
    if (isDict(config)) view.config[m[1]][m[2]] = config;
    else delete view.config[m[1]][m[2]];
  } else if ((m = BROKER_PATH.exec(path))) {
    const broker = brokerOf(view, Number.parseInt(m[1], 10));
    broker.registered = data !== null;
    if (data !== null) broker.broker_epoch = get(detail, 'czxid');
  }
}

// -- what the controller and brokers report -----------------------------------------------------
function controller(view, r) {
  const toState = get(r, 'to_state');
  const broker = get(r, 'broker_id');
  if (toState === 'elected') {
    view.controller = {id: broker, epoch: get(r, 'controller_epoch')};
    view.controller_epoch = get(r, 'controller_epoch');
  } else if (toState === 'resigned' && truthy(view.controller) && view.controller.id === broker) {
    view.controller.resigned = true;
  }
}

function partitionRecord(view, r) {
  const outcome = get(r, 'outcome');
  if ((outcome !== null && outcome !== 'ok') || get(r, 'topic') === null) return;
  const partition = partitionOf(view, r.topic, r.partition);
  partition.state = get(r, 'to_state');
  if (r.to_state === 'NonExistentPartition') {
    delete view.partitions[`${r.topic}-${pyStr(r.partition)}`];
    return;
  }
  leaderFields(partition, r);
  if (truthy(get(r, 'note'))) partition.why = r.note;
}

function electionOrIsr(view, r) {
  if (get(r, 'outcome') !== 'ok' || get(r, 'topic') === null) return;
  const partition = partitionOf(view, r.topic, r.partition);
  if (get(r, 'leader') !== null) leaderFields(partition, r);
  partition.why = get(r, 'note');
}

function replica(view, r) {
  if (get(r, 'outcome') !== 'ok') return;
  const key = `${pyStr(r.topic)}-${pyStr(r.partition)}/${pyStr(r.broker_id)}`;
  if (r.to_state === 'NonExistentReplica') {
    delete view.replicas[key];
  } else {
    view.replicas[key] = {state: get(r, 'to_state'), broker: r.broker_id, topic: r.topic, partition: r.partition};
  }
}

function brokerRecord(view, r) {
  const broker = brokerOf(view, r.broker_id);
  const toState = get(r, 'to_state');
  const detail = orEmpty(r.detail);
  if (toState === 'pause_armed') {
    broker.pause_armed = get(detail, 'during');
  } else if (BROKER_STATES.has(toState)) {
    broker.state = BROKER_STATES.get(toState);
    if (toState === 'paused' || toState === 'crashed' || toState === 'stopped') broker.pause_armed = null;
  }
  if (toState === 'registered') {
    broker.broker_epoch = get(detail, 'broker_epoch');
    broker.session = get(detail, 'session_id');
  }
  if (toState === 'session_lost' || toState === 'session_expired') broker.session_expired_seq = r.seq;
}

function controllerEvent(view, r) {
  const owner = pyStr(r.broker_id);
  if (!has(view.events, owner)) view.events[owner] = {state: 'Idle', current: null, queue: []};
  const events = view.events[owner];
  const subject = r.subject;
  const eventId = Number.parseInt(subject.slice(subject.lastIndexOf('#') + 1), 10);
  const name = get(r, 'op');
  const toState = get(r, 'to_state');
  events.queue = events.queue.filter((e) => e.id !== eventId);
  if (toState === 'queued') {
    events.queue.push({id: eventId, name});
  } else if (toState === 'processing') {
    events.current = {id: eventId, name};
    events.state = get(orEmpty(r.detail), 'controller_state', name);
  } else if ((toState === 'processed' || toState === 'failed') && truthy(events.current)
             && events.current.id === eventId) {
    events.current = null;
    events.state = 'Idle';
  }
}

function request(view, r) {
  const key = r.subject.slice('request:'.length);
  if (!has(view.requests, key)) {
    view.requests[key] = {name: get(r, 'op'), from: get(r, 'controller_id'), epoch: get(r, 'controller_epoch'),
      to: get(r, 'broker_id'), sent_seq: r.seq};
  }
  Object.assign(view.requests[key], {state: get(r, 'to_state'), outcome: get(r, 'outcome'), seq: r.seq});
  const keys = Object.keys(view.requests);
  if (keys.length > REQUESTS_KEPT) {
    let oldest = keys[0];
    for (const k of keys) if (view.requests[k].seq < view.requests[oldest].seq) oldest = k;
    delete view.requests[oldest];
  }
}

/** The data plane: log end offsets and high watermarks, acknowledged messages lost. */
function log(view, r) {
  if (get(r, 'topic') === null) return;
  const partition = partitionOf(view, r.topic, r.partition);
  const detail = orEmpty(r.detail);
  const toState = get(r, 'to_state');
  if ((toState === 'fetched' || toState === 'truncated') && get(r, 'broker_id') !== null) {
    const key = `${pyStr(r.topic)}-${pyStr(r.partition)}/${pyStr(r.broker_id)}`;
    if (!has(view.replicas, key)) {
      view.replicas[key] = {state: null, broker: r.broker_id, topic: r.topic, partition: r.partition};
    }
    Object.assign(view.replicas[key], {leo: get(detail, 'leo'), hw: get(detail, 'hw')});
  } else if (toState === 'hw') {
    Object.assign(partition, {hw: get(r, 'offset'), leo: get(detail, 'leo')});
  } else if (toState === 'leader_log') {
    Object.assign(partition, {hw: get(detail, 'hw'), leo: get(detail, 'leo')});
  } else if (toState === 'acknowledged' && get(r, 'offset') !== null) {
    partition.leo = Math.max(get(partition, 'leo') || 0, r.offset + (get(r, 'count') || 0));
  } else if (toState === 'lost') {
    partition.lost = (get(partition, 'lost') || 0) + (get(r, 'count') || 0);
  }
}

function fault(view, r) {
  view.last_fault = {op: get(r, 'op'), outcome: get(r, 'outcome'), note: get(r, 'note'), seq: r.seq};
}

// -- helpers --------------------------------------------------------------------------------------
function partitionOf(view, topic, partition) {
  const key = `${pyStr(topic)}-${pyStr(partition)}`;
  if (!has(view.partitions, key)) {
    view.partitions[key] = {topic, partition, replicas: [], adding: [], removing: [], leader: null,
      isr: [], leader_epoch: null, controller_epoch: null, zk_version: null, state: null,
      why: null, changed_seq: null, hw: null, leo: null, lost: 0};
  }
  return view.partitions[key];
}

function brokerOf(view, brokerId) {
  const key = pyStr(brokerId);
  if (!has(view.brokers, key)) {
    view.brokers[key] = {id: brokerId, state: 'stopped', registered: false, broker_epoch: null, session: null,
      pause_armed: null, session_expired_seq: null};
  }
  return view.brokers[key];
}

function leaderFields(partition, r) {
  for (const field of ['leader', 'isr', 'leader_epoch', 'zk_version']) {
    if (get(r, field) !== null) partition[field] = r[field];
  }
  if (get(r, 'controller_epoch') !== null && r.kind !== 'isr') partition.controller_epoch = r.controller_epoch;
  const replicas = get(orEmpty(r.detail), 'replicas');
  if (truthy(replicas)) partition.replicas = replicas;
}

const HANDLERS = new Map([
  ['zk', zk], ['controller', controller], ['partition', partitionRecord], ['election', electionOrIsr],
  ['isr', electionOrIsr], ['replica', replica], ['broker', brokerRecord],
  ['controller_event', controllerEvent], ['request', request], ['fault', fault], ['log', log],
  ['lesson', foldLesson],
]);
