// The lesson panel's pure parts: the lesson fold, progress, Back / Try targets, highlights,
// answers, the narration's Markdown, the editor's bookkeeping.
// Run: node --test tests/js/   (tests/js/test_node_units.py runs it under pytest)
import assert from 'node:assert/strict';
import {test} from 'node:test';
import {debounce, latestOnly, lessonIdFromFileName, lessonIdProblem, lineCount, problemsByLine}
  from '../../static/js/editor-model.js';
import {PROGRESS_KEY, firstToDo, lessonScore, nextLesson, readProgress, saveProgress, scoreText, withDone}
  from '../../static/js/course.js';
import {UNSURE, answerBars, awaitText, backTarget, choiceText, gradeTally, heldText, highlightSelectors, lookBackAt, myGradedAnswer,
  parseProblems, progressText, questionsOnScreen, shownStop, stopsOf, tryFromStep, tryStep} from '../../static/js/lesson.js';
import {escapeHtml, renderMarkdown} from '../../static/js/markdown.js';
import {fold} from '../../static/js/model.js';

// -- the fold ------------------------------------------------------------------------------------
let seq = 0;
const rec = (toState, fields = {}) => ({v: 1, session_id: 's', seq: seq++, ts_ms: 0, kind: 'lesson',
  subject: 'lesson:demo', to_state: toState, ...fields});
const step = (toState, index, op, fields = {}) => rec(toState, {subject: `step:${index}`, step: index, op, ...fields});
const OUTLINE = [{index: 1, op: 'say', stop: true}, {index: 2, op: 'say', stop: false}, {index: 3, op: 'highlight', stop: false},
  {index: 4, op: 'predict', stop: true}, {index: 5, op: 'await', stop: false}, {index: 6, op: 'reveal', stop: false},
  {index: 7, op: 'say', stop: true}];

test('lesson records fold into stops, captions, questions and answers', () => {
  seq = 0;
  const records = [
    step('step_started', 1, 'say', {note: 'too early'}), // before started: nothing to attach it to
    rec('started', {note: 'Lesson: Demo.', detail: {lesson_id: 'demo', title: 'Demo', steps: 7}}),
    step('step_started', 1, 'say', {note: 'Hello **there**', detail: {args: {text: 'Hello **there**',
      highlight: ['broker:1']}, line: 5, stop: true}}),
  ];
  let view = fold(records);
  assert.equal(view.lesson.status, 'waiting');
  assert.deepEqual(view.lesson.stop, {step: 1, op: 'say', held: []});
  assert.deepEqual(view.lesson.highlight, {step: 1, targets: ['broker:1'], note: null}, 'a narration can point');
  assert.equal(progressText(view.lesson, OUTLINE), 'stop 1 of 3');
  assert.equal(backTarget(view.lesson), null, 'nothing before the first stop');
  view = fold([
    step('step_finished', 1, 'say', {detail: {args: {}, line: 5}}),
    step('step_started', 2, 'say', {note: 'A caption.', detail: {args: {caption: true}, line: 7, stop: false}}),
    step('step_finished', 2, 'say'),
    step('step_started', 3, 'highlight', {note: 'look', detail: {args: {targets: ['broker:0']}, line: 9, stop: false}}),
    step('step_finished', 3, 'highlight'),
    step('step_started', 4, 'predict', {note: 'Q?', detail: {args: {id: 'q'}, question: 'Q?', choices: ['1', '2'],
      stop: true, held_timers: ['replica.lag.time.max.ms']}}),
  ], view);
  let lesson = view.lesson;
  assert.equal(lesson.say.text, 'Hello **there**', 'a caption does not replace the stop\'s narration');
  assert.deepEqual(lesson.captions, [{step: 2, text: 'A caption.', kind: 'caption'}, {step: 3, text: 'look', kind: 'highlight'}]);
  assert.deepEqual(lesson.question, {id: 'q', step: 4, text: 'Q?', choices: ['1', '2'], answer: null, explain: null,
    state: 'open'});
  assert.deepEqual(lesson.stop.held, ['replica.lag.time.max.ms']);
  assert.equal(heldText(lesson.stop.held).includes('replica.lag.time.max.ms'), true);
  assert.deepEqual(backTarget(lesson), {step: 1, seq: 2, number: 1}, 'Back: stop 1 as it was before Continue');
  assert.deepEqual(lookBackAt(lesson, 1), {step: 1, seq: 2, number: 1});
  assert.equal(lookBackAt(lesson, 4), null, 'the stop it waits at is now, not a look back');
  assert.equal(tryFromStep(lesson), 4);
  view = fold([
    step('step_finished', 4, 'predict'),
    step('step_started', 5, 'await', {detail: {args: {record: {kind: 'controller'}, message: 'm', timeout_ms: 1500}}}),
  ], view);
  lesson = view.lesson;
  assert.equal(lesson.status, 'running');
  assert.deepEqual(lesson.captions, [], 'what was seen at a stop makes way when the student continues');
  assert.equal(lesson.question.state, 'asked');
  assert.equal(progressText(lesson, OUTLINE), 'stop 2 of 3 · playing');
  assert.deepEqual(backTarget(lesson), {step: 4, seq: 8, number: 2}, 'playing on: Back shows the stop just passed');
  assert.equal(awaitText(lesson.awaiting), 'Waiting for a record with kind = controller (up to 1.5 s).');
  view = fold([
    step('step_finished', 5, 'await'),
    rec('answered', {step: 4, student: 's-1', answer: '1', correct: false, question: 'q', misconception: 'why not',
      note: 'wrong', detail: {question_id: 'q'}}),
    rec('answered', {step: 4, student: 's-2', answer: '2', correct: true, note: 'right', detail: {question_id: 'q'}}),
    rec('answered', {step: 4, student: 's-3', answer: UNSURE, note: 'unsure', detail: {question_id: 'q'}}),
    step('revealed', 6, 'reveal', {answer: '2', question: 'q', note: "The cluster's answer: 2. Because.",
      detail: {question_id: 'q'}}),
  ], view);
  lesson = view.lesson;
  assert.deepEqual(questionsOnScreen(lesson).map((q) => q.id), ['q'], 'revealed since the last stop: still shown');
  assert.deepEqual(gradeTally(lesson, 'q'), {right: 1, wrong: 1, unsure: 1, total: 3});
  assert.equal(myGradedAnswer(lesson, 'q', 's-1').misconception, 'why not');
  assert.equal(myGradedAnswer(lesson, 'q', 'nobody'), null);
  view = fold([step('step_started', 7, 'say', {note: 'Bye', detail: {args: {}, stop: true}}),
    step('step_finished', 7, 'say'), rec('finished', {note: 'Lesson complete.', detail: {completed: true}})], view);
  lesson = view.lesson;
  assert.equal(lesson.highlight, null, 'a new narration ends the highlight');
  assert.deepEqual(questionsOnScreen(lesson), [], 'answered and seen: gone at the next stop');
  assert.deepEqual(lesson.stops.map((s) => s.step), [1, 4, 7]);
  assert.equal(progressText(lesson, OUTLINE), 'all 3 stops · done');
  assert.deepEqual(lessonScore(lesson, 's-2'), {right: 1, asked: 1});
  const stopped = fold([rec('finished', {note: 'Lesson stopped: x', detail: {completed: false}})], view);
  assert.equal(stopped.lesson.status, 'stopped');
  assert.deepEqual(stopsOf(OUTLINE).map((s) => s.index), [1, 4, 7]);
  assert.equal(shownStop(lesson).step, 7);
});

