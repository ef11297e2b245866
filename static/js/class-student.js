/**
 * /join: a student's page. Join with the class's code and a display name; then the page shows
 * the class's cluster live, with the main page's views, answers the instructor's questions,
 * and switches to the student's private copy when the instructor hands them out (and back to
 * the class when the instructor starts something new).
 *
 * Students watch the class cluster: the broker menu and the palette are locked with the reason,
 * and a fault sent anyway is refused by the server — the page shows the refusal. The student's
 * token (and the private copy's) are kept in localStorage, so a reload — or a student joining
 * late — catches up from the server's snapshot, lesson panel included.
 */
import {classSource, connectClass} from './class-link.js';
import {sandboxSource} from './sandbox.js';

const KEY = 'kclab.student';
const WATCHING = 'You are watching the class cluster: only the instructor acts on it. '
  + 'When the instructor hands out private copies, you can break your own.';

export async function boot(shell) {
  const {api, teaching, store, controls, startSource, status, socketIo, loadVocabulary} = shell;
  document.body.dataset.page = 'join';
  loadVocabulary(); // a private copy's broker menu asks it when each fault applies
  for (const id of ['settings-button', 'lessons-link']) document.getElementById(id)?.classList.add('hidden');
  const panel = createPanel();
  document.getElementById('lesson').before(panel.root);
  let student = load();
  let link = null;
  let room = null;
  let io = null;
  let frozen = false; // the store is paused because the class is

  panel.form.addEventListener('submit', async (event) => {
    event.preventDefault();
    const values = new FormData(panel.form);
    panel.problem.textContent = '';
    try {
      const joined = await teaching.joinClass(String(values.get('code') ?? ''), String(values.get('name') ?? ''));
      student = {classId: joined.class.id, code: joined.class.code, token: joined.token, id: joined.student.id,
        name: joined.student.name, following: 'class', copy: null};
      save(student);
      connect();
    } catch (error) {
      panel.problem.textContent = `Could not join: ${error.message}`;
      controls.alerts.error(`Could not join the class: ${error.message}`);
    }
  });
  panel.watchClass.addEventListener('click', () => follow('class'));
  panel.watchCopy.addEventListener('click', () => follow('copy'));

  async function connect() {
    io ??= await socketIo();
    link?.close();
    status('joining the class…');
    link = connectClass(io, {classId: student.classId, token: student.token, onJoined, onEvent,
      onConnection: (up, message) => { if (!up) { status('disconnected'); controls.alerts.error(message); } }});
    draw();
  }

  function onJoined(answer) {
    if (!answer.ok) {
      if (answer.status === 403 || answer.status === 404) { // the class is gone (the server restarted)
        link.close();
        link = null;
        forget();
        student = null;
        controls.alerts.error(`Your class is no longer there (${answer.error}): join again with the code.`);
        draw();
      } else {
        controls.alerts.error(`Could not follow the class: ${answer.error}`);
      }
      return;
    }
    room = answer.class;
    if (answer.student?.sandbox) student.copy = {id: answer.student.sandbox, token: answer.student.sandbox_token};
    student.copyError = answer.student?.copy_error ?? null; // a reload still says why there is no copy
    save(student);
    show(answer);
    draw();
  }

  function onEvent(name, payload) {
    if (name === 'class_session') {
      room = {...room, session: payload.sandbox, lesson: payload.lesson ?? null};
      student.following = 'class';
      save(student);
      show();
    } else if (name === 'class_paused') {
      room = {...room, paused: payload.paused};
      applyPause();
    } else if (name === 'private_sandbox') {
      student.copy = {id: payload.sandbox, token: payload.token};
      student.following = 'copy';
      student.copyError = null;
      save(student);
      show();
      controls.alerts.info('The instructor gave you a private copy of the cluster: it is yours to break.');
    } else if (name === 'private_sandbox_failed') { // an old copy was closed before the new one failed
      Object.assign(student, {copy: null, following: 'class', copyError: payload.error});
      save(student);
      show();
      controls.alerts.error(payload.error);
    }
    draw();
  }

  function follow(what) {
    student.following = what;
    save(student);
    show();
    draw();
  }

  /** Show what the student follows: their copy, the class session, or nothing yet. */
  function show(answer = null) {
    const current = shell.getSource();
    if (student.following === 'copy' && student.copy) {
      if (current?.kind === 'copy' && current.id === student.copy.id) return;
      const copy = Object.assign(sandboxSource(api, io, student.copy), {kind: 'copy', label: 'your private copy',
        lessonActions: null});
      startSource(copy);
      return;
    }
    if (!room?.session) {
      status('waiting for the instructor');
      return;
    }
    if (current?.kind === 'class' && current.id === room.session) {
      if (answer) current.rejoined(answer); // a reconnect: its snapshot
      applyPause();
      return;
    }
    startSource(classSource(link, {teaching, classId: student.classId, token: student.token, session: room.session,
      label: `class ${room.code} · watching`, readOnly: WATCHING,
      lessonActions: {role: 'student', me: student.id, lessonKey: null, answer: (q, a) => link.answer(q, a)}}));
    applyPause();
  }

  /**
   * The instructor's pause freezes the class view for everyone (the cluster itself goes on); the
   * unpause only undoes that freeze, not a pause of the student's own. Again after every new
   * snapshot (a late join while paused), since starting from a snapshot plays live.
   */
  function applyPause() {
    const watching = shell.getSource()?.kind === 'class';
    if (room?.paused && watching) {
      if (store.mode === 'live') store.pause();
      frozen = true;
    } else if (frozen) {
      frozen = false;
      if (store.mode === 'paused') store.goLive();
    }
  }
  store.on('records', (event) => { if (event.reset) applyPause(); });

  function draw() {
    const joined = Boolean(student && link);
    document.body.dataset.joined = joined ? 'true' : 'false';
    panel.form.classList.toggle('hidden', joined);
    panel.bar.classList.toggle('hidden', !joined);
    if (!joined) return;
    const following = student.following === 'copy' && student.copy ? 'copy' : room?.session ? 'class' : 'waiting';
    panel.root.dataset.classId = student.classId;
    panel.root.dataset.studentId = student.id;
    panel.root.dataset.following = following;
    panel.root.dataset.paused = String(Boolean(room?.paused));
    panel.who.textContent = `Class ${student.code}${room ? ` · ${room.instructor}'s class` : ''} · you are ${student.name}`;
    panel.what.textContent = {copy: 'You are on your private copy: act on it as you like.',
      class: 'You are watching the class cluster.', waiting: 'Waiting for the instructor to start a demo or a lesson…'}[following];
    panel.paused.classList.toggle('hidden', !(room?.paused && following === 'class'));
    panel.copyProblem.textContent = student.copyError ? `⚠ ${student.copyError}` : '';
    panel.copyProblem.classList.toggle('hidden', !student.copyError);
    panel.watchClass.classList.toggle('hidden', following !== 'copy' || !room?.session);
    panel.watchCopy.classList.toggle('hidden', following === 'copy' || !student.copy);
  }

  if (student) connect();
  else draw();
}

