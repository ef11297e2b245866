/**
 * A lesson's progress in the view: `view.lesson`, folded from `lesson` records — the browser's
 * half of backend/view/lesson_view.py, the reference (model.js calls it for `kind: "lesson"`;
 * tests/js/test_model_contract.py checks both folds on real lessons). Records come normalised
 * (record.js). No DOM, no globals: node runs this file as it is.
 *
 * `say` is the narration of the last stop; `captions` and `revealed` (the captions and answers
 * since the student last pressed Continue) stay until the next stop is passed; `stops` holds
 * every stop with the seqs at which it was reached and passed, for Back.
 */

/** Where a lesson is, from its records alone: the stop, narration, captions, questions, answers. */
export function foldLesson(view, r) {
  const {detail} = r;
  if (r.to_state === 'started') {
    view.lesson = {id: detail.lesson_id ?? null, title: detail.title ?? null, steps: detail.steps ?? null,
      step: 0, op: null, line: null, status: 'running', note: null, say: null,
      captions: [], highlight: null, prompt: null, awaiting: null, question: null,
      questions: {}, revealed: [], answers: [], stop: null, stops: [],
      completed: null};
    return;
  }
  const {lesson} = view;
  if (!lesson) return; // a lesson record before the lesson started: nothing to attach it to
  if (r.to_state === 'step_started') {
    stepStarted(lesson, r);
  } else if (r.to_state === 'step_finished') {
    stepFinished(lesson, r);
  } else if (r.to_state === 'answered') {
    lesson.answers.push({student: r.student, answer: r.answer, correct: r.correct,
      question: r.question || (detail.question_id ?? null), misconception: r.misconception, note: r.note});
  } else if (r.to_state === 'revealed') {
    const question = lesson.questions[detail.question_id];
    if (question !== undefined) {
      updateQuestion(lesson, question.id, {answer: r.answer, explain: r.note, state: 'revealed'});
      lesson.revealed.push(question.id);
    }
  } else if (r.to_state === 'finished') {
    Object.assign(lesson, {status: detail.completed ? 'finished' : 'stopped', completed: detail.completed ?? null,
      note: r.note, stop: null});
  }
}

function stepStarted(lesson, r) {
  const {step, op, note, detail} = r;
  const args = detail.args || {};
  const stop = Boolean(detail.stop);
  Object.assign(lesson, {step, op, line: detail.line ?? null, note, status: stop ? 'waiting' : 'running'});
  if (op === 'say') {
    if (args.caption) {
      lesson.captions.push({step, text: note, kind: 'caption'});
    } else {
      lesson.say = {step, text: note};
      lesson.highlight = null; // a highlight belongs to the narration it follows
    }
    if (args.highlight?.length) lesson.highlight = {step, targets: args.highlight, note: null};
  } else if (op === 'highlight') {
    lesson.highlight = {step, targets: args.targets?.length ? args.targets : [], note};
    if (note) lesson.captions.push({step, text: note, kind: 'highlight'});
  } else if (op === 'predict') {
    const question = {id: args.id ?? null, step, text: detail.question ?? null, choices: detail.choices ?? null,
      answer: null, explain: null, state: 'open'};
    lesson.questions[question.id] = question;
    lesson.question = question;
  } else if (op === 'await') {
    lesson.awaiting = {step, record: args.record ?? null, message: args.message ?? null,
      timeout_ms: args.timeout_ms ?? null};
  } else if (op === 'pause') {
    lesson.prompt = args.prompt ?? null;
  }
  if (stop) {
    lesson.stop = {step, op, held: detail.held_timers?.length ? detail.held_timers : []};
    lesson.stops.push({step, op, seq: r.seq, done_seq: null});
  }
}

function stepFinished(lesson, r) {
  const {step, op} = r;
  if (step === lesson.step) lesson.status = 'running';
  if (op === 'await') lesson.awaiting = null;
  if (lesson.stop !== null && lesson.stop.step === step) { // Continue: what the student has seen makes way
    Object.assign(lesson, {stop: null, captions: [], revealed: []});
    lesson.stops[lesson.stops.length - 1].done_seq = r.seq;
    const {question} = lesson;
    if (op === 'predict' && question !== null && question.state === 'open') {
      updateQuestion(lesson, question.id, {state: 'asked'});
    }
  }
}

/** questions[id] and, when it is that one, question (the latest) change together: in a snapshot
 * sent as JSON they are two copies, as in lesson_view.py's _update_question. */
function updateQuestion(lesson, questionId, changes) {
  for (const question of [lesson.questions[questionId], lesson.question]) {
    if (question && question.id === questionId) Object.assign(question, changes);
  }
}
