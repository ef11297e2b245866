/**
 * The main page in replay mode (`/?replay=URL`): what is being replayed and a way back to the
 * list, the log's damage said out loud, and — for a recorded session from the replays API, or
 * whenever the address names a `seq` — watching it like a video: every record is loaded at
 * once, "play" paces them one at a time (the store's paced mode), the address follows the
 * position so it can be shared, and `seq=N` (query or `#seq=N`) opens the session at seq N.
 *
 * The functions above `startReplayMode` are pure (node tests them); it wires them to the DOM.
 */
import {damageMessage} from './replay-file.js';

export const REPLAYS_API = '/api/replays/';
const URL_EVERY_MS = 250; // the address follows the position at most this often

/**
 * The page's replay options from its address: {url, recorded, seq, autoplay, rate, snapshot, chaos}.
 * `seq` is null when the address names none; a recorded session without one starts playing
 * from the beginning (autoplay).
 */
export function replayOptions(search, hash = '') {
  const params = new URLSearchParams(search);
  const url = params.get('replay') ?? '';
  const text = params.get('seq') ?? new URLSearchParams(hash.replace(/^#/, '')).get('seq');
  const seq = text !== null && /^-?\d+$/.test(text.trim()) ? Math.max(-1, Number(text)) : null;
  const recorded = url.startsWith(REPLAYS_API) || text !== null;
  const rate = params.get('rate') ?? (recorded ? 'all' : '40');
  return {
    url, recorded, seq, autoplay: recorded && seq === null, badSeq: text !== null && seq === null ? text : null,
    rate: rate === 'all' ? 'all' : Number(rate), snapshot: Number(params.get('snapshot') ?? -1),
    chaos: params.get('chaos') === '1',
  };
}

/** This page's address at `seq` (the other parameters kept; a `#seq=` fragment gives way). */
export function linkAt(href, seq) {
  const url = new URL(href);
  url.searchParams.set('seq', String(seq));
  url.search = url.search.replaceAll('%2F', '/'); // "/" needs no escape in a query: keep links readable
  if (/^#seq=/.test(url.hash)) url.hash = '';
  return url.toString();
}

/** The log's file name when the replays API serves it, else null. */
export function replayName(url) {
  if (!url.startsWith(REPLAYS_API)) return null;
  const name = decodeURIComponent(url.slice(REPLAYS_API.length).split(/[?#]/)[0]);
  return /^[A-Za-z0-9_-][A-Za-z0-9._-]*\.jsonl$/.test(name) ? name : null;
}

const MODES = {sandbox: 'Sandbox', lesson: 'Lesson run', class: 'Class demo', script: 'Script run'};

/** What is being replayed, in a few words: "Lesson run · lesson x · class y · started …". */
export function describeSession(header, name = null) {
  if (!header) return name ?? 'a replay log without a session header';
  const parts = [MODES[header.mode] ?? header.mode];
  if (header.lesson_id) parts.push(`lesson ${header.lesson_id}`);
  if (header.class_id) parts.push(`class ${header.class_id}`);
  if (header.student) parts.push(`student ${header.student}`);
  if (Number.isInteger(header.started_ms)) {
    parts.push(`started ${new Date(header.started_ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`);
  }
  parts.push(header.session_id);
  return parts.join(' · ');
}

/**
 * Show and drive a replay. store: the record store (already fed by `source`); source: the
 * replay source (header, damage, lastSeq, pending); alerts: {error, info}; options:
 * replayOptions(); getSource(): the page's source now — when the student starts a sandbox
 * instead, replay mode ends (no more pacing, bar or address following).
 */
export function startReplayMode({store, source, alerts, options, getSource = () => source, doc = document,
  win = window}) {
  const bar = buildBar(doc, source, options);
  if (options.badSeq !== null) alerts.error(`“seq=${options.badSeq}” is not a record number: showing the session from the start.`);
  if (source.damage) {
    bar.dataset.damageLine = String(source.damage.line);
    alerts.error(damageMessage(source.damage, source.lastSeq));
  } else if (source.pending || source.live) {
    alerts.info(`This session is still being recorded: showing records up to seq ${source.lastSeq}. Reload for more.`);
  }
  const endButton = doc.querySelector('.pb-live');
  let stopped = false;
  const unsubscribe = [store.on('records', (e) => {
    if (!e.reset || getSource() === source) return;
    stopped = true; // another source (a sandbox): replay mode is over
    unsubscribe.forEach((off) => off());
    store.setPaced(false);
    bar.remove();
    if (endButton && options.recorded) endButton.textContent = 'Go live';
  })];
  if (!options.recorded) return {bar};

  store.setPaced(true);
  if (endButton) {
    endButton.textContent = 'End »';
    endButton.setAttribute('aria-label', 'Jump to the last record');
  }
  const link = bar.querySelector('.replay-link');
  let timer = null;
  const follow = () => {
    if (timer !== null || stopped) return;
    timer = win.setTimeout(() => {
      timer = null;
      if (stopped) return;
      const href = linkAt(win.location.href, store.seq);
      if (href !== win.location.href) win.history.replaceState(win.history.state, '', href);
      link.href = href;
      link.textContent = `Link to #${store.seq}`;
    }, URL_EVERY_MS);
  };
  unsubscribe.push(store.on('view', follow), store.on('mode', follow));
  bar.querySelector('.replay-copy').addEventListener('click', async () => {
    const href = linkAt(win.location.href, store.seq);
    try {
      await win.navigator.clipboard.writeText(href);
      alerts.info(`Link to seq ${store.seq} copied.`);
    } catch {
      alerts.info(`Copy this link: ${href}`);
    }
  });
  store.scrubTo(options.seq ?? -1).then(() => {
    if (options.autoplay && !stopped) store.play();
  });
  follow();
  return {bar};
}

function buildBar(doc, source, options) {
  const bar = doc.createElement('nav');
  bar.className = 'replay-bar';
  bar.setAttribute('aria-label', 'Replay');
  const name = replayName(options.url);
  if (name) bar.dataset.replayName = name;
  const back = doc.createElement('a');
  back.className = 'replay-back';
  back.href = '/replays';
  back.textContent = '← All replays';
  const what = doc.createElement('span');
  what.className = 'replay-what';
  what.textContent = `Replaying: ${describeSession(source.header, name ?? options.url)}`;
  bar.append(back, what);
  if (options.recorded) {
    const link = doc.createElement('a');
    link.className = 'replay-link';
    link.href = linkAt(doc.location.href, options.seq ?? -1);
    link.textContent = `Link to #${options.seq ?? -1}`;
    const copy = doc.createElement('button');
    copy.type = 'button';
    copy.className = 'replay-copy';
    copy.textContent = 'Copy link at this seq';
    bar.append(link, copy);
  }
  if (name) {
    const exported = doc.createElement('a');
    exported.className = 'replay-export';
    exported.href = options.url;
    exported.setAttribute('download', name);
    exported.textContent = 'Export';
    bar.append(exported);
  }
  const header = doc.querySelector('header.top');
  if (header) header.after(bar);
  else doc.body.prepend(bar);
  return bar;
}
