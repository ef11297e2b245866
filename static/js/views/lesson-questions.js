/**
 * The lesson panel's questions (a D3 join by question id): the open one with its choices and
 * "I'm not sure" — Continue waits for one of them —, those asked and not yet answered by the
 * cluster (the student's prediction, waiting), and those the cluster answered since the last
 * stop: the student's answer beside the cluster's, the rule, and — for a wrong choice — the
 * misconception the lesson's author attached to it.
 */
import d3 from '/vendor/d3.mjs';
import {UNSURE, choiceText, gradeTally, myGradedAnswer, questionsOnScreen} from '../lesson.js';

/** options: {onAnswer(questionId, choice)}; draw(lesson, {actions, mine(id), canAnswer, busy, showTally}). */
export function createQuestions(container, {onAnswer}) {
  const root = d3.select(container);

  function draw(lesson, {actions, mine, canAnswer, busy, showTally}) {
    const questions = lesson ? questionsOnScreen(lesson) : [];
    root.selectAll('div.lesson-question').data(questions, (q) => q.id).join(
      (enter) => enter.append('div').attr('class', 'lesson-question')
        .call((div) => div.append('p').attr('class', 'q-text'))
        .call((div) => div.append('div').attr('class', 'q-choices').attr('role', 'group')
          .attr('aria-label', 'Your answer'))
        .call((div) => ['q-mine', 'q-result', 'q-revealed', 'q-misconception', 'q-tally']
          .forEach((name) => div.append('p').attr('class', name))),
    )
      .attr('data-question', (q) => q.id)
      .attr('data-state', (q) => state(q, mine(q.id)))
      .each(function drawOne(q) {
        drawQuestion(d3.select(this), q, lesson, {actions, given: mine(q.id), canAnswer, busy, showTally});
      });
  }

  function drawQuestion(div, q, lesson, {actions, given, canAnswer, busy, showTally}) {
    const revealed = q.state === 'revealed';
    const graded = actions?.me ? myGradedAnswer(lesson, q.id, actions.me) : null;
    const open = q.state === 'open' && lesson.status === 'waiting';
    const text = (name, value) => div.select(`.${name}`).text(value ?? '').classed('hidden', !value);
    text('q-text', `Question: ${q.text ?? ''}`);
    const choices = Array.isArray(q.choices) && actions?.answer && open ? [...q.choices, UNSURE] : [];
    div.select('.q-choices').classed('hidden', !choices.length).selectAll('button.choice')
      .data(choices, (c) => c).join('button')
      .attr('type', 'button')
      .attr('class', (c) => (c === UNSURE ? 'choice unsure' : 'choice'))
      .attr('data-choice', (c) => c)
      .attr('aria-pressed', (c) => String(given === c))
      .property('disabled', !canAnswer || busy)
      .text((c) => (given === c ? `● ${choiceText(c)}` : choiceText(c)))
      .on('click', (event, c) => onAnswer(q.id, c));
    text('q-mine', given !== null && !graded && !revealed
      ? `Your prediction: ${given}.${open ? ' You may change it until you continue.' : ' The cluster will tell.'}` : '');
    div.select('.q-result').attr('data-correct', graded ? String(graded.correct) : null);
    text('q-result', graded && revealed ? resultText(graded, q.answer) : '');
    div.select('.q-revealed').attr('data-answer', revealed ? q.answer : null);
    text('q-revealed', revealed ? q.explain ?? `The cluster's answer: ${q.answer}.` : '');
    text('q-misconception', graded?.misconception ? `Where “${graded.answer}” goes wrong: ${graded.misconception}` : '');
    text('q-tally', revealed && showTally ? tallyText(gradeTally(lesson, q.id)) : '');
  }

  return {draw};
}

function state(q, given) {
  if (q.state === 'revealed') return 'revealed';
  return given !== null ? 'answered' : q.state === 'open' ? 'open' : 'asked';
}

function resultText(graded, answer) {
  if (graded.correct === true) return `✓ Right: you said ${graded.answer}, and so did the cluster.`;
  if (graded.correct === false) return `✗ Not quite: you said ${graded.answer}, the cluster says ${answer}.`;
  return `? You were not sure; the cluster says ${answer}.`;
}

function tallyText(tally) {
  if (!tally.total) return 'Nobody answered.';
  return `${tally.right} of ${tally.total} answered right${tally.unsure ? `, ${tally.unsure} not sure` : ''}.`;
}
