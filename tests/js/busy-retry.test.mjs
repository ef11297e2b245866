// A page refused a sandbox by a busy server asks again when the server says (static/js/busy-retry.js).
import assert from 'node:assert/strict';
import {test} from 'node:test';
import {FakeTimers} from './fake-timers.mjs';
import {GIVE_UP_S, retryDelayS, whenThereIsRoom} from '../../static/js/busy-retry.js';

const refusal = (status, retry_after, message = 'busy') =>
  Object.assign(new Error(message), {status, body: retry_after === undefined ? {} : {retry_after}});
const settle = () => new Promise((resolve) => setImmediate(resolve));

test('only a 503 that says when is worth asking again, a little later than asked', () => {
  assert.equal(retryDelayS(refusal(503, 60), () => 0), 60);
  assert.equal(retryDelayS(refusal(503, 60), () => 0.999), 60 * (1 + 0.999 / 5));
  assert.equal(retryDelayS(refusal(503, 10 ** 6), () => 0), 300); // a server's odd answer is capped
  for (const final of [refusal(429, 1), refusal(400, 5), refusal(503), refusal(503, 'soon'), refusal(503, 0),
    refusal(0, 5), null]) {
    assert.equal(retryDelayS(final), null, JSON.stringify(final?.status));
  }
});

test('a full server is asked again after its Retry-After; the page is told each wait', async () => {
  const timers = new FakeTimers();
  const answers = [refusal(503, 60, 'full'), refusal(503, 2, 'behind'), {id: 'sb'}];
  const calls = [], waits = [];
  const done = whenThereIsRoom(async () => {
    calls.push(timers.now);
    const answer = answers.shift();
    if (answer instanceof Error) throw answer;
    return answer;
  }, {timers, random: () => 0, onWait: ({seconds, reason}) => waits.push([seconds, reason])});
  await settle();
  assert.deepEqual(calls, [0]);
  assert.deepEqual(waits, [[60, 'full']]);
  timers.advance(59_999);
  await settle();
  assert.deepEqual(calls, [0], 'not before the server said');
  timers.advance(1);
  await settle();
  assert.deepEqual(waits, [[60, 'full'], [2, 'behind']]);
  timers.advance(2000);
  assert.deepEqual(await done, {id: 'sb'});
  assert.deepEqual(calls, [0, 60_000, 62_000]);
});

test('try now ends the wait at once', async () => {
  const timers = new FakeTimers();
  let first = true, tryNow = null;
  const done = whenThereIsRoom(async () => {
    if (first) { first = false; throw refusal(503, 60); }
    return 'created';
  }, {timers, onWait: (wait) => { tryNow = wait.tryNow; }});
  await settle();
  tryNow();
  assert.equal(await done, 'created');
  assert.equal(timers.queue.size, 0, 'the cancelled timer is gone');
});

test('a final refusal comes back at once, and the page gives up after GIVE_UP_S of waiting', async () => {
  await assert.rejects(whenThereIsRoom(async () => { throw refusal(429, 1, 'your share'); }), /your share/);
  const timers = new FakeTimers();
  let calls = 0;
  const done = whenThereIsRoom(async () => { calls += 1; throw refusal(503, 60, 'still full'); },
    {timers, random: () => 0});
  const rejected = assert.rejects(done, /still full/);
  for (let i = 0; i < GIVE_UP_S / 60 + 2; i += 1) {
    await settle();
    timers.advance(60_000);
  }
  await rejected;
  assert.equal(calls, GIVE_UP_S / 60 + 1);
});
