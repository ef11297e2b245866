/**
 * The lesson panel: walkthrough mode (and a class's lesson, for the instructor and for each
 * student). It draws `view.lesson` — the fold of the lesson's records, so a reload or a late
 * join shows the lesson where it is — with the narration (Markdown), what an `await` waits
 * for, the open `predict` and its grading, the highlighted brokers / znodes / partitions /
 * requests, "step k of n", and the buttons the page's role allows: Continue (a pause), Back,
 * Restart, "Try it yourself" (walkthrough), the answer buttons (walkthrough and students).
 *
 * What a button does comes from the source being shown: `lesson-actions.js`.
 * A live lesson is drawn from the head of the record log, not the scrubbed display: the buttons
 * act on the lesson as it is now. Runs after the other views, so its highlights mark what they drew.
 */
import d3 from '/vendor/d3.mjs';
import {awaitText, backStep, choiceText, gradeTally, myGradedAnswer, progressText, tryStep} from '../lesson.js';
import {lessonActions} from '../lesson-actions.js';
import {renderMarkdown} from '../markdown.js';
import {applyHighlights} from './highlight.js';

const OPS = {say: 'narration', pause: 'pause', await: 'wait for', highlight: 'look at', predict: 'question',
  reveal: 'the answer', direct: 'stage direction', expect: 'check'};

/**
 * options: {teaching: TeachingApi, api: Api, getSource(), getHeadView(), switchSandbox(sandbox), alerts}.
 */
