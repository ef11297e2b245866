/**
 * The page's wiring: a source of records (the server's sandbox, or a replay log with
 * `?replay=URL`) feeds the record store; the views draw the store's view once per animation
 * frame, however many records arrived since the last one; controls act through `act`.
 * The page root (<body id="app">) carries data-seq (the last applied seq) and data-mode.
 */
import {Api} from './api.js';
import {choose, createControls} from './controls.js';
import {createBusyNotice} from './controls/busy-notice.js';
import {RecordStore} from './records.js';
import {replaySource} from './replay-source.js';
import {replayOptions, startReplayMode} from './replay-mode.js';
import {openSandbox, rememberSandbox, sandboxSource} from './sandbox.js';
import {TeachingApi} from './teaching-api.js';
import {createClusterView} from './views/cluster.js';
import {createControllerView} from './views/controller.js';
import {createLessonView} from './views/lesson.js';
import {createPartitionsView} from './views/partitions.js';
import {mountProtocol} from './views/protocol.js';
import {createTimelineView} from './views/timeline.js';
import {createZookeeperView} from './views/zookeeper.js';
import {zookeeperStatus} from './zk-status.js';
import {maybeWelcome} from './welcome.js';

const ANIMATE_AT_MOST = 60; // more records than this in one frame: jump, do not animate
const AUTO_HISTORY = 20000; // a joining page fetches the records before its snapshot if fewer than this

const api = new Api();
const teaching = new TeachingApi(); // lessons and classes
const store = new RecordStore();
const root = document.body;
const $ = (id) => document.getElementById(id);
let source = null;
let vocabulary = null;
let frame = null;
let pending = {jumped: true, applied: 0, records: []};
const KEEP_APPLIED = 500; // records handed to the views per frame (for one-off effects), the newest
// A new sandbox asked of a busy server waits for a place, saying so (a boot's, "New sandbox…", a lesson's).
const busy = createBusyNotice($('busy'), {onShow: () => status('waiting for a place on the server…')});
const waitForRoom = (attempt) => busy.retrying(attempt);

const controls = createControls({
  palette: $('palette'), playback: $('playback'), errors: $('errors'), infos: $('infos'),
  settingsButton: $('settings-button'), helpButton: $('help-button'),
}, {store, act, getCluster: () => source?.cluster ?? null, getVocabulary: () => vocabulary, createSandbox,
  getLock: () => source?.readOnly ?? null});

const views = [ // the timeline first: it sets a scroll offset, which lays out its (contained) list
  createTimelineView($('timeline'), {store, invalidate, onScrub: (seq) => store.scrubTo(seq)}),
  createClusterView($('cluster'), {onBrokerClick: (id, element) => controls.openBrokerMenu(id, element)}),
  createPartitionsView($('partitions')),
  createControllerView($('controllers')),
  createZookeeperView($('zookeeper')),
  createLessonView($('lesson'), {teaching, api, store, getSource: () => source, switchSandbox, waitForRoom,
    alerts: controls.alerts}), // last: it highlights what the views above drew
];
// Kafka's rules and the space-time diagram (views/protocol.js), before the lesson panel, which highlights them.
views.splice(-1, 0, ...mountProtocol(document.querySelector('main.layout'), {store, invalidate, timeline: views[0]}));

store.on('view', (e) => {
  pending.jumped ||= e.jumped;
  pending.applied += e.applied.length;
  pending.records = e.jumped ? [] : [...pending.records, ...e.applied].slice(-KEEP_APPLIED);
  invalidate();
});
store.on('records', invalidate);
store.on('mode', invalidate);
store.on('error', (e) => controls.alerts.error(e.message));
store.on('status', (s) => {
  $('gap').textContent = s.gap ? `waiting for records ${s.gap.from}–${s.gap.to}${s.fetching ? ' (fetching)' : ''}` : '';
});

/** Ask for one render on the next animation frame (many calls, one render). */
function invalidate() {
  if (frame === null) frame = requestAnimationFrame(draw);
}

const stats = {draws: 0, drawMs: 0, maxDrawMs: 0, ingestMs: 0, maxIngestMs: 0, views: []}; // ms; views: per view, then controls

function draw() {
  frame = null;
  const started = performance.now();
  const ctx = {
    seq: store.seq, head: store.head, mode: store.mode, speed: store.speed, cluster: source?.cluster ?? null,
    moment: store.moment(), // the time the view shows, on the server's clock (countdowns)
    jumped: pending.jumped, animate: !pending.jumped && pending.applied <= ANIMATE_AT_MOST && !document.hidden,
    applied: pending.records, invalidate,
  };
  pending = {jumped: false, applied: 0, records: []};
  const view = store.view;
  views.forEach((v, i) => {
    const t = performance.now();
    v.render(view, ctx);
    stats.views[i] = (stats.views[i] ?? 0) + performance.now() - t;
  });
  const t = performance.now();
  controls.render();
  stats.views[views.length] = (stats.views[views.length] ?? 0) + performance.now() - t;
  root.dataset.seq = String(store.seq);
  root.dataset.mode = store.mode;
  const took = performance.now() - started;
  stats.draws += 1;
  stats.drawMs += took;
  stats.maxDrawMs = Math.max(stats.maxDrawMs, took);
}

