/**
 * PURE the partitions' rules (leader_in_isr) and the data plane's (acked_not_lost, hw_le_leo,
 * min_isr_ack): a port of backend/view/partition_rules.py. A dead leader is waiting, not
 * broken, until the active controller processed a BrokerChange (or failover) begun after the death.
 */
import {brokersText, closeViolation, eventViolation, isInt, openViolation, ranges, str} from './violations.js';

export const REPAIR_EVENTS = ['BrokerChange', 'Startup', 'Reelect', 'RegisterBrokerAndReelect'];

export function onPartitionRecord(c, view, r) {
  if (r.topic === null || r.partition === null) return;
  const key = `${r.topic}-${r.partition}`;
  if (r.kind === 'election' && r.outcome === 'ok' && r.to_state === 'elected') {
    c.memo.elections[key] = {seq: r.seq, unclean: r.election === 'offline_unclean', leader: r.leader};
  }
  checkPartition(c, view, r, key);
}

export function checkPartition(c, view, r, key) {
  const p = view.partitions[key] ?? null;
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
  const toState = r.to_state;
  if ((toState === 'crashed' || toState === 'stopped') && r.broker_id !== null) {
    if (!(r.broker_id in c.memo.dead)) c.memo.dead[r.broker_id] = r.seq;
  }
}

export function liveness(c, view, r, broker, alive) {
  if (alive) delete c.memo.dead[broker];
  else if (!(broker in c.memo.dead)) c.memo.dead[broker] = r.seq;
  const keys = Object.entries(view.partitions).filter(([, p]) => p.leader === broker).map(([k]) => k);
  for (const key of keys) checkPartition(c, view, r, key);
}

function setOrphan(c, r, key, leader) {
  const {orphans, orphan_count: counts} = c.memo;
  const old = orphans[key] ?? null;
  if (old === leader) return;
  if (old !== null) {
    delete orphans[key];
    counts[old] -= 1;
    if (counts[old] === 0) delete counts[old];
    updateDead(c, r, old);
  }
  if (leader !== null) {
    orphans[key] = leader;
    counts[leader] = (counts[leader] ?? 0) + 1;
    updateDead(c, r, leader);
  }
}

function updateDead(c, r, broker) {
  const key = `dead:${broker}`;
  const count = c.memo.orphan_count[broker] ?? 0;
  if (count === 0) {
    closeViolation(c, 'leader_in_isr', key, r);
    return;
  }
  const since = c.memo.dead[broker] ?? null;
  const waiting = c.memo.repaired <= (since !== null ? since : -1);
  const text = `Broker ${broker} is not alive, yet it still leads ${count} online partition(s): `
    + (waiting ? 'the controller has not handled the change yet.'
      : 'the controller has handled a broker change since, and did not move them.');
  openViolation(c, 'leader_in_isr', key, r, text, waiting ? 'waiting' : 'broken', `broker:${broker}`, since);
}

/** A dead leader waits until the active controller processed a BrokerChange (or failover) begun after the death. */
export function onControllerEvent(c, view, r) {
  const memo = c.memo;
  const toState = r.to_state;
  if (!REPAIR_EVENTS.includes(r.op)) return;
  if (toState === 'processing') {
    memo.started[r.subject] = r.seq;
    return;
  }
  const started = memo.started[r.subject] ?? null;
  delete memo.started[r.subject];
  if (toState === 'processed' && started !== null && (view.controller?.id ?? null) === r.broker_id) {
    memo.repaired = Math.max(memo.repaired, started);
    const brokers = Object.keys(memo.orphan_count).map(Number).sort((a, b) => a - b);
    for (const broker of brokers) updateDead(c, r, broker);
  }
}

export function onLog(c, view, r) {
  const toState = r.to_state;
  const detail = r.detail;
  const key = `${str(r.topic)}-${str(r.partition)}`;
  if (toState === 'lost') {
    lost(c, r, key, detail);
  } else if (['fetched', 'truncated', 'hw', 'leader_log'].includes(toState)) {
    const hw = detail.hw;
    const leo = detail.leo;
    if (isInt(hw) && isInt(leo) && hw > leo) {
      const who = toState === 'fetched' || toState === 'truncated' ? 'Replica' : 'Leader';
      eventViolation(c, 'hw_le_leo', r, `${who} ${str(r.broker_id)} of ${key} has high watermark ${hw} above its log `
        + `end offset ${leo}.`, r.subject);
    }
  } else if (toState === 'acknowledged' && r.acks === 'all') {
    const isr = r.isr;
    const needed = detail.min_insync_replicas;
    if (Array.isArray(isr) && isInt(needed) && isr.length < needed) {
      eventViolation(c, 'min_isr_ack', r, `Leader ${str(r.leader)} acknowledged ${str(r.count)} message(s) `
        + `of ${key} with acks=all while its ISR ${brokersText(isr)} had fewer than min.insync.replicas = ${needed}.`,
      `partition:${key}`);
    }
  }
}

function lost(c, r, key, detail) {
  let offsets = detail.offsets;
  if (!(Array.isArray(offsets) && offsets.length > 0 && offsets.every(isInt))) {
    const first = r.offset;
    const count = r.count;
    offsets = isInt(first) && isInt(count) ? Array.from({length: Math.max(0, count)}, (_, i) => first + i) : [];
  }
  const acks = r.acks;
  const election = c.memo.elections[key] ?? null;
  const unclean = election !== null && election.unclean;
  const promise = acks === 'all' && !unclean;
  let text = `${offsets.length} acknowledged message(s) of ${key} lost: offset(s) ${ranges(offsets)} (acks=${str(acks)}). `;
  if (unclean) {
    text += `The unclean election at #${election.seq} made broker ${str(election.leader)} leader without them.`;
  } else if (promise) {
    text += 'Kafka promises acks=all messages survive while unclean election is off: this must never happen.';
  } else {
    text += `acks=${str(acks)} waits for the leader only, and the new leader ${str(r.leader)} never had them.`;
  }
  eventViolation(c, 'acked_not_lost', r, text, `partition:${key}`, election !== null ? election.seq : r.cause_seq,
    {offsets: offsets.slice(0, 100), acks, promise});
}

function online(p) {
  if (!isInt(p.leader) || p.leader < 0) return false;
  return p.state === null || p.state === 'OnlinePartition';
}

function live(view, broker) {
  const b = view.brokers[broker] ?? null;
  return b !== null && Boolean(b.registered);
}