export function createLessonView(container, {teaching, api, getSource, getHeadView, switchSandbox, alerts}) {
  const root = d3.select(container).classed('lesson-panel', true).attr('aria-labelledby', 'h-lesson');
  const top = root.append('div').attr('class', 'lesson-top');
  const heading = top.append('h2').attr('id', 'h-lesson');
  heading.append('span').attr('class', 'lesson-kicker');
  heading.append('span').attr('class', 'lesson-name');
  const progress = top.append('span').attr('class', 'lesson-progress').attr('role', 'status');
  const status = top.append('span').attr('class', 'badge lesson-status');
  const body = root.append('div').attr('class', 'lesson-body');
  const narration = body.append('div').attr('class', 'lesson-narration').attr('aria-live', 'polite');
  const note = body.append('p').attr('class', 'lesson-note');
  const question = body.append('div').attr('class', 'lesson-question');
  const qText = question.append('p').attr('class', 'q-text');
  const qAnswer = question.append('div').attr('class', 'q-answer');
  const qMine = question.append('p').attr('class', 'q-mine');
  const qResult = question.append('p').attr('class', 'q-result');
  const qRevealed = question.append('p').attr('class', 'q-revealed');
  const qTally = question.append('p').attr('class', 'q-tally');
  const end = body.append('p').attr('class', 'lesson-end');
  const nav = root.append('div').attr('class', 'lesson-nav').attr('role', 'group').attr('aria-label', 'Lesson controls');
  const outline = root.append('details').attr('class', 'lesson-outline');
  outline.append('summary').text('All steps');
  const outlineList = outline.append('ol');

  const outlines = new Map(); // lesson key -> {steps, title} | null while loading
  const actionsFor = lessonActions({teaching, api, switchSandbox});
  let busy = null; // what is in flight ("Rewinding…"), buttons disabled meanwhile
  let lastKey = '';
  let invalidate = () => {};

  function render(displayView, ctx) {
    invalidate = ctx.invalidate;
    const source = getSource();
    const actions = actionsFor(source);
    const view = actions ? getHeadView() : displayView; // a live lesson: as it is now
    const lesson = view.lesson ?? null;
    const shown = lesson !== null || actions !== null;
    root.classed('hidden', !shown);
    applyHighlights(shown && lesson?.highlight && lesson.status !== 'finished' ? lesson.highlight.targets : []);
    if (!shown) {
      lastKey = '';
      return;
    }
    const steps = actions?.lessonKey ? outlineOf(actions.lessonKey) : null;
    const mine = lesson?.question && actions?.me !== undefined ? localAnswer(source, lesson.question.id) : null;
    const key = JSON.stringify([source?.id, lesson, actions?.role, busy, steps !== null, mine]);
    if (key === lastKey) return;
    lastKey = key;
    draw(lesson, actions, steps, source, mine);
  }

  function draw(lesson, actions, steps, source, mine) {
    const role = actions?.role ?? 'replay';
    root.attr('data-role', role)
      .attr('data-lesson-id', lesson?.id ?? actions?.lessonKey ?? '')
      .attr('data-status', lesson?.status ?? 'starting')
      .attr('data-step', lesson?.step ?? 0)
      .attr('data-steps', lesson?.steps ?? '');
    heading.select('.lesson-kicker').text(role === 'copy' ? 'Free play · your copy of' : 'Lesson');
    heading.select('.lesson-name').text(lesson?.title ?? steps?.title ?? actions?.lessonKey ?? '');
    progress.text(busy ?? (!lesson ? 'starting the cluster…'
      : role === 'copy' ? `the lesson's cluster at step ${Math.min(lesson.step + 1, lesson.steps)} of ${lesson.steps}`
        : progressText(lesson)));
    status.text(statusText(lesson, role)).attr('data-status', lesson?.status ?? 'starting');
    narration.html(renderMarkdown(lesson?.say?.text ?? ''));
    note.attr('class', `lesson-note ${lesson?.op ?? ''}`).text(noteText(lesson)).classed('hidden', !noteText(lesson));
    drawQuestion(role === 'copy' ? null : lesson, actions, source, mine);
    end.text(endText(lesson, role)).classed('hidden', !endText(lesson, role))
      .classed('stopped', lesson?.status === 'stopped');
    drawButtons(lesson, actions, steps);
    drawOutline(lesson, actions, steps);
  }

  // -- the question -------------------------------------------------------------------------------
  function drawQuestion(lesson, actions, source, mine) {
    const q = lesson?.question ?? null;
    question.classed('hidden', q === null);
    if (q === null) return;
    const revealed = q.answer !== null;
    const graded = actions?.me ? myGradedAnswer(lesson, q.id, actions.me) : null;
    const canAnswer = Boolean(actions?.answer) && !revealed && lesson.status !== 'finished' && lesson.status !== 'stopped';
    question.attr('data-question', q.id).attr('data-state', revealed ? 'revealed' : mine !== null ? 'answered' : 'open');
    const text = (selection, value) => selection.text(value).classed('hidden', !value);
    text(qText, `Question: ${q.text ?? ''}`);
    text(qMine, mine !== null && !graded
      ? `Your answer: ${mine}.${revealed ? '' : ' The cluster will tell — you may still change it.'}` : '');
    text(qResult, graded ? (graded.correct ? `✓ Right: you said ${graded.answer}, and so did the cluster.`
      : `✗ Not quite: you said ${graded.answer}, the cluster says ${q.answer}.`) : '')
      .attr('data-correct', graded ? String(graded.correct) : null);
    text(qRevealed, revealed ? q.explain ?? `The cluster's answer: ${q.answer}.` : '')
      .attr('data-answer', revealed ? q.answer : null);
    text(qTally, revealed && role(actions) !== 'walkthrough' ? tallyText(gradeTally(lesson, q.id)) : '');
    const choices = Array.isArray(q.choices) ? q.choices : null;
    const group = qAnswer.selectAll('div.q-choices').data(choices && actions?.answer ? [q.id] : []).join('div')
      .attr('class', 'q-choices').attr('role', 'group').attr('aria-label', 'Your answer');
    group.selectAll('button.choice').data(choices ?? [], (c) => c).join('button')
      .attr('type', 'button').attr('class', 'choice')
      .attr('data-choice', (c) => c)
      .attr('aria-pressed', (c) => String(mine === c))
      .property('disabled', !canAnswer || busy !== null)
      .text((c) => (mine === c ? `● ${choiceText(c)}` : choiceText(c)))
      .on('click', (event, c) => answer(source, actions, q.id, c));
    const free = qAnswer.selectAll('form.q-free').data(!choices && actions?.answer ? [q.id] : []).join(
      (enter) => enter.append('form').attr('class', 'q-free')
        .call((f) => f.append('label').attr('for', 'q-free-input').text('Your answer '))
        .call((f) => f.append('input').attr('id', 'q-free-input').attr('name', 'answer').attr('autocomplete', 'off'))
        .call((f) => f.append('button').attr('type', 'submit').text('Answer')),
    );
    free.selectAll('input, button').property('disabled', !canAnswer || busy !== null);
    free.on('submit', (event) => {
      event.preventDefault();
      const value = event.currentTarget.querySelector('input').value.trim();
      if (value) answer(source, actions, q.id, value);
    });
  }

  async function answer(source, actions, questionId, value) {
    const ok = await run('Sending your answer…', () => actions.answer(questionId, value), 'Your answer');
    if (ok) {
      sessionStorage.setItem(answerKey(source, questionId), value);
      lastKey = '';
      invalidate();
    }
  }

  // -- the buttons ----------------------------------------------------------------------------------
  function drawButtons(lesson, actions, steps) {
    const waiting = lesson?.status === 'waiting';
    const back = lesson && steps ? backStep(lesson, steps.steps) : 1;
    const from = lesson ? tryStep(lesson) : 1;
    const buttons = [
      actions?.back && {action: 'back', label: '◀ Back', enabled: Boolean(lesson && steps),
        title: `Back to step ${back}: the lesson plays again on a new cluster up to there`,
        run: () => run('Rewinding…', () => actions.back(back), 'Back')},
      actions?.restart && {action: 'restart', label: '↺ Restart', enabled: Boolean(lesson),
        title: 'Start the lesson again on a new cluster', run: () => run('Restarting…', () => actions.restart(), 'Restart')},
      actions?.next && {action: 'next', label: `${lesson?.prompt || 'Continue'} ▶`, enabled: waiting, primary: true,
        title: waiting ? 'Go on with the lesson' : lesson?.status === 'finished' ? 'The lesson is over'
          : 'The lesson plays on by itself until its next pause',
        run: () => run('Going on…', () => actions.next(), 'Continue')},
      actions?.tryFrom && {action: 'try', label: 'Try it yourself', enabled: Boolean(lesson),
        title: `A private copy of this cluster as the lesson has it at step ${from}, to break as you like`,
        run: () => run('Making your copy…', () => actions.tryFrom(from), 'Try it yourself')},
      actions?.returnToLesson && {action: 'return', label: '◀ Back to the lesson', enabled: true,
        title: 'Leave this copy (it is deleted) and go back to the lesson',
        run: () => run('Going back…', () => actions.returnToLesson(), 'Back to the lesson')},
    ].filter(Boolean);
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

  function drawOutline(lesson, actions, steps) {
    outline.classed('hidden', !steps || actions?.role === 'copy');
    const items = outlineList.selectAll('li').data(steps?.steps ?? [], (s) => s.index).join(
      (enter) => enter.append('li')
        .call((li) => li.append('span').attr('class', 'o-text'))
        .call((li) => li.append('button').attr('type', 'button').attr('class', 'o-try secondary').text('try from here')),
    )
      .attr('data-step', (s) => s.index)
      .attr('aria-current', (s) => (lesson && s.index === lesson.step ? 'step' : null))
      .classed('done', (s) => Boolean(lesson) && s.index < lesson.step);
    items.select('.o-text').text((s) => `${OPS[s.op] ?? s.op}${s.text ? ` — ${firstLine(s.text)}` : ''}`);
    items.select('.o-try').classed('hidden', !actions?.tryFrom)
      .property('disabled', busy !== null || !lesson)
      .attr('aria-label', (s) => `Try it yourself from step ${s.index}`)
      .on('click', (event, s) => run('Making your copy…', () => actions.tryFrom(s.index), 'Try it yourself'));
  }

  /** Run a lesson action with the buttons disabled; every refusal shows with the server's reason. */
  async function run(doing, action, label) {
    if (busy !== null) return false;
    busy = doing;
    lastKey = '';
    invalidate();
    try {
      const answer = await action();
      if (answer && answer.ok === false) throw new Error(answer.error ?? 'refused');
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
    }).catch((error) => alerts.error(`Could not load the lesson's steps: ${error.message}`));
    return null;
  }

  return {render};
}