/** Carry out a fault; while paused or scrubbed back, ask first whether to return to live. */
async function act(op, fields, label = op) {
  if (!source) return null;
  if (!store.isLive()) {
    const where = `${store.mode === 'paused' ? 'paused' : 'looking at the past'}, at #${store.seq} of ${store.head}`;
    const choice = await choose('Return to live first?',
      `You are ${where}. “${label}” acts on the cluster as it is now.`,
      [{value: 'live', label: 'Return to live, then act'}, {value: 'stay', label: 'Act, and stay here'}]);
    if (choice === null) return null;
    if (choice === 'live') store.goLive();
  }
  let answer;
  try {
    answer = await source.fault(op, fields);
  } catch (error) {
    controls.alerts.error(`${label} failed: ${error.message}`);
    return null;
  }
  if (answer?.ok) controls.alerts.info(`${label}: ${answer.message ?? 'done'}`);
  else if (answer?.unanswered) controls.alerts.error(`${label}: ${answer.error}`);
  else controls.alerts.error(`${label} was refused: ${answer?.error ?? 'no reason given'}`);
  return answer;
}

function status(text) {
  $('connection').textContent = text;
}

function openWhenThereIsRoom(options = {}) {
  return busy.during((onWait) => openSandbox(api, {...options, onWait}));
}

function startSource(next) {
  source?.close();
  source = next;
  store.clear();
  store.setFetcher(next.fetchRecords);
  $('source-label').textContent = next.label;
  next.start({
    onSnapshot: (snapshot) => {
      const first = !store.ready;
      store.applySnapshot(snapshot);
      // A short history is fetched at once, so the timeline (and every cause) goes back to seq 0.
      if (first && snapshot.seq >= 0 && snapshot.seq < AUTO_HISTORY) store.loadHistory();
    },
    onRecords: (records, head) => {
      const started = performance.now();
      store.ingest(records, head);
      const took = performance.now() - started;
      stats.ingestMs += took;
      stats.maxIngestMs = Math.max(stats.maxIngestMs, took);
    },
    onStatus: status,
    onJoinError: (message) => joinFailed(message),
    onConnection: connection,
    onZookeeper: zookeeper.update,
  });
  invalidate();
}

let lost = false;

/** A lost connection is an alert (once, until it is back); its return is a note. */
function connection(up, message) {
  if (!up && !lost) controls.alerts.error(message);
  if (up && lost) controls.alerts.info('Connected again: the page fetched what it missed.');
  lost = !up;
}

async function joinFailed(message) {
  controls.alerts.error(`Could not join the sandbox: ${message}`);
  if (source?.kind !== 'sandbox') return;
  try {
    const sandbox = await openWhenThereIsRoom(); // gone from the server? then this makes a new one
    if (sandbox.id !== source.id) {
      controls.alerts.info(`Started a new sandbox (${sandbox.id}).`);
      startSource(sandboxSource(api, await socketIo(), sandbox));
    }
  } catch (error) {
    controls.alerts.error(`Could not start a sandbox: ${error.message}`);
  }
}

/** A new sandbox with the settings form's shape (the old one is deleted). */
async function createSandbox(cluster) {
  status('creating a sandbox…');
  try {
    const old = source;
    const sandbox = await openWhenThereIsRoom({cluster, fresh: true});
    if (old?.kind === 'sandbox') old.remove();
    startSource(sandboxSource(api, await socketIo(), sandbox));
    controls.alerts.info(`New sandbox ${sandbox.id}: brokers ${sandbox.cluster?.brokers?.join(', ') ?? '?'}.`);
  } catch (error) {
    status('no sandbox');
    controls.alerts.error(`Could not create the sandbox: ${error.message}`);
  }
}

/** Show another sandbox of this browser's (a walkthrough rewound or copied): kept for reloads. */
async function switchSandbox(sandbox) {
  rememberSandbox(sandbox);
  startSource(sandboxSource(api, await socketIo(), sandbox));
}

async function loadVocabulary() {
  vocabulary = await api.vocabulary().catch((error) => {
    controls.alerts.error(`Could not load the fault vocabulary: ${error.message}`);
    return null;
  });
  invalidate();
}

// Pages that are the main page plus panels of their own: the module picks the source.
const TEACHING_PAGES = {'/join': './class-student.js', '/instructor': './class-instructor.js'};

async function socketIo() {
  const module = await import('/vendor/socket.io.mjs');
  return module.io;
}

async function boot() {
  const params = new URLSearchParams(window.location.search);
  try {
    if (params.has('replay')) { // a recorded session: replay-mode.js
      const options = replayOptions(window.location.search, window.location.hash);
      const replay = await replaySource(options.url, options).catch((error) => {
        status('no replay');
        controls.alerts.error(`Could not open the replay: ${error.message}`);
        return null;
      });
      if (!replay) return;
      startSource(replay);
      startReplayMode({store, source: replay, alerts: controls.alerts, options, getSource: () => source});
      return;
    }
    const teachingPage = TEACHING_PAGES[window.location.pathname];
    if (teachingPage) {
      const page = await import(teachingPage);
      await page.boot({api, teaching, store, controls, startSource, status, invalidate, socketIo, loadVocabulary,
        getSource: () => source});
      return;
    }
    status('opening the sandbox…');
    // The vocabulary first: the broker menu asks it when each fault applies.
    const [sandbox, io] = await Promise.all([openWhenThereIsRoom(), socketIo(), loadVocabulary()]);
    startSource(sandboxSource(api, io, sandbox));
    if (!sandbox.lesson) {
      maybeWelcome({teaching, api, alerts: controls.alerts, before: $('lesson')});
    }
  } catch (error) {
    status('no sandbox');
    controls.alerts.error(`Could not open a sandbox: ${error.message}`);
  }
}

const zookeeper = zookeeperStatus({banner: $('zk-banner')});
zookeeper.check();

// For the console and for browser tests: the store, act, time spent (ms), the current source.
window.kclab = {store, act, stats, get source() { return source; }};
boot();
