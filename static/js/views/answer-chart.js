/**
 * The class's answers to the open question, as they arrive: a plotly bar chart (plotly.js from
 * our own origin, loaded only on the instructor's page: it is 4.8 MB) and the same numbers as a
 * table — for screen readers, for tests (`tr[data-answer][data-count]`), and because colour is
 * never the only signal: once the cluster has answered, its bar is also marked "✓" in words.
 */
import d3 from '/vendor/d3.mjs';
import {answerBars} from '../lesson.js';
import {plural} from '../words.js';

const PLOTLY = '/vendor/plotly.min.js';
const BAR = '#1f5fbf';
const RIGHT = '#2e7d32';
let plotly = null;

/** window.Plotly, loading its script once. */
export function loadPlotly() {
  plotly ??= new Promise((resolve, reject) => {
    if (window.Plotly) {
      resolve(window.Plotly);
      return;
    }
    const script = document.createElement('script');
    script.src = PLOTLY;
    script.onload = () => resolve(window.Plotly);
    script.onerror = () => {
      plotly = null;
      reject(new Error(`${PLOTLY} did not load`));
    };
    document.head.append(script);
  });
  return plotly;
}

export function createAnswerChart(container, {alerts}) {
  const root = d3.select(container);
  const questionText = root.append('p').attr('class', 'answers-question');
  const chart = root.append('div').attr('id', 'answers-chart').attr('class', 'answers-chart').attr('role', 'img');
  const table = root.append('table').attr('class', 'answer-counts');
  table.append('caption').attr('class', 'sr-only').text('Answers so far');
  table.append('thead').append('tr').selectAll('th').data(['Answer', 'Students']).join('th').attr('scope', 'col')
    .text((d) => d);
  const body = table.append('tbody');
  const total = root.append('p').attr('class', 'answers-total');
  let last = '';

  /** state: {question: {id, text, choices, answer}|null, counts: {answer: n}} */
  function update({question, counts}) {
    const key = JSON.stringify([question, counts]);
    if (key === last) return;
    last = key;
    const bars = answerBars(question?.choices, counts, question?.answer ?? null);
    root.attr('data-question', question?.id ?? '').attr('data-total', bars.total);
    questionText.text(question ? `Question: ${question.text ?? question.id}` : 'No question is open. Run a lesson with a predict step.');
    body.selectAll('tr').data(bars.answers, (a) => a).join(
      (enter) => enter.append('tr').call((tr) => tr.append('th').attr('scope', 'row')).call((tr) => tr.append('td')),
    )
      .order()
      .attr('data-answer', (a) => a)
      .attr('data-count', (a, i) => bars.counts[i])
      .attr('data-right', (a, i) => String(bars.right[i]))
      .call((tr) => tr.select('th').text((a, i) => (bars.right[i] ? `${a} ✓ the cluster's answer` : a)))
      .call((tr) => tr.select('td').text((a, i) => bars.counts[i]));
    total.text(question ? `${plural(bars.total, 'answer')} so far` : '');
    chart.classed('hidden', !question).attr('aria-label', question
      ? `Bar chart of the answers: ${bars.answers.map((a, i) => `${a}: ${bars.counts[i]}`).join(', ')}` : null);
    if (question) draw(bars);
  }

  function draw(bars) {
    loadPlotly().then((Plotly) => Plotly.react(chart.node(), [{
      type: 'bar', x: bars.answers, y: bars.counts,
      text: bars.counts.map((n, i) => `${n}${bars.right[i] ? ' ✓' : ''}`), textposition: 'auto',
      marker: {color: bars.right.map((r) => (r ? RIGHT : BAR))},
      hovertemplate: '%{x}: %{y}<extra></extra>',
    }], {
      margin: {l: 36, r: 10, t: 10, b: 40}, height: 220,
      xaxis: {type: 'category', title: {text: 'answer'}}, yaxis: {title: {text: 'students'}, rangemode: 'tozero', dtick: 1},
    }, {displayModeBar: false, responsive: true, staticPlot: false}))
      .catch((error) => alerts.error(`The answer chart cannot be drawn: ${error.message} (the table shows the counts)`));
  }

  update({question: null, counts: {}});
  return {update};
}
