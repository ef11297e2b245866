/**
 * The lesson panel: walkthrough mode (and a class's lesson, for the instructor and for each
 * student). It draws `view.lesson` — the fold of the lesson's records, so a reload or a late
 * join shows the lesson where it is — stop by stop: the stop's narration (Markdown) below the
 * captions since the last stop, the questions (lesson-questions.js), what is highlighted, whether
 * the lab's timers are held, "stop k of n", the stops so far, and the buttons the page's role
 * allows: Back, Continue, Try it from here, Restart, Try it yourself, the next lesson.
 *
 * Back *looks back*: it scrubs the record store to the moment a passed stop was on screen
 * (`store.scrubTo`: a checkpoint and a short fold, well under a second) and the panel draws that
 * moment, marked as a look back; Continue returns to now. A live lesson is drawn from the head of
 * the record log (the buttons act on the lesson as it is now), a look back from the display.
 * What a button does comes from the source being shown: `lesson-actions.js`.
 */
import d3 from '/vendor/d3.mjs';
import {lessonScore, nextLesson, readProgress, saveProgress, withDone} from '../course.js';
import {backTarget, firstLine, heldText, lookBackAt, noteText, progressText, shownStop, statusText, stopsOf, tryFromStep,
  tryStep} from '../lesson.js';
import {lessonActions} from '../lesson-actions.js';
import {renderMarkdown} from '../markdown.js';
import {applyHighlights} from './highlight.js';
import {createQuestions} from './lesson-questions.js';

const OPS = {say: 'narration', pause: 'pause', predict: 'question'};

