// Replays on the page: reading a (damaged) log, the replay page's filters and links, the
// main page's replay options, and the store's paced playback of a recorded session.
// Run: node --test tests/js/   (tests/js/test_node_units.py runs it under pytest)
import assert from 'node:assert/strict';
import {test} from 'node:test';
import {fold} from '../../static/js/model.js';
import {RecordStore} from '../../static/js/records.js';
import {FakeTimers} from './fake-timers.mjs';
import {EMPTY, TORN, damageMessage, parseReplayLog} from '../../static/js/replay-file.js';
import {describeSession, linkAt, replayName, replayOptions} from '../../static/js/replay-mode.js';
import {
  apiQuery, choices, filtersFromQuery, localDay, playHref, queryFromFilters, stateText,
} from '../../static/js/replays-list.js';

const HEADER = {kind: 'session', v: 1, session_id: 's', mode: 'lesson', started_ms: Date.UTC(2026, 10, 21, 8, 55),
  app_version: '0.1.0', cluster: {brokers: [0, 1]}, lesson_id: 'failover', class_id: 'c1'};
const record = (seq, extra = {}) => ({v: 1, session_id: 's', seq, ts_ms: 1000 + seq * 40, kind: 'broker',
  subject: `broker:${seq % 2}`, broker_id: seq % 2, to_state: seq % 4 === 3 ? 'crashed' : 'registered', ...extra});
const log = (n) => [HEADER, ...Array.from({length: n}, (_, i) => record(i))].map((x) => JSON.stringify(x)).join('\n') + '\n';

test('an intact log: its header and every record', () => {
  const parsed = parseReplayLog(log(5));
  assert.equal(parsed.damage, null);
  assert.equal(parsed.header.lesson_id, 'failover');
  assert.deepEqual(parsed.records.map((r) => r.seq), [0, 1, 2, 3, 4]);
  assert.equal(parsed.lastSeq, 4);
});

test('a torn last line: every record before it, and where it broke', () => {
  const text = log(5);
  const parsed = parseReplayLog(text.slice(0, -8));
  assert.deepEqual(parsed.damage, {line: 6, reason: TORN});
  assert.equal(parsed.records.length, 4);
  assert.equal(damageMessage(parsed.damage, parsed.lastSeq),
    `This log is damaged at line 6: ${TORN}; showing records up to seq 3.`);
});

test('a live log: a last line on its way is not damage', () => {
  const parsed = parseReplayLog(log(5).slice(0, -8), {live: true});
  assert.equal(parsed.damage, null);
  assert.equal(parsed.pending, true);
  assert.equal(parsed.records.length, 4);
  assert.equal(parseReplayLog('', {live: true}).damage, null, 'a log just opened');
});

test('a corrupt line in the middle stops the replay there, bytes or text', () => {
  const lines = log(6).split('\n');
  lines[3] = '{"v": 1, "seq": ';
  const text = lines.join('\n');
  for (const input of [text, new TextEncoder().encode(text), new TextEncoder().encode(text).buffer]) {
    const parsed = parseReplayLog(input);
    assert.equal(parsed.damage.line, 4);
    assert.match(parsed.damage.reason, /^the line is not JSON/);
    assert.deepEqual(parsed.records.map((r) => r.seq), [0, 1]);
  }
});

test('rules: types, dense seqs, one session, UTF-8', () => {
  const lines = log(4).split('\n');
  const damaged = (i, value) => {
    const copy = [...lines];
    copy[i] = typeof value === 'string' ? value : JSON.stringify(value);
    return parseReplayLog(copy.join('\n')).damage;
  };
  assert.deepEqual(damaged(2, record(1, {seq: 'one'})), {line: 3, reason: "record field 'seq' must be int, got str 'one'"});
  assert.deepEqual(damaged(3, record(5)), {line: 4, reason: 'seq 5 follows 1: records are missing or out of order'});
  assert.deepEqual(damaged(1, record(1)), {line: 2, reason: 'the first record has seq 1, not 0: the records before it are missing'});
  assert.deepEqual(damaged(2, record(1, {session_id: 't'})),
    {line: 3, reason: "the record belongs to session 't', not to this log's 's'"});
  assert.deepEqual(damaged(2, record(1, {isr: [0, '1']})), {line: 3, reason: `record field 'isr' must be list[int], got list [0, '1']`});
  assert.deepEqual(damaged(2, HEADER), {line: 3, reason: 'a second session header: two logs were joined into one file'});
  assert.deepEqual(damaged(2, ''), {line: 3, reason: 'the line is empty'});
  const bytes = new TextEncoder().encode(log(3));
  bytes[bytes.indexOf(0x0a) + 5] = 0xff;
  assert.deepEqual(parseReplayLog(bytes).damage, {line: 2, reason: 'the line is not UTF-8'});
  assert.deepEqual(parseReplayLog('').damage, {line: 1, reason: EMPTY});
  assert.equal(damageMessage({line: 1, reason: EMPTY}, -1), `This log is damaged at line 1: ${EMPTY}; there are no records to show.`);
});

