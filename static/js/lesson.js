/**
 * PURE what the lesson panel and the class pages show, computed from `view.lesson` (the fold of
 * the lesson's records, lesson-model.js) and the lesson's outline (GET /api/lessons/<id>):
 * progress, where Back and "Try it yourself" go, what a highlight points at, what an `await`
 * waits for, how a class answered. No DOM: node tests it (tests/js/lesson.test.mjs).
 */
import {RULES} from './invariants-model.js';

/** "step 5 of 12": the step the lesson is at (before the first one: "starting"). */
export function progressText(lesson) {
  if (!lesson) return '';
  if (!lesson.step) return `starting · ${lesson.steps} steps`;
  const done = lesson.status === 'finished' ? ' · done' : lesson.status === 'stopped' ? ' · stopped' : '';
  return `step ${lesson.step} of ${lesson.steps}${done}`;
}

/**
 * Where Back goes. A lesson only stops at its `pause` steps (everything else plays on by itself),
 * so "the previous step" is the previous stop: the last pause before the one the lesson waits
 * at now — or, while it plays or after it ended, the last pause it passed. With none, step 1.
 * The server replays the lesson to there on a new cluster (pauses before it are skipped).
 */
export function backStep(lesson, outline) {
  if (!lesson || !Array.isArray(outline)) return 1;
  const limit = lesson.status === 'waiting' ? lesson.step : lesson.step + 1;
  const pauses = outline.filter((s) => s.op === 'pause' && s.index < limit).map((s) => s.index);
  return pauses.length ? pauses[pauses.length - 1] : 1;
}

/** "Try it yourself" from here: a copy that has played every step before this one. */
export function tryStep(lesson) {
  if (!lesson) return 1;
  const here = lesson.status === 'waiting' || lesson.status === 'stopped' ? lesson.step : lesson.step + 1;
  return Math.min(Math.max(1, here), lesson.steps + 1);
}

/** What an `await` step waits for, in words. */
export function awaitText(awaiting) {
  if (!awaiting) return '';
  const fields = Object.entries(awaiting.record ?? {}).map(([k, v]) => `${k} = ${Array.isArray(v) ? `[${v.join(', ')}]` : v}`);
  const seconds = awaiting.timeout_ms ? ` (up to ${Math.round(awaiting.timeout_ms / 100) / 10} s)` : '';
  return `Waiting for a record with ${fields.join(', ') || 'any fields'}${seconds}.`;
}

/**
 * The page elements a highlight target (a record subject) points at, as CSS selectors over the
 * views' testable DOM: broker:1, znode:/controller, partition:t-0, replica:t-0/2,
 * request:LeaderAndIsr (every request of that name) or request:LeaderAndIsr#17, event:BrokerChange,
 * a rule of the invariant panel (rule:leader_in_isr), or arrows of the space-time diagram by their
 * record's subject (arrow:request:LeaderAndIsr, arrow:znode:/controller_epoch) or arrow:refused
 * (every refused write and bounced request).
 */
export function highlightSelectors(targets) {
  const out = [];
  for (const target of targets ?? []) {
    const colon = String(target).indexOf(':');
    if (colon < 0) continue;
    const kind = target.slice(0, colon);
    const id = target.slice(colon + 1);
    const q = cssString(id);
    const selectors = {
      broker: [`button.broker[data-broker-id=${q}]`, `section.ctl-module[data-module-broker=${q}]`],
      znode: [`li.znode[data-path=${q}]`],
      partition: [`tr.partition[data-partition=${q}]`],
      replica: [`.replica[data-replica=${q}]`],
      request: [id.includes('#') ? `g.request[data-request=${q}]` : `g.request[data-request^=${cssString(`${id}#`)}]`],
      event: [id.includes('#') ? `li.event[data-event=${q}]` : `li.event[data-event^=${cssString(`${id}#`)}]`],
      rule: [`li.rule[data-rule=${q}]`],
      arrow: [arrowSelector(id)],
    }[kind];
    if (selectors) out.push({target, selector: selectors.join(', ')});
  }
  return out;
}

/** Diagram items by their record's subject: a request or event name means every one of that name. */
function arrowSelector(subject) {
  if (subject === 'refused') return 'g.st-item[data-refused]';
  const named = /^(request|event):[^#]+$/.test(subject);
  return named ? `g.st-item[data-subject^=${cssString(`${subject}#`)}]` : `g.st-item[data-subject=${cssString(subject)}]`;
}

/** A CSS string literal (attribute values in selectors), quotes and backslashes escaped. */
export function cssString(value) {
  return `"${String(value).replace(/["\\]/g, (c) => `\\${c}`).replace(/\n/g, '\\a ')}"`;
}

/** A choice as a student reads it: a rule's id (a "which rule will break?" question) is shown by its title. */
export function choiceText(choice) {
  const rule = RULES.find((r) => r.id === choice);
  return rule ? `${rule.title} (${rule.id})` : String(choice);
}

/** The newest graded answer of `me` to `questionId`, or null. */
export function myGradedAnswer(lesson, questionId, me) {
  const mine = (lesson?.answers ?? []).filter((a) => a.question === questionId && a.student === me);
  return mine.length ? mine[mine.length - 1] : null;
}

/** How the graded answers to one question came out: {right, wrong, total}. */
export function gradeTally(lesson, questionId) {
  const answers = (lesson?.answers ?? []).filter((a) => a.question === questionId);
  const right = answers.filter((a) => a.correct === true).length;
  return {right, wrong: answers.length - right, total: answers.length};
}

/**
 * The bars of the class's answer chart: every choice in the lesson's order (zero bars too, so
 * the chart does not jump as answers arrive), then any free-text answers, most frequent first.
 * `right` (the cluster's answer, once revealed) marks its bar.
 */
export function answerBars(choices, counts, right = null) {
  const given = counts ?? {};
  const listed = (choices ?? []).map(String);
  const others = Object.keys(given).filter((a) => !listed.includes(a))
    .sort((a, b) => given[b] - given[a] || (a < b ? -1 : a > b ? 1 : 0));
  const answers = [...listed, ...others];
  return {
    answers,
    counts: answers.map((a) => given[a] ?? 0),
    right: answers.map((a) => right !== null && right !== undefined && a === String(right)),
    total: Object.values(given).reduce((sum, n) => sum + n, 0),
  };
}

/**
 * A broken lesson's error (one problem a line, "file:line: reason", as the server's ScriptError
 * prints it) as [{file, line, message}]; the file shortened to where it sits under lessons/.
 */
export function parseProblems(error) {
  return String(error ?? '').split('\n').filter((l) => l.trim()).map((text) => {
    const m = /^(.+?\.ya?ml)(?::(\d+))?: (.*)$/.exec(text);
    if (!m) return {file: null, line: null, message: text};
    return {file: shortPath(m[1]), line: m[2] === undefined ? null : Number(m[2]), message: m[3]};
  });
}

function shortPath(path) {
  const at = path.lastIndexOf('/lessons/');
  return at >= 0 ? path.slice(at + 1) : path;
}
