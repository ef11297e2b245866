// The instructor's statistics dashboard (static/stats.html): filters, six charts, and a button
// that runs the Spark job with a progress bar. Data comes from /api/stats/* (web/stats_pages.py),
// plotly from /vendor/plotly.min.js (a classic script: the global `Plotly`). No build step.
//
// Filters: the raw failover times are filtered row by row; the additive tables are read at
// scope "cell" (one row per date × class × lesson) and summed here, so any combination of
// class, lesson and date gives exact counts. Percentiles are computed here from raw values.

import {RULES} from './invariants-model.js';
import {plural} from './words.js';

const $ = (id) => document.getElementById(id);
const PLOT_CONFIG = { displaylogo: false, responsive: true };
const MARGIN = { l: 60, r: 16, t: 10, b: 48 };
const state = { summary: null, polling: null };

// The instructor's token: from /stats#token=… (the instructor page links here with it; a URL
// fragment is never sent to the server), kept in sessionStorage for reloads, as /instructor does.
const TOKEN_KEY = 'kclab.instructor.token';
const TOKEN = (() => {
  const fromHash = new URLSearchParams(window.location.hash.slice(1)).get('token');
  if (fromHash) sessionStorage.setItem(TOKEN_KEY, fromHash);
  return fromHash || sessionStorage.getItem(TOKEN_KEY) || '';
})();

async function getJSON(url, options = {}) {
  const response = await fetch(url, { ...options, headers: { Accept: 'application/json', 'X-Instructor-Token': TOKEN } });
  let body = {};
  try { body = await response.json(); } catch { body = { error: `HTTP ${response.status}` }; }
  return { status: response.status, body };
}

function filters() {
  return { class_id: $('filter-class').value, lesson_id: $('filter-lesson').value, date: $('filter-date').value };
}

// Query string from the chosen filters (an empty choice means "all": no parameter).
function query(extra = {}, use = ['class_id', 'lesson_id', 'date']) {
  const params = new URLSearchParams();
  const chosen = filters();
  for (const key of use) if (chosen[key]) params.set(key, chosen[key]);
  for (const [key, value] of Object.entries(extra)) params.set(key, value);
  return params.toString();
}

async function rows(name, extra, use) {
  const { status, body } = await getJSON(`/api/stats/${name}?${query(extra, use)}`);
  if (status !== 200) throw new Error(body.error || `HTTP ${status}`);
  return body.rows;
}

function sumBy(list, key, fields) {
  const out = new Map();
  for (const row of list) {
    const k = typeof key === 'function' ? key(row) : row[key];
    const acc = out.get(k) || Object.fromEntries(fields.map((f) => [f, 0]));
    for (const f of fields) acc[f] += row[f] || 0;
    out.set(k, acc);
  }
  return out;
}

function percentile(values, p) {
  if (!values.length) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const pos = p * (sorted.length - 1);
  const low = Math.floor(pos); const high = Math.ceil(pos);
  return sorted[low] + (sorted[high] - sorted[low]) * (pos - low);
}

function showEmpty(id, text) {
  const el = $(id);
  if (window.Plotly) window.Plotly.purge(el);
  el.innerHTML = '';
  const box = document.createElement('div');
  box.className = 'empty';
  box.textContent = text;
  el.appendChild(box);
  el.dataset.rows = '0';
}

function plot(id, data, layout, count) {
  const el = $(id);
  if (el.querySelector('.empty')) el.innerHTML = '';
  el.dataset.rows = String(count);
  return window.Plotly.react(el, data, { margin: MARGIN, ...layout }, PLOT_CONFIG);
}

function ms(value) { return value == null ? '–' : `${Math.round(value)} ms`; }

