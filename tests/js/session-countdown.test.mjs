// A crashed broker's session counts down to ZooKeeper's expiry: the fold keeps the deadline
// from the crash record, the countdown model turns it into words (static/js/session-countdown.js).
import assert from 'node:assert/strict';
import {test} from 'node:test';
import {anyCountdown, ownerCountdown, sessionCountdown, sessionTimeoutText} from '../../static/js/session-countdown.js';
import {emptyView, fold} from '../../static/js/model.js';

let seq = 0;
const broker = (id, to_state, detail = {}) => ({v: 1, session_id: 's', seq: seq++, ts_ms: 0, kind: 'broker',
  subject: `broker:${id}`, broker_id: id, to_state, detail});
const crash = (id, expires) => broker(id, 'crashed', {session_id: `0x${id}`, session_timeout_ms: 4000,
  session_expires_ms: expires});

test('the countdown falls to the deadline, then says the expiry is due', () => {
  const expiry = {session: '0x1', timeout_ms: 4000, expires_ms: 10000};
  assert.deepEqual(sessionCountdown(expiry, 6000), {remaining_ms: 4000, due: false, text: 'session expires in 4.0 s'});
  assert.equal(sessionCountdown(expiry, 9750).text, 'session expires in 0.3 s');
  const due = sessionCountdown(expiry, 12000);
  assert.equal(due.due, true);
  assert.equal(due.remaining_ms, 0);
  assert.match(due.text, /timeout passed/);
  assert.equal(sessionCountdown(null, 6000), null);
});

test('while not live, the text names the timeout, not a count taken from the wall clock', () => {
  const c = sessionCountdown({session: '0x1', timeout_ms: 4000, expires_ms: 10000}, null);
  assert.equal(c.remaining_ms, null);
  assert.equal(c.text, 'session left to expire (4.0 s timeout)');
});

test('a crash starts the countdown; the expiry, or a new process, ends it; a clean stop never has one', () => {
  let v = fold([broker(0, 'started', {session_timeout_ms: 4000}), broker(0, 'registered', {session_id: '0x0'}),
    broker(1, 'registered', {session_id: '0x1'}), crash(1, 10000)], emptyView());
  assert.deepEqual(v.brokers['1'].session_expiry, {session: '0x1', timeout_ms: 4000, expires_ms: 10000});
  assert.equal(anyCountdown(v), true);
  assert.deepEqual(ownerCountdown(v, '0x1', 7000), {remaining_ms: 3000, due: false, text: 'session expires in 3.0 s',
    broker: 1});
  assert.equal(ownerCountdown(v, '0x0', 7000), null); // broker 0's session is nobody's countdown
  v = fold([broker(1, 'session_expired', {session_id: '0x1'})], v);
  assert.equal(v.brokers['1'].session_expiry, null);
  assert.equal(anyCountdown(v), false);
  v = fold([crash(0, 20000), broker(0, 'started', {session_timeout_ms: 4000})], v);
  assert.equal(v.brokers['0'].session_expiry, null);
  v = fold([broker(0, 'stopped')], v);
  assert.equal(anyCountdown(v), false);
});

test('a crash of a frozen broker has no deadline to count to', () => {
  const v = fold([broker(2, 'paused'), broker(2, 'crashed', {session_id: '0x2', session_timeout_ms: 4000,
    session_expires_ms: null})], emptyView());
  assert.equal(v.brokers['2'].session_expiry, null);
});

test('the page states the session timeout in use and Kafka default of 18 s', () => {
  assert.equal(sessionTimeoutText(emptyView()), '');
  const v = fold([broker(0, 'started', {session_timeout_ms: 4000})], emptyView());
  const text = sessionTimeoutText(v);
  assert.match(text, /4\.0 s/);
  assert.match(text, /default is 18\.0 s/);
});
