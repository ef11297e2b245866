/**
 * PURE the partitions' rules (leader_in_isr) and the data plane's (acked_not_lost, hw_le_leo,
 * min_isr_ack): a port of backend/view/partition_rules.py. A dead leader is waiting, not
 * broken, until the active controller processed a BrokerChange (or failover) begun after the death.
 */
import {get, has, orEmpty, pyStr} from '../py.js';
import {brokersText, closeViolation, eventViolation, isInt, openViolation, ranges} from './violations.js';

export const REPAIR_EVENTS = ['BrokerChange', 'Startup', 'Reelect', 'RegisterBrokerAndReelect'];

export function onPartitionRecord(c, view, r) {
  if (get(r, 'topic') === null || get(r, 'partition') === null) return;
  const key = `${r.topic}-${r.partition}`;
  if (r.kind === 'election' && get(r, 'outcome') === 'ok' && get(r, 'to_state') === 'elected') {
    c.memo.elections[key] = {seq: r.seq, unclean: get(r, 'election') === 'offline_unclean', leader: get(r, 'leader')};
  }
  checkPartition(c, view, r, key);
}

export function checkPartition(c, view, r, key) {
  const p = get(view.partitions, key);
  let problem = null;
  let orphanedBy = null;
  if (p !== null && online(p)) {
    const leader = p.leader;
    const isr = p.isr || [];
    // During a reassignment the controller's records already name the target replicas while
    // the leaving ones are still in the ISR (Kafka's steps B2-B4): they are in `removing`.
    const replicas = [...(p.replicas || []), ...(p.removing || []).filter((b) => !(p.replicas || []).includes(b))];
    if (!isr.includes(leader)) {
      problem = `${key}'s leader ${leader} is not in its ISR ${brokersText(isr)}.`;
    } else if (replicas.length > 0 && isr.some((b) => !replicas.includes(b))) {
      problem = `${key}'s ISR ${brokersText(isr)} holds brokers outside its replicas ${brokersText(replicas)}.`;
    }
    if (!live(view, leader)) orphanedBy = leader;
  }
  setOrphan(c, r, key, orphanedBy);
  if (problem === null) closeViolation(c, 'leader_in_isr', `p:${key}`, r);
  else openViolation(c, 'leader_in_isr', `p:${key}`, r, problem, 'broken', `partition:${key}`);
}

/** Replicas changed, or the topic is gone: look at every partition it had or has. */
export function checkTopic(c, view, r, topic) {
  const ofTopic = (key) => (key.includes('-') ? key.slice(0, key.lastIndexOf('-')) : key) === topic;
  const keys = [...Object.keys(view.partitions).filter(ofTopic), ...Object.keys(c.memo.orphans).filter(ofTopic),
    ...c.rules.leader_in_isr.open.filter((v) => v.key.startsWith('p:') && ofTopic(v.key.slice(2))).map((v) => v.key.slice(2))];
  for (const key of new Set(keys)) checkPartition(c, view, r, key);
}

/** A crash or stop is the first sign of a death (the observer sees the registration go a little later). */
export function onBroker(c, view, r) {
  const toState = get(r, 'to_state');
  if ((toState === 'crashed' || toState === 'stopped') && get(r, 'broker_id') !== null) {
    if (!has(c.memo.dead, pyStr(r.broker_id))) c.memo.dead[pyStr(r.broker_id)] = r.seq;
  }
}

export function liveness(c, view, r, broker, alive) {
  if (alive) delete c.memo.dead[pyStr(broker)];
  else if (!has(c.memo.dead, pyStr(broker))) c.memo.dead[pyStr(broker)] = r.seq;
  const keys = Object.entries(view.partitions).filter(([, p]) => p.leader === broker).map(([k]) => k);
  for (const key of keys) checkPartition(c, view, r, key);
}

function setOrphan(c, r, key, leader) {
  const {orphans, orphan_count: counts} = c.memo;
  const old = get(orphans, key);
  if (old === leader) return;
  if (old !== null) {
    delete orphans[key];
    counts[pyStr(old)] -= 1;
    if (counts[pyStr(old)] === 0) delete counts[pyStr(old)];
    updateDead(c, r, old);
  }
  if (leader !== null) {
    orphans[key] = leader;
    counts[pyStr(leader)] = get(counts, pyStr(leader), 0) + 1;
    updateDead(c, r, leader);
  }
}