// -- the charts ---------------------------------------------------------------------------------
async function renderFailover() {
  const values = (await rows('failover_times')).map((r) => r.failover_ms).filter((v) => v != null);
  if (!values.length) return showEmpty('chart-failover', 'No controller failovers in this selection.');
  const p50 = percentile(values, 0.5); const p95 = percentile(values, 0.95);
  return plot('chart-failover', [{ type: 'histogram', x: values, nbinsx: 30, marker: { color: '#1f5fbf' },
    hovertemplate: '%{x} ms: %{y} failovers<extra></extra>' }], {
    xaxis: { title: { text: `failover time (ms) — p50 ${ms(p50)}, p95 ${ms(p95)}, n=${values.length}` } },
    yaxis: { title: { text: 'failovers' } }, bargap: 0.05,
    shapes: [p50, p95].map((x) => ({ type: 'line', x0: x, x1: x, yref: 'paper', y0: 0, y1: 1,
      line: { dash: 'dot', color: '#c62828' } })),
  }, values.length);
}

async function renderPredictions() {
  const cells = await rows('predictions', { scope: 'cell' });
  const byStep = sumBy(cells, (r) => `${r.lesson_id ?? '(no lesson)'}\u0000${r.step}`, ['answers', 'wrong', 'correct']);
  if (!byStep.size) {
    $('wrong-answers').classList.add('hidden');
    return showEmpty('chart-predictions', 'No answers to predictions in this selection.');
  }
  const lessons = [...new Set([...byStep.keys()].map((k) => k.split('\u0000')[0]))].sort();
  const steps = [...new Set([...byStep.keys()].map((k) => Number(k.split('\u0000')[1])))].sort((a, b) => a - b);
  const z = lessons.map((l) => steps.map((s) => {
    const v = byStep.get(`${l}\u0000${s}`);
    return v && v.correct + v.wrong ? v.wrong / (v.correct + v.wrong) : null;
  }));
  const text = lessons.map((l) => steps.map((s) => {
    const v = byStep.get(`${l}\u0000${s}`);
    return v ? `${v.wrong} of ${v.answers} answers wrong` : 'no answers';
  }));
  await renderWrongAnswers();
  return plot('chart-predictions', [{ type: 'heatmap', x: steps.map((s) => `step ${s}`), y: lessons, z, text,
    zmin: 0, zmax: 1, colorscale: 'Reds', colorbar: { title: { text: 'wrong' }, tickformat: '.0%' },
    hovertemplate: '%{y}, %{x}: %{text}<extra></extra>' }], { margin: { ...MARGIN, l: 140 } }, byStep.size);
}

async function renderWrongAnswers() {
  const chosen = filters();
  const scope = chosen.class_id ? 'class' : 'lesson';
  const list = await rows('wrong_answers', { scope }, ['class_id', 'lesson_id']);
  const table = $('wrong-answers');
  const body = table.querySelector('tbody');
  body.innerHTML = '';
  for (const row of list.sort((a, b) => (a.lesson_id || '').localeCompare(b.lesson_id || '') || a.step - b.step
                                        || a.rank - b.rank).slice(0, 30)) {
    const tr = document.createElement('tr');
    for (const value of [row.lesson_id ?? '–', row.step, row.answer, row.count]) {
      const td = document.createElement('td'); td.textContent = String(value); tr.appendChild(td);
    }
    body.appendChild(tr);
  }
  table.classList.toggle('hidden', list.length === 0);
}

// Per question, how many picked each choice — the cluster's answer ✓, a wrong one ✗, not sure ? —
// (the words mark the kind as well as the colour), and the misconceptions those wrong choices carry.
const CHOICE_KINDS = [
  { name: '✓ the cluster\'s answer', color: '#2e7d32', pick: (v) => v.right },
  { name: '✗ a wrong choice', color: '#c62828', pick: (v) => v.answers - v.right - v.unsure },
  { name: '? not sure', color: '#8a94a6', pick: (v) => v.unsure },
];

