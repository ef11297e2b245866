/**
 * Is the server keeping up with the class? The instructor's page asks every few seconds
 * (GET /api/classes/<id>/load, web/server_load.py) and says in words what changed over the last
 * minute: students' actions the server refused ("overloaded, try again in 2 s"), and brokers'
 * ZooKeeper connections dropped and sessions expired because the server ran late — which the
 * students see in those brokers' records ("Nobody asked for this…"). The instructor is the one who
 * can ask the class to act less often, or hand out fewer copies (README, "Sizing a class server").
 * The state is a word and a sentence, never only a colour.
 *
 * Testable DOM: the element's data-state: "ok" | "busy" | "overloaded" | "unknown", and its text.
 */
import {plural} from '../words.js';

export const POLL_MS = 5000;
export const WINDOW_MS = 60000;

/** What a minute of samples ({t: ms, load}) says, the newest last: {state, text}. Counters are
 *  since each worker started; a worker gone (its counts lost) is not a negative change. */
export function describeLoad(samples) {
  const latest = samples.at(-1);
  if (!latest) return {state: 'unknown', text: 'Server load: not asked yet.'};
  const now = latest.load;
  const base = samples.find((s) => latest.t - s.t <= WINDOW_MS)?.load ?? now;
  const change = (name) => Math.max(0, (now[name] ?? 0) - (base[name] ?? 0));
  const refused = change('refused'), dropped = change('zk_dropped'), expired = change('zk_expired');
  const workers = now.workers?.length ?? 1;
  const limit = Math.max(0, ...(now.workers ?? []).map((w) => w.zk_limit_ms ?? 0));
  const lagS = (now.zk_lag_ms ?? 0) / 1000;
  const late = lagS >= 0.1 ? ` its brokers' ZooKeeper heart-beats run ${lagS.toFixed(1)} s late;` : '';
  const lost = dropped || expired
    ? ` in the last minute ${plural(dropped, 'broker connection')} dropped and ${plural(expired, 'session')} expired `
      + 'because it ran late (the students\' records say so);'
    : '';
  const running = `${now.sandboxes ?? 0} of ${now.cap ?? '?'} sandboxes running`
    + (workers > 1 ? ` on ${workers} workers` : '');
  if (now.shedding || refused) {
    const refusing = refused ? ` it refused ${plural(refused, 'student action')} in the last minute`
      + ' (each told to try again in 2 s);' : ' it is refusing students\' new actions right now;';
    return {state: 'overloaded', text: `Server overloaded (${running}):${refusing}${late}${lost}`
      + ' ask the class to act less often, or run fewer sandboxes on this server.'};
  }
  if (dropped || expired || (limit && now.zk_lag_ms >= limit / 2)) {
    return {state: 'busy', text: `Server busy (${running}):${late}${lost} it may soon refuse students' actions.`};
  }
  return {state: 'ok', text: `Server keeping up: ${running}.`};
}

/** Polls ``fetchLoad()`` while started and shows what ``describeLoad`` says in ``element``. */
export function createServerLoadView(element, {fetchLoad, timers = globalThis, clock = () => Date.now()} = {}) {
  let samples = [];
  let timer = null;
  let running = false;

  function show({state, text}) {
    element.dataset.state = state;
    element.textContent = text;
    element.hidden = false;
  }

  async function poll() {
    timer = null;
    try {
      const load = await fetchLoad();
      const t = clock();
      samples = [...samples.filter((s) => t - s.t <= WINDOW_MS + POLL_MS), {t, load}];
      if (running) show(describeLoad(samples));
    } catch (error) {
      if (running) show({state: 'unknown', text: `Server load unknown: ${error.message}`});
    }
    if (running) timer = timers.setTimeout(poll, POLL_MS);
  }

  return {
    start() {
      if (running) return;
      running = true;
      poll();
    },
    stop() {
      running = false;
      if (timer !== null) timers.clearTimeout(timer);
      timer = null;
      samples = [];
      element.hidden = true;
    },
  };
}