test('Try it yourself copies everything before here', () => {
  assert.equal(tryStep({step: 8, status: 'waiting', steps: 10}), 8);
  assert.equal(tryStep({step: 6, status: 'running', steps: 10}), 7);
  assert.equal(tryStep({step: 10, status: 'finished', steps: 10}), 11);
  assert.equal(tryStep({step: 0, status: 'running', steps: 10}), 1);
});

test('the course: what comes next, where to start, the score kept per browser', () => {
  const parts = [{title: 'A', lessons: ['a1', 'a2']}, {title: 'B', lessons: ['b1']}];
  assert.equal(nextLesson(parts, 'a2'), 'b1');
  assert.equal(nextLesson(parts, 'b1'), null);
  assert.equal(nextLesson(parts, 'upload/x'), null);
  assert.equal(firstToDo(parts, {}), 'a1');
  let progress = withDone({}, 'a1', {right: 1, asked: 2});
  assert.equal(firstToDo(parts, progress), 'a2');
  progress = withDone(progress, 'a1', {right: 0, asked: 2});
  assert.deepEqual(progress.a1, {done: true, right: 1, asked: 2}, 'the best try is kept');
  assert.equal(scoreText(progress.a1), '✓ done · 1 of 2 predictions right');
  assert.equal(scoreText(undefined), '');
  const storage = new Map();
  const fake = {getItem: (k) => storage.get(k) ?? null, setItem: (k, v) => storage.set(k, v)};
  saveProgress(fake, progress);
  assert.deepEqual(readProgress(fake), progress);
  storage.set(PROGRESS_KEY, '[1, 2]');
  assert.deepEqual(readProgress(fake), {}, 'anything else in storage reads as no progress');
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

test('the answer chart keeps every choice in order, then "I\'m not sure", and marks the right one', () => {
  assert.deepEqual(answerBars(['1', '2', '3'], {2: 2, 7: 1, 9: 3, [UNSURE]: 1}, 2), {
    answers: ['1', '2', '3', UNSURE, '9', '7'], counts: [0, 2, 0, 1, 3, 1],
    right: [false, true, false, false, false, false], total: 7});
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