async function renderChoices() {
  const cells = await rows('choices', { scope: 'cell' });
  const byChoice = sumBy(cells, (r) => `${r.lesson_id ?? '(no lesson)'}\u0000${r.question}\u0000${r.answer}`,
    ['answers', 'right', 'unsure']);
  await renderMisconceptions();
  if (!byChoice.size) return showEmpty('chart-choices', 'No answers to predictions in this selection.');
  const keys = [...byChoice.keys()].sort();
  const labels = keys.map((k) => {
    const [lesson, question, answer] = k.split('\u0000');
    const v = byChoice.get(k);
    const mark = v.right ? '✓' : v.unsure ? '?' : '✗';
    return `${lesson} · ${question}: ${mark} ${answer}`;
  });
  const traces = CHOICE_KINDS.map((kind) => ({
    type: 'bar', orientation: 'h', name: kind.name, y: labels, x: keys.map((k) => kind.pick(byChoice.get(k))),
    marker: { color: kind.color }, hovertemplate: '%{y}: %{x} students<extra></extra>' }));
  return plot('chart-choices', traces, { barmode: 'stack', margin: { ...MARGIN, l: 320 },
    height: Math.max(260, 22 * keys.length + 80), yaxis: { automargin: true, autorange: 'reversed' },
    xaxis: { title: { text: 'students who picked it' } } }, keys.length);
}

async function renderMisconceptions() {
  const scope = filters().class_id ? 'class' : 'lesson';
  const list = await rows('misconceptions', { scope }, ['class_id', 'lesson_id']);
  const table = $('misconceptions');
  const body = table.querySelector('tbody');
  body.innerHTML = '';
  for (const row of list.sort((a, b) => (a.lesson_id || '').localeCompare(b.lesson_id || '') || a.rank - b.rank)
    .slice(0, 40)) {
    const tr = document.createElement('tr');
    for (const value of [row.lesson_id ?? '–', row.question, row.answer, row.misconception, row.count]) {
      const td = document.createElement('td'); td.textContent = String(value); tr.appendChild(td);
    }
    body.appendChild(tr);
  }
  table.classList.toggle('hidden', list.length === 0);
}

async function renderFaults() {
  const cells = await rows('sandbox_faults', { scope: 'cell' });
  const fields = ['injected', 'applied', 'elections', 'offline_windows', 'data_losses', 'messages_lost', 'fenced_writes'];
  const byOp = sumBy(cells, 'op', fields);
  if (!byOp.size) {
    const why = filters().lesson_id ? ' Free play has no lesson: clear the lesson filter.' : '';
    return showEmpty('chart-faults', `No faults injected by students in free play in this selection.${why}`);
  }
  const ops = [...byOp.keys()].sort((a, b) => byOp.get(b).injected - byOp.get(a).injected);
  const hover = ops.map((op) => {
    const v = byOp.get(op);
    return `${v.elections} elections, ${v.offline_windows} offline windows,<br>${v.messages_lost} acked messages lost,`
      + ` ${v.fenced_writes} zombie writes fenced`;
  });
  return plot('chart-faults', [
    { type: 'bar', name: 'applied', x: ops, y: ops.map((op) => byOp.get(op).applied), customdata: hover,
      hovertemplate: '%{x}: %{y} applied<br>then: %{customdata}<extra></extra>', marker: { color: '#1f5fbf' } },
    { type: 'bar', name: 'refused', x: ops, y: ops.map((op) => byOp.get(op).injected - byOp.get(op).applied),
      hovertemplate: '%{x}: %{y} refused<extra></extra>', marker: { color: '#9aa3b2' } },
  ], { barmode: 'stack', yaxis: { title: { text: 'faults injected' } }, legend: { orientation: 'h', y: 1.12 },
    margin: { ...MARGIN, b: 100, t: 30 } }, ops.length);
}

// Kafka's rules (the invariant panel's catalogue) by title; a rule the page does not know keeps its id.
const RULE_TITLES = new Map(RULES.map((rule) => [rule.id, rule.title]));

async function renderViolations() {
  const cells = await rows('violations', { scope: 'cell' });
  const byRule = sumBy(cells, 'rule', ['sessions', 'violations']);
  if (!byRule.size) return showEmpty('chart-violations', 'No rule broke in this selection: every session kept Kafka\'s rules.');
  const rules = [...byRule.keys()].sort((a, b) => byRule.get(a).sessions - byRule.get(b).sessions);
  const labels = rules.map((id) => RULE_TITLES.get(id) || id);
  return plot('chart-violations', [{
    type: 'bar', orientation: 'h', y: labels, x: rules.map((id) => byRule.get(id).sessions),
    text: rules.map((id) => `${byRule.get(id).sessions} sessions`), textposition: 'auto',
    customdata: rules.map((id) => byRule.get(id).violations),
    hovertemplate: '%{y}: broken in %{x} sessions, %{customdata} times in all<extra></extra>',
    marker: { color: '#b3261e' },
  }], { margin: { ...MARGIN, l: 250 }, xaxis: { title: { text: 'sessions in which the rule broke' } } }, rules.length);
}

