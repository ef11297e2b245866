/**
 * A lesson's progress in the view: `view.lesson`, folded from `lesson` records — a line-by-line
 * port of backend/view/lesson_view.py (model.js calls it for `kind: "lesson"`). The same Python
 * quirks as in model.js: `None` is `null`, `x or {}` is Python truthiness, `d.get(k)` is null
 * when the key is absent. tests/js/test_model_contract.py checks both folds on a real lesson.
 * No DOM, no globals: node runs this file as it is.
 *
 * `say` is the narration of the last stop; `captions` and `revealed` (the captions and answers
 * since the student last pressed Continue) stay until the next stop is passed; `stops` holds
 * every stop with the seqs at which it was reached and passed, for Back.
 */
import {get, orEmpty, truthy} from './py.js';

/** Where a lesson is, from its records alone: the stop, narration, captions, questions, answers. */
export function foldLesson(view, r) {
  const toState = get(r, 'to_state');
  const detail = orEmpty(get(r, 'detail'));
  if (toState === 'started') {
    view.lesson = {id: get(detail, 'lesson_id'), title: get(detail, 'title'), steps: get(detail, 'steps'),
      step: 0, op: null, line: null, status: 'running', note: null, say: null,
      captions: [], highlight: null, prompt: null, awaiting: null, question: null,
      questions: {}, revealed: [], answers: [], stop: null, stops: [],
      completed: null};
    return;
  }
  const lesson = view.lesson;
  if (lesson === null || lesson === undefined) return; // a lesson record before the lesson started
  if (toState === 'step_started') {
    stepStarted(lesson, r, detail);
  } else if (toState === 'step_finished') {
    stepFinished(lesson, r);
  } else if (toState === 'answered') {
    lesson.answers.push({student: get(r, 'student'), answer: get(r, 'answer'), correct: get(r, 'correct'),
      question: truthy(get(r, 'question')) ? get(r, 'question') : get(detail, 'question_id'),
      misconception: get(r, 'misconception'), note: get(r, 'note')});
  } else if (toState === 'revealed') {
    const question = get(lesson.questions, get(detail, 'question_id'));
    if (question !== null) {
      updateQuestion(lesson, question.id, {answer: get(r, 'answer'), explain: get(r, 'note'), state: 'revealed'});
      lesson.revealed.push(question.id);
    }
  } else if (toState === 'finished') {
    Object.assign(lesson, {status: truthy(get(detail, 'completed')) ? 'finished' : 'stopped',
      completed: get(detail, 'completed'), note: get(r, 'note'), stop: null});
  }
}

function stepStarted(lesson, r, detail) {
  const step = get(r, 'step');
  const op = get(r, 'op');
  const args = orEmpty(get(detail, 'args'));
  const stop = truthy(get(detail, 'stop'));
  Object.assign(lesson, {step, op, line: get(detail, 'line'), note: get(r, 'note'),
    status: stop ? 'waiting' : 'running'});
  if (op === 'say') {
    const targets = get(args, 'highlight');
    if (truthy(get(args, 'caption'))) {
      lesson.captions.push({step, text: get(r, 'note'), kind: 'caption'});
    } else {
      lesson.say = {step, text: get(r, 'note')};
      lesson.highlight = null; // a highlight belongs to the narration it follows
    }
    if (truthy(targets)) lesson.highlight = {step, targets, note: null};
  } else if (op === 'highlight') {
    const targets = get(args, 'targets');
    lesson.highlight = {step, targets: truthy(targets) ? targets : [], note: get(r, 'note')};
    if (truthy(get(r, 'note'))) lesson.captions.push({step, text: get(r, 'note'), kind: 'highlight'});
  } else if (op === 'predict') {
    const question = {id: get(args, 'id'), step, text: get(detail, 'question'),
      choices: get(detail, 'choices'), answer: null, explain: null, state: 'open'};
    lesson.questions[question.id] = question;
    lesson.question = question;
  } else if (op === 'await') {
    lesson.awaiting = {step, record: get(args, 'record'), message: get(args, 'message'),
      timeout_ms: get(args, 'timeout_ms')};
  } else if (op === 'pause') {
    lesson.prompt = get(args, 'prompt');
  }
  if (stop) {
    const held = get(detail, 'held_timers');
    lesson.stop = {step, op, held: truthy(held) ? held : []};
    lesson.stops.push({step, op, seq: get(r, 'seq'), done_seq: null});
  }
}

function stepFinished(lesson, r) {
  const step = get(r, 'step');
  const op = get(r, 'op');
  if (step === lesson.step) lesson.status = 'running';
  if (op === 'await') lesson.awaiting = null;
  const stop = lesson.stop;
  if (stop !== null && stop.step === step) { // Continue: what the student has seen makes way
    Object.assign(lesson, {stop: null, captions: [], revealed: []});
    lesson.stops[lesson.stops.length - 1].done_seq = get(r, 'seq');
    const question = lesson.question;
    if (op === 'predict' && question !== null && question.state === 'open') updateQuestion(lesson, question.id, {state: 'asked'});
  }
}

// questions[id] and, when it is that one, question (the latest): two copies in a snapshot sent as JSON.
function updateQuestion(lesson, questionId, changes) {
  for (const question of [get(lesson.questions, questionId), lesson.question]) {
    if (question !== null && question.id === questionId) Object.assign(question, changes);
  }
}
