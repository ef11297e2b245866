/**
 * Counting words as a student reads them: "1 student", "2 students", "0 answers". One helper so
 * that every page says a count the same way (it was written out by hand on nine lines). No
 * imports: the instructor's load line runs under node too (tests/js, bench/load_watch.py).
 */

/** `n` and the word for it: `plural(1, 'session')` is "1 session", `plural(3, 'session')`
 *  "3 sessions"; `many` for a word that does not just take an s. */
export function plural(n, one, many = `${one}s`) {
  return `${n} ${n === 1 ? one : many}`;
}