async function renderFunnel() {
  const completion = await rows('completion', { scope: 'cell' });
  const perLesson = sumBy(completion.filter((r) => r.lesson_id), 'lesson_id', ['started', 'completed']);
  const started = [...perLesson.entries()].filter(([, v]) => v.started > 0);
  if (!started.length) return showEmpty('chart-funnel', 'No lesson was started in this selection.');
  const lesson = filters().lesson_id || started.sort((a, b) => b[1].started - a[1].started)[0][0];
  const totals = perLesson.get(lesson) || { started: 0, completed: 0 };
  const steps = await rows('funnel', { scope: 'cell', lesson_id: lesson });
  const reached = sumBy(steps, 'step', ['reached']);
  const ops = new Map((await rows('step_times', { scope: 'lesson', lesson_id: lesson }, [])).map((r) => [r.step, r.op]));
  const order = [...reached.keys()].sort((a, b) => a - b);
  const labels = ['started', ...order.map((s) => `step ${s}${ops.has(s) ? ` (${ops.get(s)})` : ''}`), 'completed'];
  const counts = [totals.started, ...order.map((s) => reached.get(s).reached), totals.completed];
  const note = filters().lesson_id ? '' : ` (the lesson most often started; choose another in "Lesson")`;
  return plot('chart-funnel', [{ type: 'funnel', y: labels, x: counts, textinfo: 'value+percent initial',
    marker: { color: '#2e7d32' } }], {
    margin: { ...MARGIN, l: 170, t: 34 }, title: { text: `${lesson}${note}`, font: { size: 12 }, x: 0, xanchor: 'left' },
  }, counts.length);
}

async function renderCharts() {
  const jobs = [renderFailover(), renderPredictions(), renderChoices(), renderFaults(), renderViolations(),
    renderFunnel()];
  const results = await Promise.allSettled(jobs);
  const failed = results.filter((r) => r.status === 'rejected');
  if (failed.length) notice(`Some charts could not be drawn: ${failed[0].reason.message}`, true);
}

// -- summary, headline, filters ------------------------------------------------------------------
function notice(text, error = false) {
  const el = $('notice');
  el.textContent = text;
  el.classList.toggle('hidden', !text);
  el.classList.toggle('error', error);
}

function fillSelect(id, values) {
  const select = $(id);
  const keep = select.value;
  while (select.options.length > 1) select.remove(1);
  for (const value of values) select.add(new Option(value, value));
  if (values.includes(keep)) select.value = keep;
}

function tile(label, value) {
  const div = document.createElement('div');
  div.className = 'tile';
  div.innerHTML = '<div class="value"></div><div class="label"></div>';
  div.querySelector('.value').textContent = value;
  div.querySelector('.label').textContent = label;
  return div;
}

function renderHeadline(summary) {
  const h = summary.headline;
  const pct = (v) => (v == null ? '–' : `${Math.round(v * 100)}%`);
  const box = $('headline');
  box.innerHTML = '';
  for (const [label, value] of [
    ['controller failovers (p95)', `${h.failover.count} (${ms(h.failover.p95_ms)})`],
    ['partition offline windows (p95)', `${h.offline_windows.windows} (${ms(h.offline_windows.p95_ms)})`],
    ['leader elections / unclean', `${h.elections.total} / ${h.elections.unclean}`],
    ['acknowledged messages lost', String(h.messages_lost.total)],
    ['zombie writes fenced', String(h.zombie_writes_fenced)],
    ['stale-epoch requests rejected', String(h.stale_epoch_rejections)],
    ['prediction accuracy', `${pct(h.predictions.accuracy)} of ${h.predictions.answers}`],
    ['lessons completed', `${h.lessons.completed} of ${h.lessons.started}`],
    ['faults injected in free play', String(h.free_play.user_faults)],
  ]) box.appendChild(tile(label, value));
}

