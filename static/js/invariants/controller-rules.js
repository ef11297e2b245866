/**
 * PURE the controller's rules (one_controller, epochs_monotonic, no_stale_apply): a port of
 * backend/view/controller_rules.py. A believer with an older epoch is a zombie: named, and
 * marked harmless once ZooKeeper or a broker fenced it.
 */
import {BROKER_TO_CONTROLLER_REQUESTS, isObject} from '../record.js';
import {andText, closeViolation, eventViolation, isInt, openViolation, str} from './violations.js';

export function controllerEpoch(c, r, data) {
  const memo = c.memo;
  if (!isInt(data)) {
    memo.zk_epoch = null; // deleted (or not a number): the next value starts afresh
    return;
  }
  const old = memo.zk_epoch;
  if (old !== null && data < old) {
    eventViolation(c, 'epochs_monotonic', r, `/controller_epoch went down from ${old} to ${data}.`, 'znode:/controller_epoch');
  }
  memo.zk_epoch = data;
  currentEpoch(c, r, data);
}

export function leaderEpoch(c, r, key, data) {
  const epochs = c.memo.leader_epochs;
  const epoch = isObject(data) ? data.leader_epoch ?? null : null;
  if (!isInt(epoch)) {
    delete epochs[key]; // the state znode is gone (topic deleted): a new one starts at 0
    return;
  }
  const old = epochs[key] ?? null;
  if (old !== null && epoch < old) {
    eventViolation(c, 'epochs_monotonic', r, `${key}'s leader epoch went down from ${old} to ${epoch}.`, `partition:${key}`);
  }
  epochs[key] = epoch;
}

export function onController(c, view, r) {
  const broker = r.broker_id;
  const toState = r.to_state;
  const believers = c.memo.believers;
  if (broker === null) return;
  if (toState === 'elected') {
    believers[broker] = {broker, epoch: r.controller_epoch, since: r.seq, fenced: null, how: null};
    if (isInt(r.controller_epoch)) {
      currentEpoch(c, r, r.controller_epoch);
      return;
    }
  } else if (toState === 'resigned') {
    delete believers[broker];
  } else if (toState === 'fenced') {
    fence(c, broker, r, 'ZooKeeper refused its write');
    return;
  } else {
    return;
  }
  checkControllers(c, r);
}

function currentEpoch(c, r, epoch) {
  c.memo.epoch = c.memo.epoch === null ? epoch : Math.max(c.memo.epoch, epoch);
  checkControllers(c, r);
}

export function fence(c, broker, r, how) {
  const believer = c.memo.believers[broker] ?? null;
  if (believer !== null && believer.fenced === null) {
    Object.assign(believer, {fenced: r.seq, how});
    checkControllers(c, r);
  }
}

/** At most one believer with the current epoch; older believers are zombies, named. */
function checkControllers(c, r) {
  const epoch = c.memo.epoch;
  const believers = Object.values(c.memo.believers).sort((a, b) => a.broker - b.broker);
  const current = believers.filter((b) => b.epoch === epoch).map((b) => b.broker);
  const zombies = believers.filter((b) => isInt(b.epoch) && epoch !== null && b.epoch < epoch)
    .map((b) => zombie(b, epoch));
  c.rules.one_controller.info = {controllers: current, zombies};
  const key = `epoch:${str(epoch)}`;
  for (const violation of [...c.rules.one_controller.open]) {
    if (violation.key !== key || current.length < 2) closeViolation(c, 'one_controller', violation.key, r);
  }
  if (current.length >= 2) {
    openViolation(c, 'one_controller', key, r, `Brokers ${andText(current)} all act as controller with epoch ${epoch}.`,
      'broken', 'znode:/controller_epoch');
  }
}

function zombie(b, epoch) {
  let text = `Broker ${b.broker} still believes it is the controller, with epoch ${b.epoch}; the current epoch `
    + `is ${epoch}: a zombie. `;
  if (b.fenced === null) {
    text += "Not fenced yet: its next write fails ZooKeeper's check on /controller_epoch, and brokers that "
      + `know epoch ${epoch} refuse its requests.`;
  } else {
    text += `Fenced at #${b.fenced} (${b.how}): harmless.`;
  }
  return {broker: b.broker, epoch: b.epoch, since: b.since, fenced: b.fenced, text};
}

export function onBroker(c, view, r) {
  const broker = r.broker_id;
  const toState = r.to_state;
  if (toState === 'started') {
    delete c.memo.applied[broker]; // a new process remembers no controller epoch
  } else if ((toState === 'crashed' || toState === 'stopped') && broker in c.memo.believers) {
    delete c.memo.believers[broker];
    checkControllers(c, r);
  }
}

export function onRequest(c, view, r) {
  const toState = r.to_state;
  const broker = r.broker_id;
  const epoch = r.controller_epoch;
  const name = r.op || r.subject.slice('request:'.length);
  const rule = c.rules.no_stale_apply;
  if (BROKER_TO_CONTROLLER_REQUESTS.has(name)) return; // applied by the controller: says nothing of broker_id's epochs
  if (toState === 'applied' && broker !== null && isInt(epoch)) {
    const seen = c.memo.applied[broker] ?? null;
    if (seen !== null && epoch < seen) {
      eventViolation(c, 'no_stale_apply', r, `Broker ${broker} applied ${name} from controller ${str(r.controller_id)} `
        + `with epoch ${epoch}, although it had already applied epoch ${seen}.`, `broker:${broker}`);
    } else {
      c.memo.applied[broker] = epoch;
    }
  } else if (toState === 'rejected' && r.outcome === 'rejected_stale_epoch') {
    const info = rule.info || {refused: 0, last: null};
    rule.info = {refused: info.refused + 1, last: r.seq};
    if (r.controller_id !== null) fence(c, r.controller_id, r, `broker ${str(broker)} refused its ${name}`);
  }
}
