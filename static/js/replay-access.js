/**
 * Replay logs open with the token of the sandbox they recorded, or the instructor's
 * (web/replay_access.py). This browser keeps the tokens of the sandboxes it made (the last 50,
 * in localStorage beside the current one) and sends them with every replay request, so a
 * student's /replays lists their own sessions and nobody else's.
 */
const TOKENS_KEY = 'kclab.tokens';
const KEEP = 50;
const SAVED = [['kclab.sandbox', (v) => v?.token], ['kclab.walkthrough', (v) => v?.token],
  ['kclab.student', (v) => v?.sandbox_token]];

function read(storage, key) {
  try {
    return JSON.parse(storage.getItem(key) ?? 'null');
  } catch {
    return null;
  }
}

/** Keep `token` (a sandbox's) for opening its replay later, after the sandbox is gone. */
export function rememberToken(token, storage = localStorage) {
  if (typeof token !== 'string' || !token) return;
  const kept = (read(storage, TOKENS_KEY) ?? []).filter((t) => t !== token);
  storage.setItem(TOKENS_KEY, JSON.stringify([token, ...kept].slice(0, KEEP)));
}

/** The headers a replay request carries: every sandbox token this browser knows, the instructor's. */
export function replayHeaders(storage = localStorage, session = sessionStorage) {
  const tokens = new Set(read(storage, TOKENS_KEY) ?? []);
  for (const [key, pick] of SAVED) {
    const token = pick(read(storage, key));
    if (typeof token === 'string' && token) tokens.add(token);
  }
  const headers = {};
  if (tokens.size) headers['X-Replay-Tokens'] = [...tokens].join(',');
  const instructor = session.getItem('kclab.instructor.token');
  if (instructor) headers['X-Instructor-Token'] = instructor;
  return headers;
}

/** The instructor's link `/replays#token=…` (kclab serve prints it): kept for this tab, as the
 * instructor and statistics pages keep it, and taken out of the address bar. */
export function adoptInstructorToken(location = globalThis.location, session = sessionStorage) {
  const token = new URLSearchParams(location.hash.replace(/^#/, '')).get('token');
  if (!token) return;
  session.setItem('kclab.instructor.token', token);
  globalThis.history?.replaceState(null, '', location.pathname + location.search);
}

/** `?replay=` plays only this server's logs (or a file the student chose, as a blob: URL). */
export function sameOrigin(url, origin = globalThis.location?.origin) {
  try {
    const parsed = new URL(url, origin);
    return parsed.origin === origin || (parsed.protocol === 'blob:' && url.startsWith(`blob:${origin}`));
  } catch {
    return false;
  }
}