async function loadSummary() {
  const { status, body } = await getJSON('/api/stats/summary');
  if (status === 404) {
    state.summary = null;
    document.body.dataset.state = body.replay_logs ? 'no-stats' : 'empty';
    notice(body.replay_logs
      ? `Statistics have not been computed yet for the ${body.replay_logs} replay logs: press "Run statistics job".`
      : 'No replay logs yet: once students have played lessons or sandboxes, run the statistics job here.');
    $('headline').innerHTML = '';
    for (const chart of document.querySelectorAll('.plot[data-chart]')) {
      showEmpty(chart.id, body.replay_logs ? 'Run the statistics job to see this chart.' : 'No replay logs yet.');
    }
    $('run-button').disabled = !body.replay_logs;
    return;
  }
  if (status !== 200) { notice(`Could not load the statistics: ${body.error}`, true); return; }
  state.summary = body;
  const input = body.input;
  document.body.dataset.state = input.files ? 'ready' : 'empty';
  notice(input.files ? '' : 'No replay logs yet: once students have played, run the statistics job again.');
  $('run-button').disabled = false;
  $('generated').textContent = `computed ${new Date(body.generated_at).toLocaleString()}`;
  $('input-size').textContent = `${input.sessions} sessions, ${input.records.toLocaleString()} records, `
    + `${(input.bytes / 1e6).toFixed(1)} MB`;
  $('malformed-note').textContent = body.malformed.lines
    ? `${body.malformed.lines} damaged lines were set aside (${Object.entries(body.malformed.by_reason)
      .map(([k, v]) => `${k}: ${v}`).join(', ')}).` : '';
  fillSelect('filter-class', body.filters.class_ids);
  fillSelect('filter-lesson', body.filters.lesson_ids);
  fillSelect('filter-date', body.filters.dates);
  renderHeadline(body);
  await renderCharts();
}

// -- running the job -----------------------------------------------------------------------------
function showProgress(p) {
  const bar = $('run-progress');
  const running = p.state === 'running';
  bar.classList.toggle('hidden', !running);
  $('run-button').disabled = running;
  if (running) {
    bar.value = p.fraction || 0;
    const stage = (p.stages || []).slice(-1)[0];
    const tasks = stage ? ` — stage ${stage.id}: ${stage.done}/${stage.tasks} tasks` : '';
    $('run-status').textContent = `${p.phase || 'starting'} (${Math.round((p.fraction || 0) * 100)}%)${tasks}`;
  } else if (p.state === 'done') {
    const parsed = p.new_logs == null ? '' : ` (${plural(p.new_logs, 'new or changed log')} read)`;
    $('run-status').textContent = `done: ${p.records ?? '?'} records in ${p.seconds ?? '?'} s${parsed}`;
  } else if (p.state === 'failed') {
    $('run-status').textContent = '';
    notice(`The statistics job failed: ${p.error}`, true);
  }
  document.body.dataset.job = p.state;
}

async function poll() {
  const { body } = await getJSON('/api/stats/progress');
  showProgress(body);
  if (body.state === 'running') {
    state.polling = setTimeout(poll, 1000);
  } else {
    state.polling = null;
    if (body.state === 'done') await loadSummary();
  }
}

async function startRun() {
  $('run-button').disabled = true;
  const { status, body } = await getJSON('/api/stats/run', { method: 'POST' });
  if (status === 202 || status === 409) {
    if (status === 409) $('run-status').textContent = 'a run is already going on…';
    if (!state.polling) await poll();
    return;
  }
  $('run-button').disabled = false;
  notice(body.error || `HTTP ${status}`, true);
}

async function init() {
  if (!window.Plotly) { notice('plotly.js did not load (/vendor/plotly.min.js).', true); return; }
  for (const id of ['filter-class', 'filter-lesson', 'filter-date']) {
    $(id).addEventListener('change', () => { if (state.summary) renderCharts(); });
  }
  $('run-button').addEventListener('click', startRun);
  await loadSummary();
  await poll();
}

init().catch((error) => notice(`The dashboard failed to start: ${error.message}`, true));
