// The record store: ordering, duplicates, gaps, reconnects, playback and scrubbing.
// Run: node --test tests/js/   (tests/js/test_node_units.py runs it under pytest)
import assert from 'node:assert/strict';
import {test} from 'node:test';
import {emptyView, fold} from '../../static/js/model.js';
import {RecordStore} from '../../static/js/records.js';
import {FakeTimers} from './fake-timers.mjs';

const flush = () => new Promise((resolve) => setImmediate(resolve));

/** Records that change something visible: a broker per record, and events with causes. */
function makeRecords(n) {
  const out = [];
  for (let seq = 0; seq < n; seq += 1) {
    if (seq % 3 === 0) {
      out.push({v: 1, session_id: 's', seq, ts_ms: 1000 + seq * 10, kind: 'broker', subject: `broker:${seq % 5}`,
        broker_id: seq % 5, to_state: seq % 2 ? 'crashed' : 'started'});
    } else {
      out.push({v: 1, session_id: 's', seq, ts_ms: 1000 + seq * 10, kind: 'controller_event',
        subject: `event:BrokerChange#${seq}`, broker_id: 0, op: 'BrokerChange',
        to_state: seq % 3 === 1 ? 'queued' : 'processing', cause_seq: seq - 1});
    }
  }
  return out;
}

function store(records, options = {}) {
  const timers = new FakeTimers();
  const fetched = [];
  const s = new RecordStore({
    timers,
    gapWaitMs: 1000,
    checkpointEvery: 10,
    fetchRecords: async (since, limit) => {
      fetched.push([since, limit]);
      return {records: records.filter((r) => r.seq >= since).slice(0, limit), next: since + limit};
    },
    ...options,
  });
  return {s, timers, fetched};
}

const snapshotAt = (records, seq) => ({seq, view: fold(records.slice(0, seq + 1))});

test('records in order are applied at once and the cursor follows the head', () => {
  const records = makeRecords(30);
  const {s} = store(records);
  s.reset({seq: -1, view: emptyView()});
  s.ingest(records);
  assert.equal(s.head, 29);
  assert.equal(s.seq, 29);
  assert.deepEqual(s.view, fold(records));
});

test('duplicates are dropped and out-of-order records wait for the gap to fill', () => {
  const records = makeRecords(10);
  const {s} = store(records);
  s.reset(snapshotAt(records, 2));
  s.ingest([records[5], records[3], records[3], records[1]]);
  assert.equal(s.head, 3);
  s.ingest([records[4], records[5]]);
  assert.equal(s.head, 5);
  assert.equal(s.duplicates, 3); // 3 twice, 1 (before the snapshot), 5 again
  assert.deepEqual(s.slice(3, 5).map((r) => r.seq), [3, 4, 5]);
  assert.deepEqual(s.view, fold(records.slice(0, 6)));
});

test('a gap that does not fill within a second is fetched over HTTP', async () => {
  const records = makeRecords(10);
  const {s, timers, fetched} = store(records);
  s.reset({seq: -1, view: emptyView()});
  s.ingest([records[0], records[1], records[4]]);
  assert.equal(s.head, 1);
  assert.deepEqual(s.status().gap, {from: 2, to: 3});
  timers.advance(999);
  assert.deepEqual(fetched, []);
  timers.advance(1);
  await flush();
  assert.deepEqual(fetched, [[2, 2]]);
  assert.equal(s.head, 4);
  assert.equal(s.status().gap, null);
});

test('a batch whose last records are missing is caught by its head, with no later record needed', async () => {
  const records = makeRecords(10);
  const {s, timers, fetched} = store(records);
  s.reset({seq: -1, view: emptyView()});
  s.ingest(records.slice(0, 3), 5); // the server sent 0..5; 3..5 never came
  assert.equal(s.head, 2);
  assert.deepEqual(s.status().gap, {from: 3, to: 5});
  timers.advance(1000);
  await flush();
  assert.deepEqual(fetched, [[3, 3]]);
  assert.equal(s.head, 5);
  assert.deepEqual(s.view, fold(records.slice(0, 6)));
});

