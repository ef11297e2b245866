/**
 * PURE what the lesson panel and the class pages show, computed from `view.lesson` (the fold of
 * the lesson's records, lesson-model.js) and the lesson's outline (GET /api/lessons/<id>):
 * progress by stops, where Back looks and "Try it from here" replays to, what a highlight points
 * at, what an `await` waits for, how a class answered. No DOM: node tests it (tests/js/lesson.test.mjs).
 */
import {RULES} from './invariants-model.js';

export const UNSURE = "I'm not sure"; // backend/lessons/answers.py UNSURE: offered with every question

/** The outline's stops: the steps the lesson waits at (a narration, a question, a pause). */
export function stopsOf(outline) {
  return Array.isArray(outline) ? outline.filter((s) => s.stop) : [];
}

/** "stop 3 of 12" — the stop on screen (waiting at it, or the last one passed while it plays). */
export function progressText(lesson, outline) {
  if (!lesson) return '';
  const total = stopsOf(outline).length || '?';
  if (lesson.status === 'finished') return `all ${total} stops · done`;
  const reached = (lesson.stops ?? []).length;
  if (!reached) return `starting · ${total} stops`;
  const playing = lesson.status === 'waiting' ? '' : ' · playing';
  const stopped = lesson.status === 'stopped' ? ' · stopped' : '';
  return `stop ${reached} of ${total}${stopped || playing}`;
}

/** The stop whose narration is on screen: the one the lesson waits at, else the last one passed. */
export function shownStop(lesson) {
  const stops = lesson?.stops ?? [];
  return stops.length ? stops[stops.length - 1] : null;
}

/**
 * The moment to show for a stop that was passed: the last record before Continue, when the
 * student had it on screen. A stop still waiting has no such moment (it is now).
 */
export function stopMoment(stop) {
  return stop && stop.done_seq !== null && stop.done_seq !== undefined ? stop.done_seq - 1 : null;
}

/**
 * Where Back looks: the stop before the one on screen — or, while the lesson plays on after a
 * stop, that stop itself as it was. Null when there is nothing before. `{step, seq, number}`.
 */
export function backTarget(lesson) {
  const stops = lesson?.stops ?? [];
  if (!stops.length) return null;
  const last = stops.length - 1;
  const target = stops[last].done_seq === null || stops[last].done_seq === undefined ? last - 1 : last;
  if (target < 0) return null;
  return {step: stops[target].step, seq: stopMoment(stops[target]), number: target + 1};
}

/** A passed stop (by step) to look back at: `{step, seq, number}`, or null. */
export function lookBackAt(lesson, step) {
  const stops = lesson?.stops ?? [];
  const index = stops.findIndex((s) => s.step === step);
  if (index < 0 || stopMoment(stops[index]) === null) return null;
  return {step, seq: stopMoment(stops[index]), number: index + 1};
}

/** "Try it from here": the lesson replayed on a new cluster up to the stop on screen. */
export function tryFromStep(lesson) {
  return shownStop(lesson)?.step ?? 1;
}

/** "Try it yourself": a copy that has played every step before here. */
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

/** The stop's held lab timers, in words (empty when none are held). */
export function heldText(held) {
  if (!held?.length) return '';
  return `❚❚ While you read, the lab holds its own timers (${held.join(', ')}): for the cluster no time passes `
    + 'until you continue.';
}

/** The badge beside the title: what the lesson is doing, for whoever watches it. */
export function statusText(lesson, role) {
  if (!lesson) return 'starting';
  if (role === 'copy') return 'free play';
  const waiting = {student: 'waiting for the instructor', replay: 'waiting for Continue'}[role] ?? 'waiting for you';
  return {waiting, running: 'playing', finished: 'done', stopped: 'stopped'}[lesson.status] ?? lesson.status;
}

/** The line under the narration: what an `await` waits for, or a stage direction. */
export function noteText(lesson) {
  if (!lesson || lesson.status === 'finished' || lesson.status === 'stopped') return '';
  if (lesson.op === 'await' && lesson.awaiting) return awaitText(lesson.awaiting);
  if (lesson.op === 'direct' && lesson.note) return `Stage direction: ${lesson.note}`;
  return '';
}

/** A step's text on one line of the stops outline. */
export function firstLine(text) {
  const line = String(text).trim().split('\n')[0];
  return line.length > 90 ? `${line.slice(0, 89)}…` : line;
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

/** How the graded answers to one question came out: {right, wrong, unsure, total}. */
export function gradeTally(lesson, questionId) {
  const answers = (lesson?.answers ?? []).filter((a) => a.question === questionId);
  const right = answers.filter((a) => a.correct === true).length;
  const unsure = answers.filter((a) => a.correct === null || a.correct === undefined).length;
  return {right, wrong: answers.length - right - unsure, unsure, total: answers.length};
}

/** The questions to draw: the open one and those asked but not yet answered by the cluster, then
 *  those the cluster answered since the last stop was passed. */
export function questionsOnScreen(lesson) {
  const all = Object.values(lesson?.questions ?? {});
  const revealed = new Set(lesson?.revealed ?? []);
  return all.filter((q) => q.state !== 'revealed' || revealed.has(q.id));
}

/**
 * The bars of the class's answer chart: every choice in the lesson's order, then "I'm not sure"
 * (zero bars too, so the chart does not jump as answers arrive), then any other answers, most
 * frequent first. `right` (the cluster's answer, once revealed) marks its bar.
 */
export function answerBars(choices, counts, right = null) {
  const given = counts ?? {};
  const listed = choices ? [...choices.map(String), UNSURE] : [];
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
