// Which faults the page offers, and the reasons it gives when one does not apply.
import assert from 'node:assert/strict';
import {execFileSync} from 'node:child_process';
import {test} from 'node:test';
import {brokerActions, brokerIds, eventNames, paletteActions, partitionKeys, topics} from '../../static/js/actions.js';
import {emptyView} from '../../static/js/model.js';

// The vocabulary as the server serves it (web/service.py): when a fault applies is its rule, not retyped here.
const VOCABULARY = JSON.parse(execFileSync(process.env.KCLAB_PYTHON ?? '.venv/bin/python',
  ['-c', 'import json, web.service as s; print(json.dumps(s.vocabulary()))'], {encoding: 'utf8'}));
const brokerMenu = (v, broker) => brokerActions(v, broker, VOCABULARY);

function view(states, extra = {}) {
  const v = emptyView();
  for (const [id, state] of Object.entries(states)) {
    v.brokers[id] = {id: Number(id), state, registered: state === 'alive', broker_epoch: null, session: null,
      pause_armed: null, session_expired_seq: null};
  }
  return Object.assign(v, extra);
}

const enabled = (actions) => actions.filter((a) => a.enabled).map((a) => a.id);

test('an alive broker can be crashed, stopped, shut down, paused or expired, not restarted or resumed', () => {
  const actions = brokerMenu(view({1: 'alive'}), 1);
  assert.deepEqual(enabled(actions), ['crash', 'stop', 'shutdown', 'pause', 'pause_during', 'expire']);
  const restart = actions.find((a) => a.id === 'restart');
  assert.match(restart.reason, /Broker 1 is alive, so it cannot be started \(it must be crashed or stopped\)/);
  assert.deepEqual(actions.find((a) => a.id === 'crash').fields, {broker: 1});
});

test('a crashed broker can only restart; a paused one can resume, crash or expire', () => {
  assert.deepEqual(enabled(brokerMenu(view({2: 'crashed'}), 2)), ['restart']);
  assert.deepEqual(enabled(brokerMenu(view({2: 'paused'}), 2)), ['crash', 'resume', 'expire']);
  assert.deepEqual(enabled(brokerMenu(view({}), 4)), ['restart'], 'an unknown broker counts as stopped');
});

test('an armed pause can be disarmed and not armed twice', () => {
  const v = view({0: 'alive'});
  v.brokers[0].pause_armed = 'ReplicaLeaderElection';
  const actions = brokerMenu(v, 0);
  assert.equal(actions.find((a) => a.id === 'resume').enabled, true);
  assert.equal(actions.find((a) => a.id === 'pause_during').enabled, false);
});

test('the palette follows the controller, topics and partitions', () => {
  const v = view({0: 'alive', 1: 'alive'}, {controller: {id: 1, epoch: 3}});
  v.znodes['/controller'] = {data: {brokerid: 1}, version: 0};
  v.znodes['/brokers/topics/t'] = {data: {}, version: 0};
  v.partitions['t-0'] = {topic: 't', partition: 0};
  const palette = paletteActions(v);
  const kill = palette.find((a) => a.id === 'kill_controller');
  assert.deepEqual([kill.enabled, kill.fields, kill.label], [true, {broker: 1}, 'Kill the controller (broker 1)']);
  assert.equal(palette.find((a) => a.id === 'delete_controller').enabled, true);
  assert.equal(palette.find((a) => a.id === 'reassign').enabled, true);
  const empty = paletteActions(view({}));
  assert.match(empty.find((a) => a.id === 'kill_controller').reason, /no controller/);
  assert.equal(empty.find((a) => a.id === 'delete_topic').enabled, false);
  assert.deepEqual(paletteActions(v, {unclean: true}).find((a) => a.id === 'unclean').fields,
    {name: 'unclean.leader.election.enable', value: false});
  assert.deepEqual(topics(v), ['t']);
  assert.deepEqual(partitionKeys(v), ['t-0']);
  assert.deepEqual(brokerIds(v, {brokers: [0, 1, 2]}), [0, 1, 2]);
});

test('without the vocabulary no broker action is offered, and the menu says why', () => {
  const actions = brokerActions(view({1: 'alive'}), 1, null);
  assert.deepEqual(enabled(actions), []);
  assert.match(actions[0].reason, /vocabulary has not loaded/);
});

test('the events a broker can be paused in are the server\'s list', () => {
  const names = eventNames(VOCABULARY);
  assert.ok(names.includes('BrokerChange') && names.includes('ReplicaLeaderElection'), names);
  assert.deepEqual(eventNames(null), []);
});
