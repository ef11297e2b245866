// The instructor's word on the server's load (static/js/views/server-load.js): what a minute of
// the server's counters says, and a view that asks again every few seconds while a class is open.
import assert from 'node:assert/strict';
import {test} from 'node:test';
import {FakeTimers} from './fake-timers.mjs';
import {POLL_MS, WINDOW_MS, createServerLoadView, describeLoad} from '../../static/js/views/server-load.js';

const load = (over = {}) => ({
  workers: [{worker: 'this', sandboxes: 120, zk_lag_ms: 5, zk_limit_ms: 1000, shedding: false}],
  sandboxes: 120, cap: 200, shedding: false, zk_lag_ms: 5, refused: 0, zk_dropped: 0, zk_expired: 0, ...over,
});
const settle = () => new Promise((resolve) => setImmediate(resolve));

test('a server that keeps up says how many sandboxes of its cap run', () => {
  const said = describeLoad([{t: 0, load: load()}, {t: 5000, load: load()}]);
  assert.equal(said.state, 'ok');
  assert.equal(said.text, 'Server keeping up: 120 of 200 sandboxes running.');
  assert.equal(describeLoad([]).state, 'unknown');
});

test('refusals in the last minute make it overloaded, with what to do; older ones are forgotten', () => {
  const minute = [{t: 0, load: load({refused: 10})}, {t: 30000, load: load({refused: 12, zk_dropped: 4})},
    {t: 60000, load: load({refused: 47, zk_dropped: 9, zk_expired: 2, zk_lag_ms: 1200})}];
  const said = describeLoad(minute);
  assert.equal(said.state, 'overloaded');
  assert.match(said.text, /refused 37 student actions in the last minute/);
  assert.match(said.text, /9 broker connections dropped and 2 sessions expired/);
  assert.match(said.text, /heart-beats run 1\.2 s late/);
  assert.match(said.text, /ask the class to act less often/);
  // A minute later with nothing new: the old refusals are not this minute's.
  const later = [...minute, {t: 60000 + WINDOW_MS + 1, load: load({refused: 47, zk_dropped: 9, zk_expired: 2})}];
  assert.equal(describeLoad(later).state, 'ok');
});

test('refusing now with no refusal yet, drops without refusals, and a late loop are each told', () => {
  assert.match(describeLoad([{t: 0, load: load({shedding: true})}]).text, /refusing students' new actions right now/);
  const dropped = describeLoad([{t: 0, load: load()}, {t: 5000, load: load({zk_dropped: 1})}]);
  assert.equal(dropped.state, 'busy');
  assert.match(dropped.text, /1 broker connection dropped and 0 sessions expired/);
  assert.equal(describeLoad([{t: 0, load: load({zk_lag_ms: 600})}]).state, 'busy'); // past half its 1 s limit
  assert.equal(describeLoad([{t: 0, load: load({zk_lag_ms: 400})}]).state, 'ok');
  // A worker that went away takes its counts with it: that is no negative change.
  assert.equal(describeLoad([{t: 0, load: load({refused: 9})}, {t: 5000, load: load({refused: 3})}]).state, 'ok');
});

test('two workers are named, their sum is what counts', () => {
  const two = load({workers: [load().workers[0], {worker: 'b', sandboxes: 80, zk_lag_ms: 2, zk_limit_ms: 1000}],
    sandboxes: 200});
  assert.equal(describeLoad([{t: 0, load: two}]).text, 'Server keeping up: 200 of 200 sandboxes running on 2 workers.');
});

test('the view asks every few seconds while started, says an error in words, and stops', async () => {
  const timers = new FakeTimers();
  const element = {dataset: {}, textContent: '', hidden: true};
  const answers = [load(), load({refused: 5}), new Error('403: not the instructor')];
  let asked = 0;
  const view = createServerLoadView(element, {timers, clock: () => timers.now, fetchLoad: async () => {
    asked += 1;
    const answer = answers.shift();
    if (answer instanceof Error) throw answer;
    return answer;
  }});
  view.start();
  await settle();
  assert.equal(element.dataset.state, 'ok');
  assert.equal(element.hidden, false);
  timers.advance(POLL_MS);
  await settle();
  assert.equal(element.dataset.state, 'overloaded');
  assert.match(element.textContent, /refused 5 student actions/);
  timers.advance(POLL_MS);
  await settle();
  assert.equal(element.dataset.state, 'unknown');
  assert.match(element.textContent, /Server load unknown: 403/);
  view.stop();
  assert.equal(element.hidden, true);
  timers.advance(POLL_MS * 10);
  await settle();
  assert.equal(asked, 3);
});
