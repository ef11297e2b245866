/**
 * A lesson's progress in the view: `view.lesson`, folded from `lesson` records — a line-by-line
 * port of backend/core/lesson_view.py (model.js calls it for `kind: "lesson"`). The same Python
 * quirks as in model.js: `None` is `null`, `x or {}` is Python truthiness, `d.get(k)` is null
 * when the key is absent. tests/js/test_model_contract.py checks both folds on a real lesson.
 * No DOM, no globals: node runs this file as it is.
 */
import {get, orEmpty, truthy} from './py.js';

/** Where a lesson is, from its records alone: the step, narration, highlight, question, answers. */
export function foldLesson(view, r) {
  const toState = get(r, 'to_state');
  const detail = orEmpty(get(r, 'detail'));
  if (toState === 'started') {
    view.lesson = {id: get(detail, 'lesson_id'), title: get(detail, 'title'), steps: get(detail, 'steps'),
      step: 0, op: null, line: null, status: 'running', note: null, say: null,
      highlight: null, prompt: null, awaiting: null, question: null, answers: [],
      completed: null};
    return;
  }
  const lesson = view.lesson;
  if (lesson === null || lesson === undefined) return; // a lesson record before the lesson started
  const step = get(r, 'step');
  const op = get(r, 'op');
  const args = orEmpty(get(detail, 'args'));
  if (toState === 'step_started') {
    Object.assign(lesson, {step, op, line: get(detail, 'line'), note: get(r, 'note'),
      status: op === 'pause' ? 'waiting' : 'running'});
    if (op === 'say') {
      lesson.say = {step, text: get(r, 'note')};
      lesson.highlight = null; // a highlight belongs to the narration it follows
    } else if (op === 'highlight') {
      const targets = get(args, 'targets');
      lesson.highlight = {step, targets: truthy(targets) ? targets : [], note: get(r, 'note')};
    } else if (op === 'predict') {
      lesson.question = {id: get(args, 'id'), step, text: get(detail, 'question'),
        choices: get(detail, 'choices'), answer: null, explain: null};
    } else if (op === 'await') {
      lesson.awaiting = {step, record: get(args, 'record'), message: get(args, 'message'),
        timeout_ms: get(args, 'timeout_ms')};
    } else if (op === 'pause') {
      lesson.prompt = get(args, 'prompt');
    }
  } else if (toState === 'step_finished') {
    if (step === lesson.step) lesson.status = 'running';
    if (op === 'await') lesson.awaiting = null;
  } else if (toState === 'answered') {
    lesson.answers.push({student: get(r, 'student'), answer: get(r, 'answer'), correct: get(r, 'correct'),
      question: get(detail, 'question_id'), note: get(r, 'note')});
  } else if (toState === 'revealed') {
    const question = lesson.question;
    if (question !== null && question.id === get(detail, 'question_id')) {
      Object.assign(question, {answer: get(r, 'answer'), explain: get(r, 'note')});
    }
  } else if (toState === 'finished') {
    Object.assign(lesson, {status: truthy(get(detail, 'completed')) ? 'finished' : 'stopped',
      completed: get(detail, 'completed'), note: get(r, 'note')});
  }
}
