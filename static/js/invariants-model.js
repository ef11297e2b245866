/**
 * PURE the rules Kafka's controller keeps, checked on every record: a line-by-line port of
 * backend/view/invariants.py (and its catalogue backend/view/rules.py); the checks live by
 * concern in invariants/controller-rules.js and invariants/partition-rules.js.
 *
 * `checkRules(view, r)` runs right after model.js has folded the record, reads what the page
 * shows (partitions, brokers, the controller) and keeps `view.invariants`. Being part of the
 * view, it is in the server's snapshot, rebuilt by a scrub and followed by a class.
 * tests/js/test_invariants_contract.py checks this file and the Python give the same state
 * after every record of real logs (and of logs where each rule breaks). Records come
 * normalised (record.js), so it reads plain properties; the view keeps null, never undefined.
 */
import * as ctl from './invariants/controller-rules.js';
import * as parts from './invariants/partition-rules.js';
import {RULES} from './rules-catalogue.js';

const STATE_PATH = /^\/brokers\/topics\/([^/]+)\/partitions\/(\d+)\/state$/;
const TOPIC_PATH = /^\/brokers\/topics\/([^/]+)$/;
const BROKER_PATH = /^\/brokers\/ids\/(\d+)$/;

/** The catalogue (backend/view/rules.py), generated into rules-catalogue.js. */
export {RULES};
export const RULE_IDS = RULES.map((rule) => rule.id);

export function emptyChecks() {
  const rules = {};
  for (const id of RULE_IDS) rules[id] = {status: 'holds', count: 0, open: [], closed: [], info: null};
  return {rules, memo: {epoch: null, zk_epoch: null, believers: {}, leader_epochs: {}, applied: {}, dead: {},
    orphans: {}, orphan_count: {}, started: {}, repaired: -1, elections: {}}};
}

/** Check the rules after `r` (already folded into `view` by model.js). */
export function checkRules(view, r) {
  if (!('invariants' in view)) view.invariants = emptyChecks();
  const handler = HANDLERS.get(r.kind);
  if (handler !== undefined) handler(view.invariants, view, r);
}

function zk(c, view, r) {
  const path = r.detail.path || r.subject.slice('znode:'.length);
  if (r.to_state === 'write_refused') {
    if (r.controller_id === null) return;
    if (r.outcome === 'rejected_stale_epoch') {
      ctl.fence(c, r.controller_id, r, `ZooKeeper refused its write of ${path}`);
    } else if (r.detail.error === 'SESSIONEXPIRED') { // Kafka 2.8's usual way: its session is gone
      ctl.fence(c, r.controller_id, r, `its session had expired: its write of ${path} never reached ZooKeeper`);
    }
    return;
  }
  const data = r.to_state !== 'deleted' ? r.detail.data ?? null : null;
  let m;
  if (path === '/controller_epoch') {
    ctl.controllerEpoch(c, r, data);
  } else if ((m = STATE_PATH.exec(path))) {
    const key = `${m[1]}-${m[2]}`;
    ctl.leaderEpoch(c, r, key, data);
    parts.checkPartition(c, view, r, key);
  } else if ((m = TOPIC_PATH.exec(path))) {
    parts.checkTopic(c, view, r, m[1]);
  } else if ((m = BROKER_PATH.exec(path))) {
    parts.liveness(c, view, r, Number.parseInt(m[1], 10), data !== null);
  }
}

function broker(c, view, r) {
  ctl.onBroker(c, view, r);
  parts.onBroker(c, view, r);
}

const HANDLERS = new Map([
  ['zk', zk], ['controller', ctl.onController], ['broker', broker], ['request', ctl.onRequest],
  ['controller_event', parts.onControllerEvent], ['partition', parts.onPartitionRecord],
  ['election', parts.onPartitionRecord], ['isr', parts.onPartitionRecord], ['log', parts.onLog],
]);
