/**
 * The /replays page: the recorded sessions (GET /api/replays), filters that live in the
 * address (so a filtered list can be shared), and per session "Play" (the main page in replay
 * mode) and "Export" (the file); "Import" uploads a log (POST /api/replays) and shows the
 * server's reason when it refuses. The pure part is replays-list.js.
 *
 * Testable DOM: body#replays[data-state] (loading / ready / error), tr.replay[data-name]
 * [data-damaged][data-live][data-mode], a.play, a.export, #import-file, #errors (role=alert).
 */
import {createAlerts} from './controls/alerts.js';
import {adoptInstructorToken, replayHeaders} from './replay-access.js';
import {
  MODES, apiQuery, choices, exportHref, filtersFromQuery, formatStarted, playHref, queryFromFilters, stateText,
} from './replays-list.js';
import {plural} from './words.js';

adoptInstructorToken();
const $ = (sel) => document.querySelector(sel);
const alerts = createAlerts($('#errors'), $('#infos'));
const form = $('#filters');
const body = $('#replays-table tbody');
let filters = filtersFromQuery(window.location.search);
let loading = 0;
let highlight = null;

/** GET JSON; a failure throws with the server's own reason. */
async function getJson(url, init) {
  const response = await fetch(url, {...init, headers: {Accept: 'application/json', ...replayHeaders(),
    ...init?.headers}});
  const data = await response.json().catch(() => null);
  if (!response.ok) throw new Error(data?.error ?? `${response.status} ${response.statusText}`);
  return data;
}

/** Export: the log is fetched with this browser's tokens (a plain link sends none), then saved. */
async function download(event, href, name) {
  event.preventDefault();
  try {
    const response = await fetch(href, {headers: replayHeaders()});
    if (!response.ok) throw new Error((await response.json().catch(() => null))?.error ?? `${response.status}`);
    const url = URL.createObjectURL(await response.blob());
    const a = Object.assign(document.createElement('a'), {href: url, download: name});
    a.click();
    setTimeout(() => URL.revokeObjectURL(url), 10000);
  } catch (error) {
    alerts.error(`Could not export ${name}: ${error.message}`);
  }
}

function setOptions(select, values, selected, label = (v) => v) {
  const keep = select.options[0];
  select.replaceChildren(keep, ...values.map((v) => new Option(label(v), v)));
  select.value = selected ?? '';
}

async function refresh() {
  const mine = ++loading;
  document.body.dataset.state = 'loading';
  try {
    const [all, shown] = await Promise.all([getJson('/api/replays'), getJson(apiQuery(filters))]);
    if (mine !== loading) return; // a newer refresh is on its way
    setOptions(form.elements.class, choices(all.replays, 'class_id', filters.class), filters.class);
    setOptions(form.elements.lesson, choices(all.replays, 'lesson_id', filters.lesson), filters.lesson);
    setOptions(form.elements.mode, choices(all.replays, 'mode', filters.mode), filters.mode, (m) => MODES[m] ?? m);
    form.elements.since.value = filters.since ?? '';
    form.elements.until.value = filters.until ?? '';
    render(shown.replays, all.total);
    document.body.dataset.state = 'ready';
  } catch (error) {
    if (mine !== loading) return;
    document.body.dataset.state = 'error';
    alerts.error(`Could not list the recorded sessions: ${error.message}`);
  }
}

function cell(row, text, className) {
  const td = row.insertCell();
  if (className) td.className = className;
  if (text !== undefined) td.textContent = text;
  return td;
}

function link(text, href, className, label) {
  const a = document.createElement('a');
  a.href = href;
  a.className = className;
  a.textContent = text;
  a.setAttribute('aria-label', label);
  return a;
}

function render(entries, total) {
  const filtered = Object.keys(filters).length > 0;
  $('#summary').textContent = filtered ? `${entries.length} of ${total} sessions match the filters.`
    : `${plural(total, 'session')}, newest first.`;
  const rows = entries.map((e) => {
    const row = document.createElement('tr');
    row.className = 'replay';
    Object.assign(row.dataset, {name: e.name, damaged: String(e.damaged), live: String(e.live), mode: e.mode ?? ''});
    if (e.name === highlight) row.dataset.new = 'true';
    const started = cell(row);
    const time = document.createElement('time');
    if (Number.isFinite(e.started_ms)) time.dateTime = new Date(e.started_ms).toISOString();
    time.textContent = formatStarted(e.started_ms ?? e.modified_ms);
    const id = document.createElement('span');
    id.className = 'session-id';
    id.textContent = e.imported ? `${e.session_id ?? e.name} (imported)` : (e.session_id ?? e.name);
    started.append(time, id);
    cell(row, MODES[e.mode] ?? e.mode ?? '—');
    cell(row, e.lesson_id ?? '—');
    cell(row, e.class_id ?? '—');
    cell(row, e.student ?? '—');
    cell(row, String(e.records), 'num');
    cell(row, stateText(e), 'state');
    const actions = cell(row, undefined, 'actions');
    const what = `${MODES[e.mode] ?? 'session'} ${e.session_id ?? e.name}`;
    actions.append(link('▶ Play', playHref(e.name), 'play', `Play ${what}`));
    const exported = link('Export', exportHref(e.name), 'export', `Export ${what} as a file`);
    exported.setAttribute('download', e.name);
    exported.addEventListener('click', (event) => download(event, exported.href, e.name));
    actions.append(exported);
    return row;
  });
  if (rows.length === 0) {
    const row = document.createElement('tr');
    row.className = 'empty';
    const td = cell(row, filtered ? 'No session matches these filters.' : 'No session has been recorded yet.');
    td.colSpan = 8;
    rows.push(row);
  }
  body.replaceChildren(...rows);
}

/** The form's values become the filters and the address (replaceState: no history per keystroke). */
function readForm() {
  const next = {};
  for (const name of ['class', 'lesson', 'mode', 'since', 'until']) {
    const value = form.elements[name].value.trim();
    if (value) next[name] = value;
  }
  filters = next;
  window.history.replaceState(null, '', `${window.location.pathname}${queryFromFilters(filters)}`);
  refresh();
}

form.addEventListener('change', readForm);
form.addEventListener('submit', (event) => {
  event.preventDefault();
  readForm();
});
form.addEventListener('reset', () => setTimeout(readForm)); // after the browser cleared the fields

$('#import-file').addEventListener('change', async (event) => {
  const input = event.target;
  const file = input.files?.[0];
  if (!file) return;
  const data = new FormData();
  data.append('file', file);
  try {
    const entry = await getJson('/api/replays', {method: 'POST', body: data});
    highlight = entry.name;
    const damaged = entry.damage ? ` It is damaged at line ${entry.damage.line} (${entry.damage.reason}): it plays up to there.` : '';
    alerts.info(entry.created ? `Imported ${file.name} as ${entry.name}.${damaged}`
      : `${file.name} is already here, as ${entry.name}.${damaged}`);
    await refresh();
  } catch (error) {
    alerts.error(`Could not import ${file.name}: ${error.message}`);
  } finally {
    input.value = '';
  }
});

window.addEventListener('popstate', () => {
  filters = filtersFromQuery(window.location.search);
  refresh();
});

refresh();