function role(actions) {
  return actions?.role ?? 'replay';
}

function statusText(lesson, role) {
  if (!lesson) return 'starting';
  if (role === 'copy') return 'free play';
  const waiting = {student: 'waiting for the instructor', replay: 'waiting for Continue'}[role] ?? 'waiting for you';
  return {waiting, running: 'playing',
    finished: 'done', stopped: 'stopped'}[lesson.status] ?? lesson.status;
}

function noteText(lesson) {
  if (!lesson || lesson.status === 'finished' || lesson.status === 'stopped') return '';
  if (lesson.op === 'await' && lesson.awaiting) return awaitText(lesson.awaiting);
  if (lesson.op === 'direct' && lesson.note) return `Stage direction: ${lesson.note}`;
  if (lesson.highlight?.note) return `➜ ${lesson.highlight.note}`;
  return '';
}

function endText(lesson, role) {
  if (lesson?.status === 'stopped') return `⚠ ${lesson.note ?? 'The lesson stopped.'}`;
  if (lesson?.status !== 'finished') return '';
  if (role === 'copy') return '✓ This cluster is yours: crash, pause or restart brokers from the cluster panel.';
  if (role === 'student') return '✓ Lesson complete.';
  return '✓ Lesson complete. The cluster stays: try the brokers\' actions, or Restart.';
}

function tallyText(tally) {
  return tally.total ? `${tally.right} of ${tally.total} answered right.` : 'Nobody answered.';
}

function firstLine(text) {
  const line = String(text).trim().split('\n')[0];
  return line.length > 90 ? `${line.slice(0, 89)}…` : line;
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
