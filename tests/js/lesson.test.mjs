// The lesson panel's pure parts: the lesson fold, progress, Back / Try targets, highlights,
// answers, the narration's Markdown, the editor's bookkeeping.
// Run: node --test tests/js/   (tests/js/test_node_units.py runs it under pytest)
import assert from 'node:assert/strict';
import {test} from 'node:test';
import {debounce, latestOnly, lessonIdFromFileName, lessonIdProblem, lineCount, problemsByLine}
  from '../../static/js/editor-model.js';
import {answerBars, awaitText, backStep, choiceText, gradeTally, highlightSelectors, myGradedAnswer, parseProblems,
  progressText, tryStep} from '../../static/js/lesson.js';
import {escapeHtml, renderMarkdown} from '../../static/js/markdown.js';
import {fold} from '../../static/js/model.js';

// -- the fold ------------------------------------------------------------------------------------
let seq = 0;
const rec = (toState, fields = {}) => ({v: 1, session_id: 's', seq: seq++, ts_ms: 0, kind: 'lesson',
  subject: 'lesson:demo', to_state: toState, ...fields});
const step = (toState, index, op, fields = {}) => rec(toState, {subject: `step:${index}`, step: index, op, ...fields});

test('lesson records fold into where the lesson is', () => {
  seq = 0;
  const records = [
    step('step_started', 1, 'say', {note: 'too early'}), // before started: nothing to attach it to
    rec('started', {note: 'Lesson: Demo.', detail: {lesson_id: 'demo', title: 'Demo', steps: 6}}),
    step('step_started', 1, 'say', {note: 'Hello **there**', detail: {args: {text: 'Hello **there**'}, line: 5}}),
    step('step_finished', 1, 'say', {detail: {args: {}, line: 5}}),
    step('step_started', 2, 'highlight', {note: 'look', detail: {args: {targets: ['broker:0']}, line: 7}}),
    step('step_started', 3, 'predict', {note: 'Q?', detail: {args: {id: 'q'}, question: 'Q?', choices: ['1', '2']}}),
    step('step_started', 4, 'pause', {detail: {args: {prompt: 'Go on'}}}),
  ];
  let view = fold(records);
  assert.equal(view.lesson.status, 'waiting');
  assert.equal(view.lesson.prompt, 'Go on');
  assert.deepEqual(view.lesson.highlight, {step: 2, targets: ['broker:0'], note: 'look'});
  assert.deepEqual(view.lesson.question, {id: 'q', step: 3, text: 'Q?', choices: ['1', '2'], answer: null, explain: null});
  assert.equal(progressText(view.lesson), 'step 4 of 6');
  view = fold([
    step('step_finished', 4, 'pause'),
    step('step_started', 5, 'await', {detail: {args: {record: {kind: 'controller'}, message: 'm', timeout_ms: 1500}}}),
  ], view);
  assert.equal(view.lesson.status, 'running');
  assert.equal(awaitText(view.lesson.awaiting), 'Waiting for a record with kind = controller (up to 1.5 s).');
  view = fold([
    step('step_finished', 5, 'await'),
    rec('answered', {step: 3, student: 's-1', answer: '1', correct: false, note: 'wrong', detail: {question_id: 'q'}}),
    rec('answered', {step: 3, student: 's-2', answer: '2', correct: true, note: 'right', detail: {question_id: 'q'}}),
    step('revealed', 6, 'reveal', {answer: '2', note: "The cluster's answer: 2. Because.", detail: {question_id: 'q'}}),
    step('step_started', 6, 'say', {note: 'Bye'}),
    rec('finished', {note: 'Lesson complete.', detail: {completed: true}}),
  ], view);
  const lesson = view.lesson;
  assert.equal(lesson.awaiting, null);
  assert.equal(lesson.highlight, null, 'a new say ends the highlight');
  assert.equal(lesson.question.answer, '2');
  assert.deepEqual(gradeTally(lesson, 'q'), {right: 1, wrong: 1, total: 2});
  assert.equal(myGradedAnswer(lesson, 'q', 's-1').note, 'wrong');
  assert.equal(myGradedAnswer(lesson, 'q', 'nobody'), null);
  assert.equal(progressText(lesson), 'step 6 of 6 · done');
  const stopped = fold([rec('finished', {note: 'Lesson stopped: x', detail: {completed: false}})], view);
  assert.equal(stopped.lesson.status, 'stopped');
});

