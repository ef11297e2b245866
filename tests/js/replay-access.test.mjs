// Replays open with this browser's sandbox tokens; ?replay= plays only this server's logs.
import assert from 'node:assert/strict';
import {test} from 'node:test';
import {rememberToken, replayHeaders, sameOrigin} from '../../static/js/replay-access.js';

function storage(entries = {}) {
  const map = new Map(Object.entries(entries));
  return {getItem: (k) => (map.has(k) ? map.get(k) : null), setItem: (k, v) => map.set(k, String(v))};
}

test('the tokens of every sandbox this browser made are sent, the instructor token too', () => {
  const local = storage({'kclab.sandbox': JSON.stringify({id: 's1', token: 'now'}),
    'kclab.student': JSON.stringify({sandbox_token: 'copy'})});
  rememberToken('old', local);
  rememberToken('older', local);
  const headers = replayHeaders(local, storage({'kclab.instructor.token': 'teach'}));
  assert.deepEqual(headers['X-Replay-Tokens'].split(',').sort(), ['copy', 'now', 'old', 'older']);
  assert.equal(headers['X-Instructor-Token'], 'teach');
  assert.deepEqual(replayHeaders(storage(), storage()), {}, 'a fresh browser sends nothing');
});

test('at most 50 tokens are kept, the newest first', () => {
  const local = storage();
  for (let n = 0; n < 60; n += 1) rememberToken(`t${n}`, local);
  const kept = JSON.parse(local.getItem('kclab.tokens'));
  assert.equal(kept.length, 50);
  assert.equal(kept[0], 't59');
});

test('only this server (or a file the student chose) can be replayed', () => {
  const origin = 'http://127.0.0.1:5000';
  assert.ok(sameOrigin('/api/replays/s-1.jsonl', origin));
  assert.ok(sameOrigin(`blob:${origin}/1234`, origin));
  assert.ok(!sameOrigin('https://evil.example/log.jsonl', origin));
  assert.ok(!sameOrigin('//evil.example/log.jsonl', origin));
  assert.ok(!sameOrigin('javascript:alert(1)', origin));
});
