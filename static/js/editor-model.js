/**
 * PURE the lesson editor's bookkeeping: which line each problem of POST /api/lessons/check
 * belongs on, checking as one types without flooding the server (debounce, and only the newest
 * answer counts), and a lesson id from an uploaded file's name. No DOM: node tests it.
 */

/** How many lines the editor shows for `text` (an empty text still has line 1). */
export function lineCount(text) {
  return String(text ?? '').split('\n').length;
}

/**
 * problems [{line, message}] -> Map(line -> [messages]) for lines 1..lines; a problem with no
 * line (0: the file as a whole) or past the end goes on line `0`, shown above the text.
 */
export function problemsByLine(problems, lines = Infinity) {
  const out = new Map();
  for (const p of problems ?? []) {
    const line = Number.isInteger(p.line) && p.line >= 1 && p.line <= lines ? p.line : 0;
    if (!out.has(line)) out.set(line, []);
    out.get(line).push(String(p.message));
  }
  return out;
}

/**
 * `fn` called once `ms` after the last call (as one types); `.flush()` runs a pending call now,
 * `.cancel()` drops it. `timers` is injectable for tests.
 */
export function debounce(fn, ms, timers = globalThis) {
  let timer = null;
  let args = null;
  const run = () => {
    timer = null;
    const pending = args;
    args = null;
    return fn(...pending);
  };
  const debounced = (...a) => {
    args = a;
    if (timer !== null) timers.clearTimeout(timer);
    timer = timers.setTimeout(run, ms);
  };
  debounced.flush = () => (timer === null ? undefined : (timers.clearTimeout(timer), run()));
  debounced.cancel = () => {
    if (timer !== null) timers.clearTimeout(timer);
    timer = null;
    args = null;
  };
  debounced.pending = () => timer !== null;
  return debounced;
}

/**
 * Answers that may come back out of order (a slow check of an older text): `next()` gives each
 * request a ticket, `isLatest(ticket)` says whether its answer is still the one to show.
 */
export function latestOnly() {
  let issued = 0;
  return {next: () => (issued += 1), isLatest: (ticket) => ticket === issued};
}

/** The server's rule for a lesson id (it becomes the file name): lower-case letters, digits, _. */
export function lessonIdProblem(id) {
  if (!id) return 'give the lesson an id (lower-case letters, digits and _)';
  if (!/^[a-z0-9_]+$/.test(id) || !/[a-z]/.test(id)) return 'a lesson id is lower-case letters, digits and _ (with at least one letter)';
  return null;
}

/** A lesson id from an uploaded file's name: "Controller Failover.yaml" -> "controller_failover". */
export function lessonIdFromFileName(name) {
  const stem = String(name ?? '').replace(/^.*[\\/]/, '').replace(/\.(ya?ml|txt)$/i, '');
  const id = stem.toLowerCase().replace(/[^a-z0-9_]+/g, '_').replace(/^_+|_+$/g, '').slice(0, 40);
  return /[a-z]/.test(id) ? id : `lesson_${id}`.replace(/_+$/, '');
}