function updateDead(c, r, broker) {
  const key = `dead:${broker}`;
  const count = get(c.memo.orphan_count, pyStr(broker), 0);
  if (count === 0) {
    closeViolation(c, 'leader_in_isr', key, r);
    return;
  }
  const since = get(c.memo.dead, pyStr(broker));
  const waiting = c.memo.repaired <= (since !== null ? since : -1);
  const text = `Broker ${broker} is not alive, yet it still leads ${count} online partition(s): `
    + (waiting ? 'the controller has not handled the change yet.'
      : 'the controller has handled a broker change since, and did not move them.');
  openViolation(c, 'leader_in_isr', key, r, text, waiting ? 'waiting' : 'broken', `broker:${broker}`, since);
}

/** A dead leader waits until the active controller processed a BrokerChange (or failover) begun after the death. */
export function onControllerEvent(c, view, r) {
  const memo = c.memo;
  const toState = get(r, 'to_state');
  if (!REPAIR_EVENTS.includes(get(r, 'op'))) return;
  if (toState === 'processing') {
    memo.started[r.subject] = r.seq;
    return;
  }
  const started = get(memo.started, r.subject);
  delete memo.started[r.subject];
  const ctl = orEmpty(get(view, 'controller'));
  if (toState === 'processed' && started !== null && get(ctl, 'id') === get(r, 'broker_id')) {
    memo.repaired = Math.max(memo.repaired, started);
    const brokers = Object.keys(memo.orphan_count).map(Number).sort((a, b) => a - b);
    for (const broker of brokers) updateDead(c, r, broker);
  }
}

export function onLog(c, view, r) {
  const toState = get(r, 'to_state');
  const detail = orEmpty(r.detail);
  const key = `${pyStr(get(r, 'topic'))}-${pyStr(get(r, 'partition'))}`;
  if (toState === 'lost') {
    lost(c, r, key, detail);
  } else if (['fetched', 'truncated', 'hw', 'leader_log'].includes(toState)) {
    const hw = get(detail, 'hw');
    const leo = get(detail, 'leo');
    if (isInt(hw) && isInt(leo) && hw > leo) {
      const who = toState === 'fetched' || toState === 'truncated' ? 'Replica' : 'Leader';
      eventViolation(c, 'hw_le_leo', r, `${who} ${pyStr(get(r, 'broker_id'))} of ${key} has high watermark ${hw} above its log `
        + `end offset ${leo}.`, r.subject);
    }
  } else if (toState === 'acknowledged' && get(r, 'acks') === 'all') {
    const isr = get(r, 'isr');
    const needed = get(detail, 'min_insync_replicas');
    if (Array.isArray(isr) && isInt(needed) && isr.length < needed) {
      eventViolation(c, 'min_isr_ack', r, `Leader ${pyStr(get(r, 'leader'))} acknowledged ${pyStr(get(r, 'count'))} message(s) `
        + `of ${key} with acks=all while its ISR ${brokersText(isr)} had fewer than min.insync.replicas = ${needed}.`,
      `partition:${key}`);
    }
  }
}

function lost(c, r, key, detail) {
  let offsets = get(detail, 'offsets');
  if (!(Array.isArray(offsets) && offsets.length > 0 && offsets.every(isInt))) {
    const first = get(r, 'offset');
    const count = get(r, 'count');
    offsets = isInt(first) && isInt(count) ? Array.from({length: Math.max(0, count)}, (_, i) => first + i) : [];
  }
  const acks = get(r, 'acks');
  const election = get(c.memo.elections, key);
  const unclean = election !== null && election.unclean;
  const promise = acks === 'all' && !unclean;
  let text = `${offsets.length} acknowledged message(s) of ${key} lost: offset(s) ${ranges(offsets)} (acks=${pyStr(acks)}). `;
  if (unclean) {
    text += `The unclean election at #${election.seq} made broker ${pyStr(election.leader)} leader without them.`;
  } else if (promise) {
    text += 'Kafka promises acks=all messages survive while unclean election is off: this must never happen.';
  } else {
    text += `acks=${pyStr(acks)} waits for the leader only, and the new leader ${pyStr(get(r, 'leader'))} never had them.`;
  }
  eventViolation(c, 'acked_not_lost', r, text, `partition:${key}`, election !== null ? election.seq : get(r, 'cause_seq'),
    {offsets: offsets.slice(0, 100), acks, promise});
}

function online(p) {
  if (!isInt(p.leader) || p.leader < 0) return false;
  return p.state === null || p.state === 'OnlinePartition';
}

function live(view, broker) {
  const b = get(view.brokers, pyStr(broker));
  return b !== null && Boolean(b.registered);
}
