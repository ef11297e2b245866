/**
 * /instructor#token=…: the instructor's page (kclab serve prints the link; the token stays in
 * the URL's fragment, which browsers never send, and in sessionStorage for reloads).
 *
 * Open a class (its join code big enough to project), start a free demo or a lesson on the
 * class's one shared cluster — shown here with the main page's views, and acted on with the same
 * broker menu and palette (this page holds the session's token) — pause and unpause the class,
 * Continue a lesson (the lesson panel's button), watch the answers to the open question arrive
 * (a plotly chart), and give every student a private copy. Below: the lesson list ("Run for the
 * class") and the lesson editor (write or upload, check, save, dry-run, run).
 */
import {connectClass} from './class-link.js';
import {sandboxSource} from './sandbox.js';
import {createAnswerChart} from './views/answer-chart.js';
import {createHandoutView} from './views/handout.js';
import {createLessonEditor} from './views/lesson-editor.js';
import {createLessonList} from './views/lesson-list.js';
import {createServerLoadView} from './views/server-load.js';
import {plural} from './words.js';

const TOKEN_KEY = 'kclab.instructor.token';
const CLASS_KEY = 'kclab.instructor.class';

export async function boot(shell) {
  const {api, teaching, store, controls, startSource, status, socketIo, loadVocabulary} = shell;
  document.body.dataset.page = 'instructor';
  for (const id of ['settings-button', 'lessons-link']) document.getElementById(id)?.classList.add('hidden');
  const token = instructorToken();
  const ui = createPanels();
  document.getElementById('lesson').before(ui.classPanel);
  document.querySelector('main.layout').after(ui.authoring);
  const alerts = controls.alerts;
  const io = await socketIo();
  const chart = createAnswerChart(ui.answers, {alerts});
  const handout = createHandoutView(ui.handout);
  const serverLoad = createServerLoadView(ui.serverLoad, {fetchLoad: () => teaching.getClassLoad(token, room.id)});
  let room = null; // the class as the server describes it to the instructor
  let link = null;
  let tally = {question: null, counts: {}};
  let busy = null;

  if (!token) {
    status('no instructor token');
    alerts.error('This page needs the instructor link that `kclab serve` prints (…/instructor#token=…).');
    draw();
    return;
  }
  loadVocabulary();
  // The dashboard needs the token too; a fragment is never sent to the server.
  ui.classPanel.querySelector('[data-action="stats"]').href = `/stats#token=${encodeURIComponent(token)}`;

  const list = createLessonList(ui.lessonList, {buttons: [{action: 'run-lesson', label: 'Run for the class',
    run: (lesson) => runLesson(lesson.id)}]});
  const editor = createLessonEditor(ui.editor, {teaching, alerts, getToken: () => token,
    getInstructor: () => room?.instructor ?? (ui.name.value.trim() || 'instructor'),
    onSaved: () => loadLessons(), onRun: null});

  // -- the class ------------------------------------------------------------------------------------
  ui.open.addEventListener('click', () => act('Opening a class', async () => {
    const opened = await teaching.openClass(token, ui.name.value.trim() || 'instructor');
    localStorage.setItem(CLASS_KEY, opened.id);
    setRoom(opened);
    connect();
  }));
  ui.demo.addEventListener('click', () => act('Starting the demo', () => startSession({})));
  ui.pause.addEventListener('click', () => act(room?.paused ? 'Unpausing the class' : 'Pausing the class', async () => {
    setRoom(await teaching.classAction(token, room.id, 'pause', {paused: !room.paused}));
  }));
  // The server answers at once (202) and builds the copies in the background: progress arrives
  // as class_handout events; a refusal (one already running) carries the running one's progress.
  // Students who join while it runs are added to it; after it, "missing" builds copies for those
  // who have none (latecomers, failed copies) and leaves everyone else's alone.
  const handOut = (students) => act('Starting the hand-out', async () => {
    try {
      handout.render((await teaching.classAction(token, room.id, 'fork', {students})).handout);
    } catch (error) {
      handout.render(error.body?.handout);
      throw error;
    }
  });
  ui.fork.addEventListener('click', () => handOut('all'));
  ui.forkMissing.addEventListener('click', () => handOut('missing'));

  async function startSession(body) {
    const session = await teaching.classAction(token, room.id, 'session', body);
    setRoom(await teaching.getClass(token, room.id));
    follow(session.id, session.token, session.lesson ?? null);
  }

  async function runLesson(id) {
    if (!room) {
      alerts.error('Open a class first: a lesson runs on the class cluster.');
      return;
    }
    await act(`Running ${id}`, () => startSession({lesson: id}));
  }

  /** Show the class session with this page's views; the instructor acts on it with its token. */
  function follow(session, sessionToken, lessonKey) {
    const current = shell.getSource();
    if (current?.kind === 'class' && current.id === session) return;
    tally = {question: null, counts: {}};
    const source = Object.assign(sandboxSource(api, io, {id: session, token: sessionToken}), {
      kind: 'class', label: `class ${room.code} · session ${session}`,
      lessonActions: lessonKey ? {role: 'instructor', me: null, lessonKey,
        next: () => teaching.classAction(token, room.id, 'continue')} : null,
    });
    startSource(source);
    updateChart();
  }

  function connect() {
    link?.close();
    link = connectClass(io, {classId: room.id, token, onJoined: (answer) => {
      if (!answer.ok) {
        alerts.error(`Could not follow the class: ${answer.error}`);
        return;
      }
      setRoom(answer.class);
    }, onEvent});
  }

  function onEvent(name, payload) {
    if (name === 'class_students') setRoom(payload);
    else if (name === 'class_paused') setRoom({...room, paused: payload.paused});
    else if (name === 'class_handout' && payload.class === room?.id) {
      handout.render(payload);
      if (payload.status === 'done') refresh(); // the students' list: who has a copy now
      else draw();
    } else if (name === 'class_answers') {
      tally = {question: payload.question, counts: payload.counts ?? {}};
      updateChart();
    } else if (name === 'class_session' && payload.sandbox !== shell.getSource()?.id) {
      refresh();
    }
  }

  function refresh() {
    teaching.getClass(token, room.id).then(setRoom).catch((error) => alerts.error(error.message));
  }

  function setRoom(described) {
    room = {...room, ...described};
    serverLoad.start(); // once a class is open: the server's load is the instructor's to watch
    if (described.answers) tally = {question: described.answers.question, counts: described.answers.counts};
    if (described.handout) handout.render(described.handout);
    if (room.session && room.session_token) follow(room.session, room.session_token, room.lesson);
    editor.setRunner(room ? runLesson : null);
    updateChart();
    draw();
  }

  /** The chart: the open question, else the one answered last, with its text, choices and —
   *  once revealed — the cluster's answer, from the lesson's records. */
  function updateChart() {
    const lesson = store.headView.lesson;
    const latest = lesson?.question ?? null;
    const question = latest?.state === 'open' ? latest
      : (tally.question ? lesson?.questions?.[tally.question] : null) ?? latest;
    const shown = question ?? (tally.question ? {id: tally.question, text: tally.question, choices: null, answer: null}
      : null);
    chart.update({question: shown, counts: shown && tally.question === shown.id ? tally.counts : {}});
  }
  store.on('view', updateChart);

  async function act(label, work) {
    if (busy) return;
    busy = label;
    draw();
    try {
      await work();
    } catch (error) {
      alerts.error(`${label} failed: ${error.message}`);
    } finally {
      busy = null;
      draw();
    }
  }

  function draw() {
    const hasClass = Boolean(room);
    const root = ui.classPanel;
    root.dataset.classId = room?.id ?? '';
    root.dataset.session = room?.session ?? '';
    root.dataset.paused = String(Boolean(room?.paused));
    ui.openForm.classList.toggle('hidden', hasClass);
    ui.roomBox.classList.toggle('hidden', !hasClass);
    ui.busy.textContent = busy ? `${busy}…` : '';
    for (const button of [ui.open, ui.demo, ui.pause, ui.fork, ui.forkMissing]) button.disabled = Boolean(busy) || !token;
    if (!hasClass) return;
    ui.code.textContent = room.code;
    ui.code.dataset.code = room.code;
    ui.code.setAttribute('aria-label', `Join code: ${room.code.split('').join(' ')}`);
    ui.joinAt.textContent = `Students open ${window.location.origin}/join and type the code.`;
    ui.pause.textContent = room.paused ? '▶ Unpause the class' : '❚❚ Pause the class';
    ui.pause.setAttribute('aria-pressed', String(Boolean(room.paused)));
    ui.pause.disabled ||= !room.session;
    ui.fork.disabled ||= !room.session || !room.students?.length || handout.running();
    ui.fork.title = !room.session ? 'Start a demo or a lesson first' : !room.students?.length ? 'No student has joined yet'
      : handout.running() ? 'Private copies are being handed out: wait for this hand-out to finish' : '';
    const students = Array.isArray(room.students) ? room.students : [];
    const missing = students.filter((s) => !s.sandbox).length;
    ui.forkMissing.classList.toggle('hidden', !handout.shown());
    ui.forkMissing.textContent = `Give a copy to the ${missing} without one`;
    ui.forkMissing.disabled ||= !room.session || !missing || handout.running();
    ui.count.textContent = plural(students.length, 'student');
    ui.count.dataset.count = String(students.length);
    ui.students.replaceChildren(...students.map((s) => {
      const li = document.createElement('li');
      li.dataset.studentId = s.id;
      li.dataset.sandbox = s.sandbox ?? '';
      li.textContent = `${s.name}${s.sandbox ? ' · has a private copy' : ''}`;
      return li;
    }));
    ui.session.textContent = room.session
      ? `Class cluster: ${room.lesson ? `lesson ${room.lesson}` : 'free demo'} (${room.session}).` : 'No cluster yet.';
  }

  function loadLessons() {
    return teaching.lessons().then((answer) => list.render(answer.lessons))
      .catch((error) => alerts.error(`Could not load the lessons: ${error.message}`));
  }

  loadLessons();
  const saved = localStorage.getItem(CLASS_KEY);
  if (saved) {
    try {
      setRoom(await teaching.getClass(token, saved));
      connect();
    } catch (error) {
      localStorage.removeItem(CLASS_KEY);
      if (error.status !== 404) alerts.error(`Could not reopen your class: ${error.message}`);
    }
  }
  status(room ? 'class open' : 'no class yet');
  draw();
}