function createPanel() {
  const root = document.createElement('section');
  root.className = 'class-bar student-bar';
  root.setAttribute('aria-label', 'Your class');
  root.innerHTML = `
    <form class="join-form" autocomplete="off">
      <h2>Join a class</h2>
      <label class="field" for="join-code">The code your instructor shows
        <input id="join-code" name="code" required maxlength="12" autocapitalize="characters" spellcheck="false"></label>
      <label class="field" for="join-name">Your name, as the class will see it
        <input id="join-name" name="name" required maxlength="40"></label>
      <p class="form-problem" role="alert"></p>
      <button type="submit" class="primary">Join</button>
    </form>
    <div class="class-status hidden">
      <span class="class-who"></span>
      <span class="class-what"></span>
      <span class="class-paused hidden" role="status">❚❚ The instructor paused the class: your view is frozen.</span>
      <span class="copy-problem hidden" role="alert"></span>
      <button type="button" class="watch-class hidden" data-action="watch-class">Watch the class</button>
      <button type="button" class="watch-copy hidden" data-action="watch-copy">My private copy</button>
    </div>`;
  const $ = (sel) => root.querySelector(sel);
  return {root, form: $('.join-form'), problem: $('.form-problem'), bar: $('.class-status'), who: $('.class-who'),
    what: $('.class-what'), paused: $('.class-paused'), copyProblem: $('.copy-problem'), watchClass: $('.watch-class'),
    watchCopy: $('.watch-copy')};
}

function load() {
  try {
    const saved = JSON.parse(localStorage.getItem(KEY) ?? 'null');
    return saved?.classId && saved?.token ? saved : null;
  } catch {
    return null;
  }
}

function save(student) {
  localStorage.setItem(KEY, JSON.stringify(student));
}

function forget() {
  localStorage.removeItem(KEY);
}