test('Back goes to the previous pause, Try copies everything before here', () => {
  const outline = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((index) => ({index, op: [4, 8].includes(index) ? 'pause' : 'say'}));
  assert.equal(backStep({step: 8, status: 'waiting', steps: 10}, outline), 4);
  assert.equal(backStep({step: 4, status: 'waiting', steps: 10}, outline), 1, 'no pause before the first: step 1');
  assert.equal(backStep({step: 10, status: 'finished', steps: 10}, outline), 8);
  assert.equal(backStep({step: 8, status: 'running', steps: 10}, outline), 8, 'left the pause already: back to it');
  assert.equal(tryStep({step: 8, status: 'waiting', steps: 10}), 8);
  assert.equal(tryStep({step: 6, status: 'running', steps: 10}), 7);
  assert.equal(tryStep({step: 10, status: 'finished', steps: 10}), 11);
  assert.equal(tryStep({step: 0, status: 'running', steps: 10}), 1);
});

test('highlight targets become selectors over the testable DOM, quotes escaped', () => {
  const found = Object.fromEntries(highlightSelectors(['broker:2', 'znode:/controller', 'partition:t-0',
    'replica:t-0/1', 'request:LeaderAndIsr', 'request:StopReplica#3', 'nonsense', 'event:Expire'])
    .map((h) => [h.target, h.selector]));
  assert.equal(found['broker:2'], 'button.broker[data-broker-id="2"], section.ctl-module[data-module-broker="2"]');
  assert.equal(found['znode:/controller'], 'li.znode[data-path="/controller"]');
  assert.equal(found['partition:t-0'], 'tr.partition[data-partition="t-0"]');
  assert.equal(found['replica:t-0/1'], '.replica[data-replica="t-0/1"]');
  assert.equal(found['request:LeaderAndIsr'], 'g.request[data-request^="LeaderAndIsr#"]');
  assert.equal(found['request:StopReplica#3'], 'g.request[data-request="StopReplica#3"]');
  assert.equal(found['event:Expire'], 'li.event[data-event^="Expire#"]');
  assert.equal(found.nonsense, undefined);
  assert.equal(highlightSelectors(['znode:/a"]b'])[0].selector, 'li.znode[data-path="/a\\"]b"]');
});

test('a highlight may point at a rule of the invariant panel or at arrows of the space-time diagram', () => {
  const found = Object.fromEntries(highlightSelectors(['rule:leader_in_isr', 'arrow:request:LeaderAndIsr',
    'arrow:request:LeaderAndIsr#52', 'arrow:znode:/controller_epoch', 'arrow:event:BrokerChange', 'arrow:refused'])
    .map((h) => [h.target, h.selector]));
  assert.equal(found['rule:leader_in_isr'], 'li.rule[data-rule="leader_in_isr"]');
  assert.equal(found['arrow:request:LeaderAndIsr'], 'g.st-item[data-subject^="request:LeaderAndIsr#"]');
  assert.equal(found['arrow:request:LeaderAndIsr#52'], 'g.st-item[data-subject="request:LeaderAndIsr#52"]');
  assert.equal(found['arrow:znode:/controller_epoch'], 'g.st-item[data-subject="znode:/controller_epoch"]');
  assert.equal(found['arrow:event:BrokerChange'], 'g.st-item[data-subject^="event:BrokerChange#"]');
  assert.equal(found['arrow:refused'], 'g.st-item[data-refused]');
});

test('a choice that names a rule is shown by its title', () => {
  assert.equal(choiceText('acked_not_lost'), 'Acknowledged messages are not lost (acked_not_lost)');
  assert.equal(choiceText('none'), 'none');
  assert.equal(choiceText(2), '2');
});

test('the answer chart keeps every choice in order and marks the right one', () => {
  assert.deepEqual(answerBars(['1', '2', '3'], {2: 2, 7: 1, 9: 3}, 2), {
    answers: ['1', '2', '3', '9', '7'], counts: [0, 2, 0, 3, 1], right: [false, true, false, false, false], total: 6});
  assert.deepEqual(answerBars(null, {}, null), {answers: [], counts: [], right: [], total: 0});
});

test("a broken lesson's error becomes file, line and reason", () => {
  assert.deepEqual(parseProblems('/srv/app/lessons/bad.yaml:12: step 3: unknown op sya\n'
    + '/srv/var/lessons/ada/x.yaml: cannot read the lesson\nsomething else'), [
    {file: 'lessons/bad.yaml', line: 12, message: 'step 3: unknown op sya'},
    {file: 'lessons/ada/x.yaml', line: null, message: 'cannot read the lesson'},
    {file: null, line: null, message: 'something else'}]);
});

