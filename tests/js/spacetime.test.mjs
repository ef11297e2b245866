// The space-time diagram's model: records -> arrows, bars and marks on lanes.
// Run: node --test tests/js/   (tests/js/test_node_units.py runs it under pytest)
import assert from 'node:assert/strict';
import {test} from 'node:test';
import {SpacetimeModel, end, passes, start} from '../../static/js/spacetime-model.js';

let seq = 0;
const r = (kind, subject, fields = {}) => ({v: 1, session_id: 's', seq: seq++, ts_ms: 0, kind, subject, ...fields});
const state = (leader, epoch, isr) => r('zk', 'znode:/brokers/topics/t/partitions/0/state', {to_state: 'changed',
  zxid: 40 + seq, detail: {path: '/brokers/topics/t/partitions/0/state', data: {leader, leader_epoch: epoch, isr}}});
const election = (leader, epoch, isr, controller = 1) => r('election', 'partition:t-0', {to_state: 'elected',
  outcome: 'ok', topic: 't', partition: 0, leader, leader_epoch: epoch, isr, controller_id: controller,
  controller_epoch: 2});

function model(records) {
  const m = new SpacetimeModel();
  m.add(records);
  return m;
}

test('a request flies from the controller to a broker; refused for a stale epoch, it bounces', () => {
  seq = 0;
  const m = model([
    r('request', 'request:LeaderAndIsr#52', {to_state: 'sent', op: 'LeaderAndIsr', controller_id: 0,
      controller_epoch: 1, broker_id: 1, detail: {partitions: {'t-0': {leader: 1}}}}),
    r('request', 'request:LeaderAndIsr#52', {to_state: 'rejected', op: 'LeaderAndIsr', controller_id: 0,
      controller_epoch: 1, broker_id: 1, outcome: 'rejected_stale_epoch'}),
    r('request', 'request:AlterIsr#7', {to_state: 'sent', op: 'AlterIsr', controller_id: 2, controller_epoch: 2,
      broker_id: 1}),
  ]);
  const [bounced, alter] = m.query(0, 10);
  assert.deepEqual([bounced.from, bounced.to], [{lane: 'broker:0', seq: 0}, {lane: 'broker:1', seq: 1}]);
  assert.equal(bounced.outcome, 'rejected');
  assert.match(bounced.label, /LeaderAndIsr · epoch 1 ✗ STALE_CONTROLLER_EPOCH/);
  assert.deepEqual(bounced.partitions, ['t-0']);
  assert.deepEqual(bounced.seqs, [0, 1]);
  assert.equal(m.itemOf(1), bounced, 'a click on either record finds the arrow');
  // any request kind is drawn by its name; a broker's request to the controller flies the other way
  assert.deepEqual([alter.name, alter.from.lane, alter.to.lane, alter.open], ['AlterIsr', 'broker:1', 'broker:2', true]);
  assert.equal(end(alter), Infinity, 'in flight until its answer');
});

test("AlterIsr's answer lands on the controller; a refusal names Kafka's error", () => {
  seq = 0;
  const sent = (id) => r('request', `request:AlterIsr#${id}`, {to_state: 'sent', op: 'AlterIsr', controller_id: 0,
    controller_epoch: 1, broker_id: 2, detail: {partitions: {'t-0': {new_isr: [2]}}}});
  const m = model([
    sent(7),
    r('request', 'request:AlterIsr#7', {to_state: 'applied', op: 'AlterIsr', controller_id: 0, controller_epoch: 1,
      broker_id: 2, outcome: 'ok'}),
    sent(8),
    r('request', 'request:AlterIsr#8', {to_state: 'rejected', op: 'AlterIsr', controller_id: 0, controller_epoch: 1,
      broker_id: 2, outcome: 'refused', detail: {error: 'NOT_CONTROLLER'}}),
  ]);
  const [answered, refused] = m.query(0, 10);
  assert.deepEqual([answered.from, answered.to], [{lane: 'broker:2', seq: 0}, {lane: 'broker:0', seq: 1}]);
  assert.equal(answered.outcome, 'applied');
  assert.equal(end(answered), 1);
  assert.match(refused.label, /AlterIsr · epoch 1 ✗ NOT_CONTROLLER/);
});

test('a write into ZooKeeper comes from the broker whose record wrote the same leader and epoch', () => {
  seq = 0;
  const m = model([election(2, 3, [2, 0]), state(2, 3, [2, 0]), state(2, 3, [2]),
    r('isr', 'partition:t-0', {to_state: 'shrunk', outcome: 'ok', topic: 't', partition: 0, leader: 2,
      leader_epoch: 3, isr: [2], broker_id: 2, detail: {written_by: 'leader'}})]);
  const [first, second] = m.query(0, 10).filter((i) => i.kind === 'zk');
  assert.equal(first.from.lane, 'broker:1', 'the controller elected leader 2 and wrote it');
  assert.equal(second.from.lane, 'broker:2', "the leader's own ISR change, recorded after ZooKeeper's");
  assert.match(first.label, /changed \/brokers\/topics\/t\/partitions\/0\/state · zxid \d+ · leader 2 epoch 3/);
  assert.deepEqual(first.partitions, ['t-0']);
});

