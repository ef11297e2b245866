/**
 * PURE where the space-time diagram's arrows start (spacetime-model.js): who wrote a znode —
 * which the observer's record does not say — and which ZooKeeper change fired a watch.
 *
 * A partition's state znode was written by the record (election, partition, ISR change) that
 * wrote the same leader, epoch and ISR, close before or after it (the observer may see the
 * change before the writer records it); a broker's registration and /controller belong to
 * their broker; /controller_epoch to the controller; what the controller cleans up
 * (deletions) to it; anything else to the admin tools (scripts, kafka-topics.sh, zkCli.sh).
 */
/** A broker's lane; the others are `admin` and `zk`. */
export const broker = (id) => `broker:${id}`;
export const LOOK = 64; // how far (in records) a write and its observation, or a change and its watch, may lie apart

/** Which ZooKeeper change fires a controller event's watch (Kafka 2.8's ZNodeChangeHandlers). */
export const WATCHED = {
  BrokerChange: (p) => p.startsWith('/brokers/ids/'),
  BrokerModifications: (p) => p.startsWith('/brokers/ids/'),
  TopicChange: (p) => /^\/brokers\/topics\/[^/]+$/.test(p),
  PartitionModifications: (p) => /^\/brokers\/topics\/[^/]+$/.test(p),
  TopicDeletion: (p) => p.startsWith('/admin/delete_topics/'),
  ZkPartitionReassignment: (p) => p === '/admin/reassign_partitions',
  ReplicaLeaderElection: (p) => p === '/admin/preferred_replica_election',
  IsrChangeNotification: (p) => p.startsWith('/isr_change_notification/'),
  ControllerChange: (p) => p === '/controller',
  Reelect: (p) => p === '/controller',
  UncleanLeaderElectionEnable: (p) => p.startsWith('/config/'),
  TopicUncleanLeaderElectionEnable: (p) => p.startsWith('/config/'),
};
export const SESSION_EVENTS = new Set(['Expire', 'RegisterBrokerAndReelect']);
export const REFUSED = {rejected_stale_epoch: 'stale controller epoch (the /controller_epoch check failed)',
  bad_version: 'BADVERSION (changed since it was read)'};

/** Who wrote this znode (a lane), or null when its writer's record may still come. */
export function writerLane(r, path, stateMatch) {
  const data = r.detail?.data ?? null;
  if (path.startsWith('/brokers/ids/')) return broker(path.slice('/brokers/ids/'.length)); // its own, or its session's end
  if (path === '/controller') return broker(r.broker_id ?? data?.brokerid);
  if (r.to_state === 'deleted') return this._controller ?? 'admin'; // the controller cleans up what it handled
  if (stateMatch) {
    const key = `${stateMatch[1]}-${stateMatch[2]}`;
    const write = data && findLast(this._writes.get(key) ?? [], (w) => w.seq >= r.seq - LOOK && matches(w, data));
    return write ? write.lane : null;
  }
  if (path === '/controller_epoch') return this._controller ?? 'admin';
  if (path.startsWith('/isr_change_notification/')) {
    const leader = [...this._writes.values()].flat().filter((w) => w.lane !== this._controller).sort((a, b) => b.seq - a.seq)[0];
    return leader ? leader.lane : 'admin';
  }
  return 'admin';
}

export function matches(write, data) {
  return write.leader === data.leader && write.epoch === data.leader_epoch && write.isr === String(data.isr ?? '');
}

export function findLast(list, test) {
  for (let i = list.length - 1; i >= 0; i -= 1) if (test(list[i])) return list[i];
  return null;
}