// -- Markdown ------------------------------------------------------------------------------------
test('narration Markdown: the formatting a lesson uses', () => {
  assert.equal(renderMarkdown('Three brokers, one is the **controller**: `/controller`,\n*first* to _win_.'),
    '<p>Three brokers, one is the <strong>controller</strong>: <code>/controller</code>, <em>first</em> to <em>win</em>.</p>');
  assert.equal(renderMarkdown('# Title\n\n- one\n- two\n  more\n\n1. a\n2. b'),
    '<h3>Title</h3>\n<ul><li>one</li><li>two more</li></ul>\n<ol><li>a</li><li>b</li></ol>');
  assert.equal(renderMarkdown('```\n<b> **x**\n```\n> quoted'), '<pre><code>&lt;b&gt; **x**</code></pre>\n<blockquote><p>quoted</p></blockquote>');
  assert.equal(renderMarkdown('`**not bold**` and `a<b`'), '<p><code>**not bold**</code> and <code>a&lt;b</code></p>');
  assert.equal(renderMarkdown('a*b*c and 2 * 3 * 4'), '<p>a*b*c and 2 * 3 * 4</p>');
  assert.equal(renderMarkdown(null), '');
});

test('narration Markdown never lets HTML or script links through', () => {
  const evil = '<img src=x onerror=alert(1)> <script>alert(1)</script> [x](javascript:alert(1)) '
    + '[y](//evil.example/) [ok](https://kafka.apache.org/) "quotes" \u0000 & done';
  const html = renderMarkdown(evil);
  assert.ok(!/<(img|script)/i.test(html), html);
  assert.ok(!html.includes('href="javascript'), html);
  assert.ok(!html.includes('href="//'), html);
  assert.ok(html.includes('<a href="https://kafka.apache.org/" target="_blank" rel="noopener noreferrer">ok</a>'), html);
  assert.ok(html.includes('&quot;quotes&quot;') && html.includes('&amp; done') && !html.includes('\u0000'), html);
  assert.equal(escapeHtml(`<a href='x'>&`), '&lt;a href=&#39;x&#39;&gt;&amp;');
});

// -- the editor ----------------------------------------------------------------------------------
test('problems go on their line; those without one (or past the end) on line 0', () => {
  const byLine = problemsByLine([{line: 6, message: 'broker 4'}, {line: 6, message: 'and more'},
    {line: 0, message: 'whole file'}, {line: 99, message: 'past the end'}], lineCount('a\nb\nc\nd\ne\nf\n'));
  assert.deepEqual([...byLine.entries()], [[6, ['broker 4', 'and more']], [0, ['whole file', 'past the end']]]);
  assert.equal(lineCount(''), 1);
});

test('checking as one types: one call after the typing stops, only the newest answer counts', () => {
  const timers = {now: 0, queue: new Map(), n: 0,
    setTimeout(fn, ms) { this.n += 1; this.queue.set(this.n, {fn, at: this.now + ms}); return this.n; },
    clearTimeout(id) { this.queue.delete(id); },
    advance(ms) { this.now += ms; for (const [id, t] of [...this.queue]) if (t.at <= this.now) { this.queue.delete(id); t.fn(); } }};
  const calls = [];
  const check = debounce((text) => calls.push(text), 300, timers);
  check('n');
  timers.advance(100);
  check('na');
  timers.advance(299);
  assert.deepEqual(calls, []);
  timers.advance(1);
  assert.deepEqual(calls, ['na']);
  check('nam');
  check.flush();
  assert.deepEqual(calls, ['na', 'nam']);
  check('x');
  check.cancel();
  timers.advance(1000);
  assert.deepEqual(calls, ['na', 'nam']);
  const latest = latestOnly();
  const first = latest.next();
  const second = latest.next();
  assert.ok(!latest.isLatest(first) && latest.isLatest(second));
});

test('lesson ids: from a file name, and the server rule', () => {
  assert.equal(lessonIdFromFileName('C:\\x\\Controller Failover.yaml'), 'controller_failover');
  assert.equal(lessonIdFromFileName('2024.yml'), 'lesson_2024');
  assert.equal(lessonIdProblem('mine_2'), null);
  assert.match(lessonIdProblem('Mine'), /lower-case/);
  assert.match(lessonIdProblem('123'), /at least one letter/);
  assert.match(lessonIdProblem(''), /give the lesson an id/);
});