test("a refused write bounces off ZooKeeper from its writer, named by the record or by its event", () => {
  seq = 0;
  const m = model([
    r('controller_event', 'event:ReplicaLeaderElection#12', {to_state: 'queued', broker_id: 0, op: 'ReplicaLeaderElection'}),
    r('zk', 'znode:/admin/preferred_replica_election', {to_state: 'write_refused', outcome: 'rejected_stale_epoch',
      cause_seq: 0, detail: {path: '/admin/preferred_replica_election'}}),
    r('zk', 'znode:/brokers/topics/t/partitions/0/state', {to_state: 'write_refused', outcome: 'rejected_stale_epoch',
      controller_id: 2, controller_epoch: 1, detail: {path: '/brokers/topics/t/partitions/0/state'}}),
  ]);
  const [older, named] = m.query(0, 10).filter((i) => i.kind === 'zk');
  assert.deepEqual([older.refused, older.from.lane, named.from.lane], [true, 'broker:0', 'broker:2']);
  assert.match(named.label, /✗ ZooKeeper refused the write of .*stale controller epoch/);
});

test('a watch notification flies out of ZooKeeper from the change that fired it', () => {
  seq = 0;
  const m = model([
    r('zk', 'znode:/brokers/ids/1', {to_state: 'deleted', detail: {path: '/brokers/ids/1'}}),
    r('controller_event', 'event:BrokerChange#3', {to_state: 'queued', broker_id: 0, op: 'BrokerChange'}),
    r('controller_event', 'event:ControllerChange#4', {to_state: 'queued', broker_id: 2, op: 'ControllerChange'}),
    r('zk', 'znode:/controller', {to_state: 'created', broker_id: 2, detail: {path: '/controller', data: {brokerid: 2}}}),
    r('controller_event', 'event:Startup#5', {to_state: 'queued', broker_id: 1, op: 'Startup'}),
  ]);
  const watches = m.query(0, 10, {kind: 'watch'});
  assert.equal(watches.length, 2, 'Startup is no watch');
  assert.deepEqual([watches[0].from, watches[0].to], [{lane: 'zk', seq: 0}, {lane: 'broker:0', seq: 1}]);
  assert.match(watches[0].label, /\/brokers\/ids\/1 → BrokerChange/);
  assert.match(watches[1].label, /created \/controller → ControllerChange/, 'the observer saw the change after the watch fired');
  const [ids] = m.query(0, 0, {kind: 'zk'});
  assert.equal(ids.from.lane, 'broker:1', "a registration goes with its broker's session");
});

test('an event is a bar from processing to processed; a long one is still found in a short window', () => {
  seq = 0;
  const records = [r('controller_event', 'event:ReplicaLeaderElection#12', {to_state: 'processing', broker_id: 0,
    op: 'ReplicaLeaderElection', detail: {controller_state: 'ManualLeaderBalance'}})];
  for (let i = 0; i < 900; i += 1) records.push(r('broker', 'broker:1', {to_state: 'registered', broker_id: 1}));
  records.push(r('controller_event', 'event:ReplicaLeaderElection#12', {to_state: 'processed', broker_id: 0,
    op: 'ReplicaLeaderElection'}));
  const m = model(records);
  const bar = m.query(450, 452, {kind: 'event'});
  assert.equal(bar.length, 1);
  assert.deepEqual([start(bar[0]), end(bar[0]), bar[0].label], [0, 901, 'ReplicaLeaderElection · ManualLeaderBalance']);
  assert.equal(m.query(450, 452).length, 4, 'the bar and the three marks in the window');
});

test('a controlled shutdown is a request from the broker to the controller, answered', () => {
  seq = 0;
  const m = model([
    r('controller_event', 'event:ControlledShutdown#6', {to_state: 'queued', broker_id: 0, op: 'ControlledShutdown',
      detail: {event: {broker_id: 1}}}),
    r('controller', 'broker:1', {to_state: 'controlled_shutdown_answered', broker_id: 1, controller_id: 0}),
  ]);
  const [shutdown] = m.query(0, 5, {kind: 'request'});
  assert.deepEqual([shutdown.from.lane, shutdown.to, shutdown.outcome], ['broker:1', {lane: 'broker:0', seq: 1}, 'applied']);
});

test('the window and the filters find exactly what a full scan finds', () => {
  seq = 0;
  const records = [];
  for (let i = 0; i < 3000; i += 1) {
    const b = i % 3;
    if (i % 5 === 0) {
      records.push(r('request', `request:UpdateMetadata#${i}`, {to_state: 'sent', op: 'UpdateMetadata', controller_id: 0,
        controller_epoch: 1, broker_id: b, detail: {partitions: {[`t-${i % 4}`]: {}}}}));
    } else if (i % 5 === 1 && records.length > 3) {
      const sent = records[records.length - 1 - (i % 3)];
      if (sent.to_state === 'sent') records.push(r('request', sent.subject, {...sent, seq: undefined, to_state: 'applied'}));
      else records.push(r('broker', `broker:${b}`, {to_state: 'paused', broker_id: b}));
    } else {
      records.push(r('broker', `broker:${b}`, {to_state: 'resumed', broker_id: b}));
    }
  }
  records.forEach((record, i) => { record.seq = i; });
  const m = model(records);
  const all = m.query(-1, 1e9);
  for (const [lo, hi, filter] of [[0, 40, {}], [1000, 1010, {kind: 'request'}], [2500, 2999, {broker: '2'}],
    [10, 800, {partition: 't-3'}]]) {
    const want = all.filter((i) => start(i) <= hi && end(i) >= lo && passes(i, filter)).map((i) => i.id).sort();
    assert.deepEqual(m.query(lo, hi, filter).map((i) => i.id).sort(), want, `${lo}..${hi} ${JSON.stringify(filter)}`);
  }
});
