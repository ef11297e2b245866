/**
 * The lesson editor on the instructor's page: YAML in a textarea with a line-number gutter.
 * As one types (debounced) the text goes to POST /api/lessons/check; each problem is marked in
 * the gutter on its line (⚠, the reason in its title) and written right after the line itself,
 * and listed under the editor (a click puts the cursor on the line). A file can be uploaded;
 * Save stores it for this instructor (the server refuses a lesson with problems, so a bad
 * upload never replaces a good one); Dry-run plays it headless on a real cluster, as CI does;
 * then it can be run for the class.
 *
 * The textarea grows with its text and the box around it scrolls, so gutter, text and marks
 * scroll as one and a mark stays on its line (monospace: a line's end is its length in `ch`).
 */
import {debounce, latestOnly, lessonIdFromFileName, lessonIdProblem, lineCount, problemsByLine}
  from '../editor-model.js';
import {plural} from '../words.js';

const CHECK_AFTER_MS = 400;
export const TEMPLATE = `name: My first lesson
description: What this lesson shows, in a sentence or two.
minutes: 3
requires: [controller_election_race]
teaches: [controller failover]
cluster:
  brokers: [0, 1, 2]
  config: {auto.leader.rebalance.enable: false}
  topics:
    t: {partitions: 1, replication_factor: 3}
steps:
  - op: say
    text: |
      Broker 0 started first, so it is the **controller**: it created \`/controller\`.
    highlight: ["broker:0", "znode:/controller"]
  - op: predict
    id: next_controller
    question: Broker 0 is about to crash. Will there be a controller afterwards?
    choices: ["yes", "no"]
    misconceptions:
      "no": Every broker watches /controller; when it goes, the others race to create it.
    answer: {seen: {kind: controller, to_state: elected}}
    expected: "yes"
    explain: Brokers 1 and 2 race for /controller, and one of them wins.
  - op: predict
    id: next_epoch
    question: And what will /controller_epoch hold then?
    choices: ["1", "2"]
    answer: {controller: epoch}
    expected: 2
    explain: Each successful election raises the epoch by one.
  - op: crash_broker
    broker: 0
  - op: await
    record: {kind: controller, to_state: elected}
    timeout_ms: 15000
    message: No other broker became the controller.
  - op: reveal
    predict: next_controller
  - op: reveal
    predict: next_epoch
  - op: say
    text: Another broker won the race for \`/controller\`, with epoch 2.
`;

/**
 * options: {teaching, getToken(), getInstructor(), alerts, onSaved(id), onRun(id) (null: no class yet)}.
 */