test('the replay page: filters <-> address <-> API query', () => {
  const filters = filtersFromQuery('?mode=lesson&class=c1&since=2026-11-21&until=bogus&colour=red');
  assert.deepEqual(filters, {class: 'c1', mode: 'lesson', since: '2026-11-21'});
  assert.equal(queryFromFilters(filters), '?class=c1&mode=lesson&since=2026-11-21');
  assert.equal(queryFromFilters({}), '');
  const since = localDay('2026-11-21');
  assert.equal(new Date(since).getHours(), 0);
  assert.equal(localDay('2026-11-21', true) - since, 86_400_000 - 1);
  assert.equal(apiQuery({...filters, until: '2026-11-21'}),
    `/api/replays?class=c1&mode=lesson&since=${since}&until=${since + 86_400_000 - 1}`);
  assert.equal(apiQuery({}), '/api/replays');
  assert.deepEqual(choices([{class_id: 'b'}, {class_id: null}, {class_id: 'a'}, {class_id: 'b'}], 'class_id', 'z'), ['a', 'b', 'z']);
  assert.equal(playHref('x-1.jsonl'), '/?replay=/api/replays/x-1.jsonl');
  assert.equal(playHref('x-1.jsonl', 12), '/?replay=/api/replays/x-1.jsonl&seq=12');
  assert.equal(stateText({damage: {line: 4, reason: 'bad'}, live: false}), '⚠ damaged at line 4: bad');
  assert.equal(stateText({damage: null, live: true}), '● recording now');
});

test('the main page: replay options and links at a seq', () => {
  const recorded = replayOptions('?replay=/api/replays/a.jsonl');
  assert.deepEqual([recorded.recorded, recorded.seq, recorded.autoplay, recorded.rate], [true, null, true, 'all']);
  const at = replayOptions('?replay=/api/replays/a.jsonl&seq=42');
  assert.deepEqual([at.seq, at.autoplay], [42, false]);
  assert.equal(replayOptions('?replay=/api/replays/a.jsonl', '#seq=7').seq, 7);
  assert.equal(replayOptions('?replay=/api/replays/a.jsonl&seq=-5').seq, -1);
  assert.equal(replayOptions('?replay=/api/replays/a.jsonl&seq=abc').badSeq, 'abc');
  const dev = replayOptions('?replay=/replays/a.jsonl&rate=all');
  assert.deepEqual([dev.recorded, dev.rate, dev.seq], [false, 'all', null], 'the developers\' replays play as before');
  assert.equal(replayOptions('?replay=/replays/a.jsonl').rate, 40);
  assert.equal(linkAt('http://h/?replay=/api/replays/a.jsonl&seq=3#seq=9', 12), 'http://h/?replay=/api/replays/a.jsonl&seq=12');
  assert.equal(replayName('/api/replays/a-1.jsonl'), 'a-1.jsonl');
  assert.equal(replayName('/replays/a.jsonl'), null);
  assert.equal(describeSession(HEADER), 'Lesson run · lesson failover · class c1 · started 2026-11-21 08:55 UTC · s');
});

test('a recorded session plays one record at a time at 1x, from where it was scrubbed', async () => {
  const {records} = parseReplayLog(log(10));
  const timers = new FakeTimers();
  const store = new RecordStore({timers});
  store.applySnapshot({seq: -1, view: fold([])});
  store.ingest(records);
  assert.equal(store.seq, 9, 'loaded live: the head');
  store.setPaced(true);
  await store.scrubTo(-1);
  assert.equal(store.seq, -1);
  store.play();
  assert.equal(store.mode, 'live');
  assert.equal(store.seq, -1, 'paced: nothing applied at once');
  timers.advance(25 + 1);
  assert.equal(store.seq, 0);
  timers.advance(3 * (25 + 40));
  assert.equal(store.seq, 3);
  assert.deepEqual(store.view, fold(records.slice(0, 4)));
  assert.notEqual(store.view, store.headView, 'the display is not the head view');
  store.pause();
  timers.advance(10_000);
  assert.equal(store.seq, 3);
  store.step();
  assert.equal(store.seq, 4);
  store.goLive();
  assert.equal(store.seq, 9);
  assert.deepEqual(store.view, fold(records));
  store.setPaced(false);
  await store.scrubTo(2);
  store.play();
  assert.equal(store.seq, 9, 'not paced: play jumps to the newest, as for a live cluster');
});