/** options: {teaching, api, store, getSource(), switchSandbox(sandbox), alerts}. */
export function createLessonView(container, {teaching, api, store, getSource, switchSandbox, waitForRoom,
  alerts}) {
  const root = d3.select(container).classed('lesson-panel', true).attr('aria-labelledby', 'h-lesson');
  const top = root.append('div').attr('class', 'lesson-top');
  const heading = top.append('h2').attr('id', 'h-lesson');
  heading.append('span').attr('class', 'lesson-kicker');
  heading.append('span').attr('class', 'lesson-name');
  const progress = top.append('span').attr('class', 'lesson-progress').attr('role', 'status');
  const status = top.append('span').attr('class', 'badge lesson-status');
  const body = root.append('div').attr('class', 'lesson-body');
  const lookBack = body.append('p').attr('class', 'lesson-lookback');
  const captions = body.append('div').attr('class', 'lesson-captions');
  const narration = body.append('div').attr('class', 'lesson-narration').attr('aria-live', 'polite');
  const note = body.append('p').attr('class', 'lesson-note');
  const held = body.append('p').attr('class', 'lesson-held');
  const questions = createQuestions(body.append('div').attr('class', 'lesson-questions').node(),
    {onAnswer: (question, choice) => answer(question, choice)});
  const end = body.append('p').attr('class', 'lesson-end');
  const nav = root.append('div').attr('class', 'lesson-nav').attr('role', 'group').attr('aria-label', 'Lesson controls');
  const outline = root.append('details').attr('class', 'lesson-outline');
  outline.append('summary').text('All stops');
  const outlineList = outline.append('ol');

  const outlines = new Map(); // lesson key -> {steps, title} | null while loading
  const actionsFor = lessonActions({teaching, api, switchSandbox, waitForRoom});
  let course = null; // GET /api/lessons: the parts (for "next lesson") and the titles
  let busy = null; // what is in flight ("Going on…"), buttons disabled meanwhile
  let lastKey = '';
  let invalidate = () => {};
  let current = {source: null, actions: null}; // what an answer is sent through

  function render(displayView, ctx) {
    invalidate = ctx.invalidate;
    const source = getSource();
    const actions = actionsFor(source);
    const looking = Boolean(actions) && actions.role !== 'copy' && store.mode === 'scrubbed';
    const view = actions && !looking ? store.headView : displayView; // a live lesson: as it is now
    const lesson = view.lesson ?? null;
    const shown = lesson !== null || actions !== null;
    root.classed('hidden', !shown);
    applyHighlights(shown && lesson?.highlight && lesson.status !== 'finished' ? lesson.highlight.targets : []);
    if (!shown) {
      lastKey = '';
      return;
    }
    const steps = actions?.lessonKey ? outlineOf(actions.lessonKey) : null;
    if (actions?.startLesson && lesson?.status === 'finished' && !looking) {
      remember(source, actions, lesson);
      loadCourse();
    }
    const answers = Object.fromEntries(Object.keys(lesson?.questions ?? {}).map((q) => [q, localAnswer(source, q)]));
    const key = JSON.stringify([source?.id, lesson, actions?.role, busy, steps !== null, answers, looking,
      course !== null]);
    if (key === lastKey) return;
    lastKey = key;
    current = {source, actions};
    draw(lesson, actions, steps, looking, (q) => answers[q] ?? null);
  }

  function draw(lesson, actions, steps, looking, mine) {
    const role = actions?.role ?? 'replay';
    const stop = shownStop(lesson);
    root.attr('data-role', role)
      .attr('data-lesson-id', lesson?.id ?? actions?.lessonKey ?? '')
      .attr('data-status', lesson?.status ?? 'starting')
      .attr('data-step', lesson?.step ?? 0)
      .attr('data-steps', lesson?.steps ?? '')
      .attr('data-stop', stop?.step ?? '')
      .attr('data-look-back', String(looking));
    heading.select('.lesson-kicker').text(role === 'copy' ? 'Free play · your copy of' : 'Lesson');
    heading.select('.lesson-name').text(lesson?.title ?? steps?.title ?? actions?.lessonKey ?? '');
    progress.text(busy ?? (!lesson ? 'starting the cluster…'
      : role === 'copy' ? `the lesson's cluster at step ${Math.min(lesson.step + 1, lesson.steps)} of ${lesson.steps}`
        : progressText(lesson, steps?.steps)));
    status.text(looking ? 'looking back' : statusText(lesson, role)).attr('data-status', lesson?.status ?? 'starting');
    lookBack.text(looking ? `◀ Looking back: stop ${(lesson?.stops ?? []).length} as you saw it. The cluster has gone `
      + 'on meanwhile — Continue returns to where the lesson is.' : '').classed('hidden', !looking);
    const lines = role === 'copy' ? [] : lesson?.captions ?? [];
    // A caption describes its moment ("it wakes in 2 s") and stays until the student passes the
    // next stop: once something newer was said — a later caption, or the stop now waiting — it says
    // "Earlier:", so a moment gone by does not read as now (in words, not colour alone).
    const newest = Math.max(lines.at(-1)?.step ?? -1, lesson?.stop?.step ?? -1);
    const earlier = (c) => c.step < newest;
    captions.selectAll('p.caption').data(lines, (c) => c.step).join('p')
      .attr('class', (c) => `caption ${c.kind}${earlier(c) ? ' earlier' : ''}`).attr('data-step', (c) => c.step)
      .html((c) => renderMarkdown(`${earlier(c) ? 'Earlier: ' : ''}${c.kind === 'highlight' ? '➜ ' : ''}${c.text ?? ''}`));
    narration.html(renderMarkdown(lesson?.say?.text ?? '')).attr('data-step', lesson?.say?.step ?? null);
    const noted = noteText(lesson);
    note.attr('class', `lesson-note ${lesson?.op ?? ''}`).text(noted).classed('hidden', !noted);
    held.text(heldText(lesson?.stop?.held)).classed('hidden', !lesson?.stop?.held?.length);
    const canAnswer = Boolean(actions?.answer) && !looking && busy === null;
    questions.draw(role === 'copy' ? null : lesson, {actions, mine, canAnswer, busy: busy !== null,
      showTally: role !== 'walkthrough'});
    drawEnd(lesson, role, actions);
    drawButtons(lesson, actions, looking, mine);
    drawOutline(lesson, actions, steps);
  }

  // -- the buttons ----------------------------------------------------------------------------------
  function drawButtons(lesson, actions, looking, mine) {
    const waiting = lesson?.status === 'waiting';
    const open = lesson?.stop?.op === 'predict' ? lesson.question : null;
    const unanswered = open !== null && open.state === 'open' && actions?.role === 'walkthrough' && mine(open.id) === null;
    const back = backTarget(lesson);
    const here = tryFromStep(lesson);
    const next = course && actions?.startLesson && lesson?.status === 'finished' ? nextLesson(course.parts, lesson.id) : null;
    const buttons = [
      {action: 'back', label: '◀ Back', enabled: back !== null,
        title: back ? `Look back at stop ${back.number} as it was (the cluster goes on meanwhile)` : 'No earlier stop',
        run: () => run('Looking back…', () => store.scrubTo(back.seq), 'Back')},
      (actions?.next || looking) && {action: 'next', primary: true, // a class's student returns from a look back too
        label: looking ? 'Continue ▶ (back to now)' : `${lesson?.prompt && lesson?.op === 'pause' ? lesson.prompt : 'Continue'} ▶`,
        enabled: looking || (waiting && !unanswered),
        title: looking ? 'Return to where the lesson is' : unanswered ? 'Pick an answer first — or “I\'m not sure”'
          : waiting ? 'Go on with the lesson' : lesson?.status === 'finished' ? 'The lesson is over'
            : 'The lesson plays on by itself until its next stop',
        run: () => (looking ? store.goLive() : run('Going on…', () => actions.next(), 'Continue'))},
      actions?.replay && {action: 'replay', label: 'Try it from here', enabled: Boolean(lesson?.stops?.length),
        title: `Play the lesson again on a new cluster, up to this stop, to act on it yourself`,
        run: () => run('Replaying…', () => actions.replay(here), 'Try it from here')},
      actions?.restart && {action: 'restart', label: '↺ Restart', enabled: Boolean(lesson),
        title: 'Start the lesson again on a new cluster', run: () => run('Restarting…', () => actions.restart(), 'Restart')},
      actions?.tryFrom && {action: 'try', label: 'Try it yourself', enabled: Boolean(lesson),
        title: 'A private copy of this cluster, in free play, to break as you like',
        run: () => run('Making your copy…', () => actions.tryFrom(tryStep(lesson)), 'Try it yourself')},
      actions?.returnToLesson && {action: 'return', label: '◀ Back to the lesson', enabled: true,
        title: 'Leave this copy (it is deleted) and go back to the lesson',
        run: () => run('Going back…', () => actions.returnToLesson(), 'Back to the lesson')},
      next && {action: 'next-lesson', primary: true, label: `Next lesson: ${titleOf(next)} ▶`, enabled: true,
        title: 'The next lesson of the course', run: () => run('Starting the next lesson…', () => actions.startLesson(next),
          'The next lesson')},
    ].filter((b) => b && (b.action !== 'back' || (actions && actions.role !== 'copy')));
    nav.selectAll('button').data(buttons, (b) => b.action).join('button')
      .attr('type', 'button')
      .attr('data-action', (b) => b.action)
      .classed('primary', (b) => Boolean(b.primary))
      .property('disabled', (b) => !b.enabled || busy !== null)
      .attr('title', (b) => b.title)
      .text((b) => b.label)
      .on('click', (event, b) => b.run());
    nav.classed('hidden', buttons.length === 0);
  }

  function drawEnd(lesson, role, actions) {
    let text = '';
    if (lesson?.status === 'stopped') text = `⚠ ${lesson.note ?? 'The lesson stopped.'}`;
    else if (lesson?.status === 'finished' && role === 'copy') text = '✓ This cluster is yours: crash, pause or restart brokers.';
    else if (lesson?.status === 'finished') {
      const score = actions?.me ? lessonScore(lesson, actions.me) : null;
      text = `✓ Lesson complete.${score?.asked ? ` You predicted ${score.right} of ${score.asked} right.` : ''}`
        + (role === 'walkthrough' ? ' The cluster stays: try the brokers\' actions, or go on to the next lesson.' : '');
    }
    end.text(text).classed('hidden', !text).classed('stopped', lesson?.status === 'stopped');
  }

  function drawOutline(lesson, actions, steps) {
    outline.classed('hidden', !steps || actions?.role === 'copy');
    const reached = new Map((lesson?.stops ?? []).map((s) => [s.step, s]));
    const here = shownStop(lesson)?.step;
    const items = outlineList.selectAll('li').data(stopsOf(steps?.steps), (s) => s.index).join(
      (enter) => enter.append('li').call((li) => li.append('button').attr('type', 'button').attr('class', 'o-stop')),
    )
      .attr('data-step', (s) => s.index)
      .attr('aria-current', (s) => (s.index === here ? 'step' : null))
      .classed('done', (s) => lookBackAt(lesson, s.index) !== null);
    items.select('.o-stop')
      .text((s) => `${OPS[s.op] ?? s.op}${s.text ? ` — ${firstLine(s.text)}` : ''}`)
      .property('disabled', (s) => busy !== null || lookBackAt(lesson, s.index) === null || !reached.has(s.index))
      .attr('title', (s) => (lookBackAt(lesson, s.index) ? 'Look back at this stop as it was' : null))
      .on('click', (event, s) => {
        const target = lookBackAt(lesson, s.index);
        if (target) run('Looking back…', () => store.scrubTo(target.seq), 'Back');
      });
  }

  /** Keyboard: Enter goes on from a stop (when no button or field has the focus). */
  document.addEventListener('keydown', (event) => {
    if (event.key !== 'Enter' || event.defaultPrevented || root.classed('hidden')) return;
    if (event.target.closest?.('input, select, textarea, button, a, summary, dialog, [role="menu"]')) return;
    const next = nav.select('button[data-action="next"]').node();
    if (next && !next.disabled) {
      next.click();
      event.preventDefault();
    }
  });

  async function answer(questionId, value) {
    const {source, actions} = current;
    const ok = await run('Sending your answer…', () => actions.answer(questionId, value), 'Your answer');
    if (ok) {
      sessionStorage.setItem(answerKey(source, questionId), value);
      lastKey = '';
      invalidate();
    }
  }

  /** A finished walkthrough: this browser's progress in the course (the best score kept). */
  function remember(source, actions, lesson) {
    const key = `kclab.remembered.${source.id}`;
    if (sessionStorage.getItem(key)) return;
    sessionStorage.setItem(key, '1');
    saveProgress(localStorage, withDone(readProgress(localStorage), actions.lessonKey, lessonScore(lesson, actions.me)));
  }

  function loadCourse() {
    if (course !== null) return;
    course = {parts: [], lessons: []};
    teaching.lessons().then((answer) => {
      course = {parts: answer.parts ?? [], lessons: answer.lessons ?? []};
      lastKey = '';
      invalidate();
    }).catch((error) => alerts.error(`Could not load the course: ${error.message}`));
  }

  function titleOf(id) {
    return course?.lessons.find((l) => l.id === id)?.title ?? id;
  }

  /** Run a lesson action with the buttons disabled; every refusal shows with the server's reason. */
  async function run(doing, action, label) {
    if (busy !== null) return false;
    busy = doing;
    lastKey = '';
    invalidate();
    try {
      const result = await action();
      if (result && result.ok === false) throw new Error(result.error ?? 'refused');
      return true;
    } catch (error) {
      alerts.error(`${label} failed: ${error.message}`);
      return false;
    } finally {
      busy = null;
      lastKey = '';
      invalidate();
    }
  }

  function outlineOf(key) {
    if (outlines.has(key)) return outlines.get(key);
    outlines.set(key, null);
    teaching.lesson(key).then((lesson) => {
      outlines.set(key, lesson.broken ? null : {title: lesson.title, steps: lesson.steps});
      lastKey = '';
      invalidate();
    }).catch((error) => alerts.error(`Could not load the lesson's stops: ${error.message}`));
    return null;
  }

  return {render};
}

function answerKey(source, questionId) {
  return `kclab.answer.${source?.id ?? ''}.${questionId}`;
}

function localAnswer(source, questionId) {
  try {
    return sessionStorage.getItem(answerKey(source, questionId));
  } catch {
    return null;
  }
}
