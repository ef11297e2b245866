// The class link hands a class page the `sandbox_gone` of the session it follows (a worker died), and a
// fault whose answer never came is said to be unanswered (it may still be carried out), not refused.
import assert from 'node:assert/strict';
import {test} from 'node:test';
import {classSource, connectClass} from '../../static/js/class-link.js';
import {connectSandbox, unanswered} from '../../static/js/socket.js';

/** A stand-in for socket.io's client: handlers by event; `join_class` answered at once. */
function fakeIo(answer) {
  const handlers = {};
  const socket = {
    on(event, handler) { handlers[event] = handler; },
    timeout() { return {emit: (event, data, ack) => ack(null, answer)}; },
    close() {},
  };
  return {io: () => socket, fire: (event, payload) => handlers[event]?.(payload)};
}

function followed(session) {
  const {io, fire} = fakeIo({ok: true, class: {session}, snapshot: {seq: 3, view: {}}});
  const link = connectClass(io, {classId: 'c1', token: 't', onJoined() {}, onEvent() {}});
  const seen = {status: [], errors: []};
  const source = classSource(link, {teaching: {}, classId: 'c1', token: 't', session, label: 'class'});
  source.start({onRecords() {}, onSnapshot() {}, onStatus: (s) => seen.status.push(s),
    onJoinError: (e) => seen.errors.push(e)});
  return {fire, seen, source};
}

test("the followed session's sandbox_gone reaches the page with the server's words", () => {
  const {fire, seen} = followed('class-s1');
  fire('sandbox_gone', {sandbox: 'class-s1', error: 'the server process holding this sandbox stopped'});
  assert.equal(seen.status.at(-1), 'gone');
  assert.deepEqual(seen.errors, ['the server process holding this sandbox stopped']);
});

test("another sandbox's sandbox_gone, or one after the page stopped following, is ignored", () => {
  const {fire, seen, source} = followed('class-s1');
  fire('sandbox_gone', {sandbox: 'sandbox-other', error: 'x'});
  source.close();
  fire('sandbox_gone', {sandbox: 'class-s1', error: 'x'});
  assert.deepEqual(seen.errors, []);
  assert.ok(!seen.status.includes('gone'));
});

/** A socket whose acks never come: socket.io calls the ack with a timeout error instead. */
function silentIo() {
  const socket = {
    on() {},
    timeout() { return {emit: (event, data, ack) => ack(new Error('operation has timed out'))}; },
    close() {},
  };
  return () => socket;
}

test("a class fault the server did not answer in time says it may still be carried out, not that it was refused", async () => {
  const link = connectClass(silentIo(), {classId: 'c1', token: 't', onJoined() {}, onEvent() {}});
  const answer = await link.fault('crash', {broker: 1});
  assert.equal(answer.ok, false);
  assert.equal(answer.unanswered, true);
  assert.match(answer.error, /within 10 s\. It may still carry it out: watch the records/);
});

test("a sandbox fault the server did not answer in time resolves the same way (no 'failed')", async () => {
  const link = connectSandbox(silentIo(), {sandbox: 's1', token: 't', onSnapshot() {}, onRecords() {}});
  const answer = await link.fault('crash', {broker: 1});
  assert.deepEqual(answer, unanswered());
  assert.equal(answer.unanswered, true);
});

test("an answer that did come is passed on as it is", async () => {
  const {io} = fakeIo({ok: true, message: 'broker 1 crashed', seq: 7});
  const answer = await connectSandbox(io, {sandbox: 's1', token: 't', onSnapshot() {}, onRecords() {}}).fault('crash', {});
  assert.deepEqual(answer, {ok: true, message: 'broker 1 crashed', seq: 7});
});
