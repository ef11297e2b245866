/**
 * The replay list page's pure part: filters <-> the page's address <-> the API's query, and the
 * words and links of one row. No DOM (node tests it: tests/js/replays-list.test.mjs).
 *
 * Dates are the student's local days: the address keeps "2026-11-21" (readable, shareable), the
 * API gets the first and last millisecond of that local day.
 */

export const FILTERS = ['class', 'lesson', 'mode', 'since', 'until'];
export const MODES = {sandbox: 'sandbox', lesson: 'lesson run', class: 'class demo', script: 'script run'};
const DAY = /^(\d{4})-(\d{2})-(\d{2})$/;

/** The filters an address names (unknown or empty parameters left out). */
export function filtersFromQuery(search) {
  const params = new URLSearchParams(search);
  const out = {};
  for (const name of FILTERS) {
    const value = (params.get(name) ?? '').trim();
    if (value && ((name !== 'since' && name !== 'until') || DAY.test(value))) out[name] = value;
  }
  return out;
}

/** The address's query for these filters ("" when there are none), in a stable order. */
export function queryFromFilters(filters) {
  const params = new URLSearchParams();
  for (const name of FILTERS) if (filters[name]) params.set(name, filters[name]);
  const text = params.toString();
  return text ? `?${text}` : '';
}

/** Local midnight of a "YYYY-MM-DD" day, in ms; `end`: the day's last millisecond instead. */
export function localDay(day, end = false) {
  const m = DAY.exec(day);
  if (!m) return null;
  const start = new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3])).getTime();
  return end ? new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]) + 1).getTime() - 1 : start;
}

/** GET /api/replays's query for these filters. */
export function apiQuery(filters) {
  const params = new URLSearchParams();
  for (const name of ['class', 'lesson', 'mode']) if (filters[name]) params.set(name, filters[name]);
  if (filters.since) params.set('since', String(localDay(filters.since)));
  if (filters.until) params.set('until', String(localDay(filters.until, true)));
  const text = params.toString();
  return `/api/replays${text ? `?${text}` : ''}`;
}

/** The distinct values of one field across the list, sorted (for a filter's choices). */
export function choices(entries, key, selected = null) {
  const values = new Set(entries.map((e) => e[key]).filter((v) => v !== null && v !== undefined && v !== ''));
  if (selected) values.add(selected);
  return [...values].sort();
}

const pad = (n) => String(n).padStart(2, '0');

/** "2026-11-21 08:55" in local time (ISO-like: sorts and reads the same everywhere). */
export function formatStarted(ms) {
  if (!Number.isFinite(ms)) return 'unknown';
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

/** The state column: recording, damaged (where and why) or complete — in words, not only colour. */
export function stateText(entry) {
  if (entry.damage) return `⚠ damaged at line ${entry.damage.line}: ${entry.damage.reason}`;
  if (entry.live) return '● recording now';
  return '✓ complete';
}

// Log names are [A-Za-z0-9._-]+.jsonl (the server checks): nothing in them needs escaping.
export const playHref = (name, seq = null) => `/?replay=/api/replays/${name}${seq === null ? '' : `&seq=${seq}`}`;
export const exportHref = (name) => `/api/replays/${name}`;
