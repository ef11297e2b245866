/**
 * A replay log played as if a server sent it — for developing and testing the page without
 * the server, and for watching a recorded session. Open `/?replay=URL` with options:
 *   snapshot=N  the join's snapshot is the fold up to seq N (default -1: everything is live)
 *   rate=R      records per second (default 40; "all" sends everything in one batch)
 *   chaos=1     batches cross and repeat, and a record now and then is left out, so the page's
 *               ordering, de-duplication and gap fetching are exercised
 * It speaks the protocol's shapes: a snapshot {seq, view}, batches of records, and a records
 * "API" for missing ranges. Faults are refused: a recording cannot change.
 * The log is read with replay-file.js's rules: a damaged log plays up to the damage, and the
 * source says where (`damage`, `lastSeq`); a log the server is still writing
 * (X-Replay-Live: 1) may end in a line on its way, which is left out (`pending`).
 */
import {fold} from './model.js';
import {parseReplayLog} from './replay-file.js';
import {replayHeaders, sameOrigin} from './replay-access.js';

export const READ_ONLY = 'A recorded session cannot change: this is a replay. Start a sandbox to act.';

const BATCHES_PER_SECOND = 15;

export async function replaySource(url, {snapshot = -1, rate = 40, chaos = false} = {}) {
  if (!sameOrigin(url)) throw new Error(`${url} is not on this server: only this server's replays can be played here`);
  const response = await fetch(url, {headers: replayHeaders()});
  if (!response.ok) {
    const reason = await response.json().then((body) => body.error, () => null);
    throw new Error(`cannot load the replay log ${url}: ${reason ?? response.status}`);
  }
  const live = response.headers.get('X-Replay-Live') === '1';
  const parsed = parseReplayLog(await response.arrayBuffer(), {live});
  const header = parsed.header ?? {cluster: {}};
  const records = parsed.records;
  let timer = null;
  let random = 42;
  const chance = (p) => {
    random = (random * 1103515245 + 12345) % 2147483648;
    return random / 2147483648 < p;
  };

  return {
    kind: 'replay',
    label: `replay ${header.lesson_id ?? header.session_id ?? url} (${records.length} records)`,
    cluster: header.cluster ?? {},
    url, header: parsed.header, damage: parsed.damage, lastSeq: parsed.lastSeq, pending: parsed.pending, live,
    readOnly: READ_ONLY,
    async fetchRecords(since, limit) {
      await new Promise((resolve) => setTimeout(resolve, 30));
      const out = records.filter((r) => r.seq >= since).slice(0, limit);
      return {records: out, next: out.length ? out[out.length - 1].seq + 1 : since};
    },
    start({onSnapshot, onRecords, onStatus}) {
      const start = records.findIndex((r) => r.seq > snapshot);
      const rest = start < 0 ? [] : records.slice(start);
      onSnapshot({seq: snapshot, view: fold(records.slice(0, start < 0 ? records.length : start))});
      onStatus?.('replaying');
      if (rate === 'all') {
        onRecords(rest);
        onStatus?.('replay finished');
        return;
      }
      const size = Math.max(1, Math.round(Number(rate) / BATCHES_PER_SECOND));
      let i = 0;
      let held = null;
      timer = setInterval(() => {
        let batch = rest.slice(i, i + size);
        i += size;
        const head = batch.length ? batch[batch.length - 1].seq : undefined;
        if (chaos) {
          if (batch.length > 1 && i < rest.length && chance(0.1)) {
            batch = batch.filter((_, k) => k !== 1); // left out: a later record shows the gap, then it is fetched
          }
          if (chance(0.3)) batch = [...batch, ...rest.slice(Math.max(0, i - 2 * size), i - size)]; // again
          if (held === null && chance(0.3)) {
            held = batch; // this batch crosses the next one
            return;
          }
          if (held !== null) {
            onRecords(batch, head);
            batch = held;
            held = null;
          }
        }
        if (batch.length) onRecords(batch, head);
        if (i >= rest.length && held === null) {
          clearInterval(timer);
          onStatus?.('replay finished');
        }
      }, 1000 / BATCHES_PER_SECOND);
    },
    async fault() {
      return {ok: false, error: READ_ONLY};
    },
    async remove() { this.close(); },
    close() {
      clearInterval(timer);
    },
  };
}