function instructorToken() {
  const fromHash = new URLSearchParams(window.location.hash.slice(1)).get('token');
  if (fromHash) sessionStorage.setItem(TOKEN_KEY, fromHash);
  return fromHash || sessionStorage.getItem(TOKEN_KEY);
}

function createPanels() {
  // The buttons start disabled: draw() enables them once their handlers are wired.
  const classPanel = document.createElement('section');
  classPanel.className = 'class-panel';
  classPanel.setAttribute('aria-labelledby', 'h-class');
  classPanel.innerHTML = `
    <div class="class-main">
      <h2 id="h-class">Your class</h2>
      <p class="stats-link"><a data-action="stats" target="_blank" rel="noopener">Class statistics ↗</a>
        (every recorded session, on Spark)</p>
      <div class="open-form">
        <label class="field inline" for="instructor-name">Your name
          <input id="instructor-name" value="instructor" maxlength="40"></label>
        <button type="button" class="primary" data-action="open-class" disabled>Open a class</button>
      </div>
      <div class="room hidden">
        <p class="join-code"></p>
        <p class="join-at"></p>
        <p><span class="student-count badge"></span> <span class="class-session"></span></p>
        <ul class="class-students" aria-label="Students"></ul>
        <div class="class-buttons" role="group" aria-label="Class controls">
          <button type="button" data-action="free-demo" disabled>Start a free demo</button>
          <button type="button" data-action="pause-class" aria-pressed="false" disabled>❚❚ Pause the class</button>
          <button type="button" data-action="fork" disabled>Give every student a private copy</button>
          <button type="button" data-action="fork-missing" class="hidden" disabled>Give a copy to those without one</button>
        </div>
        <div class="handout" aria-label="Private copies handed out"></div>
        <p class="server-load" id="server-load" role="status" aria-live="polite" hidden></p>
      </div>
      <p class="class-busy" role="status"></p>
    </div>
    <div class="answers-panel" aria-label="Answers to the open question"></div>`;
  const authoring = document.createElement('section');
  authoring.className = 'authoring';
  authoring.setAttribute('aria-labelledby', 'h-authoring');
  authoring.innerHTML = `
    <section class="panel" aria-labelledby="h-lessons"><h2 id="h-lessons">Lessons</h2>
      <div class="lesson-list" id="lesson-list"></div></section>
    <section class="panel" aria-labelledby="h-authoring"><h2 id="h-authoring">Write a lesson</h2>
      <p class="panel-hint">YAML, checked as you type (lessons/lesson.schema.json). Saved lessons are yours and
        appear in the list; a lesson with problems is never saved over a good one.</p>
      <div class="editor-host"></div></section>`;
  const $ = (root, sel) => root.querySelector(sel);
  return {
    classPanel, authoring,
    openForm: $(classPanel, '.open-form'), name: $(classPanel, '#instructor-name'), open: $(classPanel, '[data-action="open-class"]'),
    roomBox: $(classPanel, '.room'), code: $(classPanel, '.join-code'), joinAt: $(classPanel, '.join-at'),
    count: $(classPanel, '.student-count'), session: $(classPanel, '.class-session'), students: $(classPanel, '.class-students'),
    demo: $(classPanel, '[data-action="free-demo"]'), pause: $(classPanel, '[data-action="pause-class"]'),
    fork: $(classPanel, '[data-action="fork"]'), forkMissing: $(classPanel, '[data-action="fork-missing"]'), handout: $(classPanel, '.handout'), busy: $(classPanel, '.class-busy'),
    serverLoad: $(classPanel, '.server-load'),
    answers: $(classPanel, '.answers-panel'), lessonList: $(authoring, '.lesson-list'), editor: $(authoring, '.editor-host'),
  };
}