test('a gap filled by the socket in time is not fetched', () => {
  const records = makeRecords(5);
  const {s, timers, fetched} = store(records);
  s.reset({seq: -1, view: emptyView()});
  s.ingest([records[0], records[2]]);
  timers.advance(500);
  s.ingest([records[1]]);
  timers.advance(2000);
  assert.deepEqual(fetched, []);
  assert.equal(s.head, 2);
});

test('a rejoin whose snapshot is ahead fetches the missing records at once; nothing lost, nothing twice', async () => {
  const records = makeRecords(40);
  const {s, timers, fetched} = store(records);
  s.reset(snapshotAt(records, 9));
  s.ingest(records.slice(10, 15));
  // disconnected; meanwhile 15..29 happened; the new join's snapshot is at 29, then live records follow
  s.applySnapshot(snapshotAt(records, 29));
  s.ingest(records.slice(30, 33));
  timers.advance(0);
  await flush();
  assert.deepEqual(fetched[0], [15, 15]);
  assert.equal(s.head, 32);
  assert.deepEqual(s.slice(10, 32).map((r) => r.seq), Array.from({length: 23}, (_, i) => i + 10));
  assert.deepEqual(s.view, fold(records.slice(0, 33)));
  // a rejoin whose snapshot is behind changes nothing
  s.applySnapshot(snapshotAt(records, 20));
  s.ingest(records.slice(21, 35));
  assert.equal(s.head, 34);
  assert.equal(s.count, 25);
});

test('records that come before the first snapshot are kept if they follow it', () => {
  const records = makeRecords(8);
  const {s} = store(records);
  s.ingest([records[6], records[5], records[2]]);
  s.reset(snapshotAt(records, 4));
  assert.equal(s.head, 6);
});

test('paused: the view stays, step applies one record, play catches up', () => {
  const records = makeRecords(20);
  const {s} = store(records);
  s.reset({seq: -1, view: emptyView()});
  s.ingest(records.slice(0, 5));
  s.pause();
  s.ingest(records.slice(5, 10));
  assert.equal(s.mode, 'paused');
  assert.equal(s.seq, 4);
  assert.equal(s.head, 9);
  assert.deepEqual(s.view, fold(records.slice(0, 5)));
  s.step();
  assert.equal(s.seq, 5);
  assert.deepEqual(s.view, fold(records.slice(0, 6)));
  assert.deepEqual(s.headView, fold(records.slice(0, 10)));
  s.play();
  assert.equal(s.mode, 'live');
  assert.equal(s.seq, 9);
  assert.deepEqual(s.view, fold(records.slice(0, 10)));
});

test('slow motion applies one record at a time, at the pace of the speed', () => {
  const records = makeRecords(6);
  const {s, timers} = store(records);
  s.reset({seq: -1, view: emptyView()});
  s.setSpeed(1 / 10);
  const views = [];
  s.on('view', (e) => views.push(e.seq));
  s.ingest(records);
  assert.equal(s.seq, -1);
  timers.advance(249); // (25 ms + no gap) * 10 for the first record
  assert.equal(s.seq, -1);
  timers.advance(1);
  assert.equal(s.seq, 0);
  timers.advance(350); // (25 + 10 ms between records) * 10
  assert.equal(s.seq, 1);
  timers.advance(10_000);
  assert.equal(s.seq, 5);
  assert.deepEqual(views, [0, 1, 2, 3, 4, 5]);
  assert.deepEqual(s.view, fold(records));
  s.setSpeed(1);
  s.ingest(makeRecords(8).slice(6));
  assert.equal(s.seq, 7);
});

test('scrubbing back folds from the nearest checkpoint; before the snapshot it fetches history', async () => {
  const records = makeRecords(60);
  const {s, fetched} = store(records);
  s.reset(snapshotAt(records, 24));
  s.ingest(records.slice(25));
  assert.equal(s.minSeq, 24);
  await s.scrubTo(41);
  assert.equal(s.mode, 'scrubbed');
  assert.deepEqual(s.view, fold(records.slice(0, 42)));
  s.ingest([...makeRecords(62).slice(60)]);
  assert.equal(s.seq, 41, 'new records do not move a scrubbed cursor');
  await s.scrubTo(3);
  assert.deepEqual(fetched, [[0, 25]]);
  assert.equal(s.minSeq, -1);
  assert.equal(s.first, 0);
  assert.deepEqual(s.view, fold(records.slice(0, 4)));
  await s.scrubTo(-1);
  assert.deepEqual(s.view, emptyView());
  s.goLive();
  assert.equal(s.mode, 'live');
  assert.equal(s.seq, 61);
  assert.deepEqual(s.view, fold(makeRecords(62)));
});