export function createLessonEditor(container, {teaching, getToken, getInstructor, alerts, onSaved, onRun}) {
  container.classList.add('lesson-editor');
  container.innerHTML = `
    <div class="editor-toolbar">
      <label class="field inline" for="editor-id">Lesson id
        <input id="editor-id" class="editor-id" value="my_lesson" spellcheck="false" maxlength="40"></label>
      <label class="field inline upload" for="editor-file">Upload a file
        <input id="editor-file" class="editor-file" type="file" accept=".yaml,.yml,text/yaml,text/plain"></label>
      <button type="button" data-action="save">Save</button>
      <button type="button" data-action="dry-run">Dry-run headless</button>
      <button type="button" data-action="run">Run it for the class</button>
      <span class="editor-state badge" role="status"></span>
    </div>
    <ul class="editor-file-problems" aria-label="Problems with the whole file"></ul>
    <div class="editor-scroll">
      <ol class="editor-gutter" aria-hidden="true"></ol>
      <div class="editor-code">
        <textarea class="editor-text" wrap="off" spellcheck="false" autocapitalize="off" autocomplete="off"
          aria-label="Lesson (YAML)" aria-describedby="editor-problems"></textarea>
        <div class="editor-marks" aria-hidden="true"></div>
      </div>
    </div>
    <ol id="editor-problems" class="editor-problems" aria-label="Problems, by line"></ol>
    <p class="editor-result hidden" role="status"></p>`;
  const $ = (sel) => container.querySelector(sel);
  const text = $('.editor-text');
  const gutter = $('.editor-gutter');
  const marks = $('.editor-marks');
  const list = $('.editor-problems');
  const fileProblems = $('.editor-file-problems');
  const state = $('.editor-state');
  const result = $('.editor-result');
  const idInput = $('.editor-id');
  const buttons = {save: $('[data-action="save"]'), dryRun: $('[data-action="dry-run"]'), run: $('[data-action="run"]')};
  const latest = latestOnly();
  let problems = [];
  let warnings = []; // pace warnings: the lesson plays and saves, but a stop could be better
  let checked = null; // the text the problems belong to
  let saved = null; // {id, text} of the last save
  let busy = false;

  const check = debounce(async (value) => {
    const ticket = latest.next();
    try {
      const answer = await teaching.check(value);
      if (latest.isLatest(ticket)) show(value, answer.problems ?? [], answer.warnings ?? []);
    } catch (error) {
      if (latest.isLatest(ticket)) setState('error', `cannot check: ${error.message}`);
    }
  }, CHECK_AFTER_MS);

  function setText(value) {
    text.value = value;
    layout();
    setState('checking', 'checking…');
    check(value);
  }

  /** Size the textarea to its text (no inner scrolling) and number the lines. */
  function layout() {
    const lines = text.value.split('\n');
    const longest = lines.reduce((n, l) => Math.max(n, l.length), 0);
    text.rows = lines.length + 1;
    text.style.width = `max(100%, ${longest + 3}ch)`;
    const have = gutter.children.length;
    for (let n = have + 1; n <= lines.length; n += 1) {
      const li = document.createElement('li');
      li.dataset.line = String(n);
      li.textContent = String(n);
      gutter.append(li);
    }
    while (gutter.children.length > lines.length) gutter.lastElementChild.remove();
    drawProblems();
    drawButtons();
  }

  /** The problems of `value` (marks only while the text is still that one). */
  function show(value, found, paced = []) {
    problems = found;
    warnings = paced;
    checked = value;
    drawProblems();
    drawButtons();
  }

  function drawProblems() {
    const current = checked === text.value ? problems : [];
    const paced = checked === text.value ? warnings : [];
    const lines = text.value.split('\n');
    const byLine = problemsByLine(current, lines.length);
    const paceByLine = problemsByLine(paced, lines.length);
    for (const li of gutter.children) {
      const messages = byLine.get(Number(li.dataset.line));
      const pace = paceByLine.get(Number(li.dataset.line));
      li.classList.toggle('problem', Boolean(messages));
      li.classList.toggle('warning', !messages && Boolean(pace));
      li.title = (messages ?? pace ?? []).join('\n');
      li.textContent = messages ? `⚠ ${li.dataset.line}` : pace ? `ℹ ${li.dataset.line}` : li.dataset.line;
    }
    const mark = (kind, sign) => ([line, messages]) => {
      const div = document.createElement('div');
      div.className = kind;
      div.dataset.line = String(line);
      div.style.top = `calc(${line - 1} * var(--editor-line) + var(--editor-pad))`;
      div.style.left = `calc(${lines[line - 1].length + 3}ch + 8px)`;
      div.textContent = `${sign} ${messages.join(' · ')}`;
      return div;
    };
    marks.replaceChildren(...[...byLine].filter(([line]) => line > 0).map(mark('editor-mark', '⚠')),
      ...[...paceByLine].filter(([line]) => line > 0 && !byLine.has(line)).map(mark('editor-warning', 'ℹ pace:')));
    fileProblems.replaceChildren(...(byLine.get(0) ?? []).map((message) => {
      const li = document.createElement('li');
      li.dataset.line = '0';
      li.textContent = `⚠ ${message}`;
      return li;
    }));
    list.replaceChildren(...[...current, ...paced.map((p) => ({...p, warning: true}))].map((p) => {
      const li = document.createElement('li');
      li.dataset.line = String(p.line ?? 0);
      li.classList.toggle('warning', Boolean(p.warning));
      const go = document.createElement('button');
      go.type = 'button';
      go.className = 'record-link';
      go.textContent = p.line ? `line ${p.line}` : 'the file';
      go.addEventListener('click', () => goToLine(p.line));
      li.append(go, document.createTextNode(`: ${p.warning ? 'pace: ' : ''}${p.message}`));
      return li;
    }));
    if (checked === text.value) {
      const pace = paced.length ? ` · ${plural(paced.length, 'pace warning')}` : '';
      setState(current.length ? 'problems' : 'ok', current.length
        ? `⚠ ${plural(current.length, 'problem')}` : `✓ no problems${pace}`);
    }
  }

  function goToLine(line) {
    if (!line) return;
    const lines = text.value.split('\n');
    const start = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0);
    text.focus();
    text.setSelectionRange(start, start + (lines[line - 1]?.length ?? 0));
  }

  function setState(name, label) {
    state.dataset.state = name;
    state.textContent = label;
  }

  function drawButtons() {
    const fine = checked === text.value && problems.length === 0;
    const idProblem = lessonIdProblem(idInput.value.trim());
    const savedNow = saved && saved.text === text.value;
    buttons.save.disabled = busy;
    buttons.save.title = idProblem ?? (fine ? 'Store it as one of your lessons' : 'Save checks it first: a lesson with problems is not stored');
    buttons.dryRun.disabled = busy;
    const cannotRun = !onRun ? 'Open a class first' : !savedNow ? 'Save the lesson first (the class runs what is saved)' : null;
    buttons.run.disabled = busy || cannotRun !== null;
    buttons.run.title = cannotRun ?? `Run ${saved.id} on the class cluster now`;
  }

  async function act(label, work) {
    busy = true;
    drawButtons();
    try {
      await work();
    } catch (error) {
      alerts.error(`${label} failed: ${error.message}`);
      if (Array.isArray(error.body?.problems)) show(text.value, error.body.problems);
    } finally {
      busy = false;
      drawButtons();
    }
  }

  function showResult(ok, message) {
    result.classList.remove('hidden');
    result.dataset.ok = String(ok);
    result.textContent = `${ok ? '✓' : '✗'} ${message}`;
  }

  text.addEventListener('input', () => setText(text.value));
  text.addEventListener('keydown', (event) => { // Tab indents (two spaces) instead of leaving the editor
    if (event.key !== 'Tab' || event.shiftKey) return;
    event.preventDefault();
    text.setRangeText('  ', text.selectionStart, text.selectionEnd, 'end');
    setText(text.value);
  });
  idInput.addEventListener('input', drawButtons);
  $('.editor-file').addEventListener('change', async (event) => {
    const file = event.target.files?.[0];
    if (!file) return;
    try {
      idInput.value = lessonIdFromFileName(file.name);
      setText(await file.text());
      check.flush();
    } catch (error) {
      alerts.error(`Could not read ${file.name}: ${error.message}`);
    }
    event.target.value = '';
  });
  buttons.save.addEventListener('click', () => act('Saving the lesson', async () => {
    const id = idInput.value.trim();
    const idProblem = lessonIdProblem(id);
    if (idProblem) throw new Error(idProblem);
    const value = text.value;
    const answer = await teaching.saveLesson(getToken(), {id, text: value, instructor: getInstructor()});
    saved = {id: answer.id, text: value};
    show(value, []);
    showResult(true, `Saved as ${answer.id}. It is in the lesson list.`);
    alerts.info(`Lesson saved as ${answer.id}.`);
    await onSaved?.(answer.id);
  }));
  buttons.dryRun.addEventListener('click', () => act('The dry run', async () => {
    const value = text.value;
    showResult(true, 'Dry run: playing the lesson headless on a real cluster…');
    result.dataset.ok = 'running';
    const answer = await teaching.dryRun(getToken(), value);
    if (answer.problems?.length) show(value, answer.problems);
    showResult(answer.ok, answer.ok ? `Dry run passed: ${answer.message ?? 'every step held'}.`
      : `Dry run failed: ${answer.message ?? answer.problems.map((p) => `line ${p.line}: ${p.message}`).join('; ')}`);
  }));
  buttons.run.addEventListener('click', () => act('Running the lesson', () => onRun(saved.id)));

  setText(TEMPLATE);
  return {
    /** Whether the class may run lessons now (a class is open): onRun or null. */
    setRunner(run) {
      onRun = run;
      drawButtons();
    },
    get text() { return text.value; },
    setText,
  };
}
