// The metrics the page shows: ActiveControllerCount summed over running brokers, from metric records.
import assert from 'node:assert/strict';
import {test} from 'node:test';
import {activeControllerCount, brokerGauges} from '../../static/js/metrics.js';
import {emptyView, fold} from '../../static/js/model.js';

let seq = 0;
const record = (kind, fields) => ({v: 1, session_id: 's', seq: seq++, ts_ms: 0, kind, ...fields});
const broker = (id, to_state) => record('broker', {subject: `broker:${id}`, broker_id: id, to_state});
const gauge = (id, name, count) => record('metric', {subject: `metric:${name}`, broker_id: id, op: name, count});

test('the sum is 1, then 2 while a paused zombie believes, then 1, then 0 with every broker gone', () => {
  let v = fold([broker(0, 'registered'), broker(1, 'registered'), gauge(0, 'ActiveControllerCount', 1),
    gauge(1, 'ActiveControllerCount', 0)], emptyView());
  assert.equal(activeControllerCount(v).count, 1);
  v = fold([broker(0, 'paused'), gauge(1, 'ActiveControllerCount', 1)], v);
  assert.deepEqual([v.brokers['0'].state, activeControllerCount(v).count], ['paused', 2]);
  assert.match(activeControllerCount(v).meaning, /zombie/);
  v = fold([broker(0, 'resumed'), gauge(0, 'ActiveControllerCount', 0)], v);
  assert.equal(activeControllerCount(v).count, 1);
  v = fold([broker(1, 'crashed'), broker(0, 'crashed')], v);
  assert.deepEqual([activeControllerCount(v).count, /no controller/.test(activeControllerCount(v).meaning)], [0, true]);
});

test('a broker shows the gauges it reported, in the panel order', () => {
  const v = fold([broker(0, 'registered'), gauge(0, 'GlobalTopicCount', 2), gauge(0, 'ActiveControllerCount', 1)],
    emptyView());
  assert.deepEqual(brokerGauges(v, 0), [['ActiveControllerCount', 1], ['GlobalTopicCount', 2]]);
});