test('without an API, scrubbing stops at the snapshot', async () => {
  const records = makeRecords(30);
  const {s} = store(records, {fetchRecords: null});
  s.reset(snapshotAt(records, 10));
  s.ingest(records.slice(11));
  await s.scrubTo(0);
  assert.equal(s.seq, 10);
  assert.deepEqual(s.view, fold(records.slice(0, 11)));
});

test('consequences: the records whose cause_seq is a record', () => {
  const records = makeRecords(10);
  const {s} = store(records);
  s.reset({seq: -1, view: emptyView()});
  s.ingest(records);
  assert.deepEqual(s.consequences(0), [1]);
  assert.deepEqual(s.consequences(1), [2]);
});

test('a gap the server cannot fill ends in a restart from its snapshot, with an error', async () => {
  const records = makeRecords(20);
  const errors = [];
  const {s, timers} = store(records, {fetchRecords: async () => ({records: [], next: 0})});
  s.on('error', (e) => errors.push(e.message));
  s.reset(snapshotAt(records, 2));
  s.applySnapshot(snapshotAt(records, 10));
  s.ingest(records.slice(11, 13));
  for (let i = 0; i < 5; i += 1) {
    timers.advance(1000);
    await flush();
  }
  assert.equal(s.head, 12);
  assert.ok(errors.some((m) => m.includes('could not be fetched')));
  assert.deepEqual(s.view, fold(records.slice(0, 13)));
});

test('records that arrive before a rejoin\'s snapshot do not delay the fetch of the range it reveals', async () => {
  const records = makeRecords(30);
  const {s, timers, fetched} = store(records);
  s.reset(snapshotAt(records, 5));
  s.ingest(records.slice(20, 22)); // the catch-up batch comes before the join's acknowledgement
  s.applySnapshot(snapshotAt(records, 19));
  timers.advance(0);
  await flush();
  assert.deepEqual(fetched, [[6, 14]]);
  assert.equal(s.head, 21);
  assert.deepEqual(s.view, fold(records.slice(0, 22)));
});

test('the moment shown: live, the server\'s clock now; paused or replaying, the shown record\'s time', async () => {
  // This browser's clock is 60 s behind the server's: a countdown against it would be a minute off.
  const records = makeRecords(10).map((r) => ({...r, ts_ms: 100_000 + r.seq * 10}));
  const timers = new FakeTimers();
  timers.now = 40_000;
  const {s} = store(records, {timers, clock: () => timers.now});
  s.reset({seq: -1, view: emptyView()});
  assert.deepEqual(s.moment(), {ms: null, running: false}); // nothing received: no clock to read
  timers.now = 40_050;
  s.ingest(records.slice(0, 6)); // the newest, 100_050, arrives at 40_050 here
  assert.deepEqual(s.moment(), {ms: 100_050, running: true});
  timers.now = 41_050;
  assert.deepEqual(s.moment(), {ms: 101_050, running: true}); // it runs with this browser's clock
  s.ingest(records.slice(6, 7)); // arrived late (100_060 at 41_050): it cannot move the offset back
  assert.deepEqual(s.moment(), {ms: 101_050, running: true});
  s.pause();
  assert.deepEqual(s.moment(), {ms: 100_060, running: false}); // paused: the time of what is shown
  await s.scrubTo(2);
  assert.deepEqual(s.moment(), {ms: 100_020, running: false});
  s.setPaced(true); // a recorded session playing back: its own time, never today's clock
  s.play();
  assert.equal(s.moment().running, false);
  assert.equal(s.moment().ms, records[s.seq].ts_ms);
});
