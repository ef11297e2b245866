/**
 * PURE the course as a student walks it: which lessons this browser has done and how its
 * predictions went (kept in localStorage under `kclab.progress`), which lesson comes next, and
 * where a first visit starts. The course itself (parts in teaching order) comes from
 * GET /api/lessons. No DOM: node tests it (tests/js/lesson.test.mjs).
 */
import {plural} from './words.js';

export const PROGRESS_KEY = 'kclab.progress';

/** The lesson ids in the course's order. */
export function courseOrder(parts) {
  return (parts ?? []).flatMap((p) => p.lessons);
}

/** The lesson after `lessonId` in the course, or null (the last one, or one not in the course). */
export function nextLesson(parts, lessonId) {
  const order = courseOrder(parts);
  const at = order.indexOf(lessonId);
  return at >= 0 && at + 1 < order.length ? order[at + 1] : null;
}

/** Where to start: the first lesson of the course this browser has not done (null: all done). */
export function firstToDo(parts, progress) {
  return courseOrder(parts).find((id) => !progress?.[id]?.done) ?? null;
}

/** How `me` did in a finished lesson: {right, asked} over its questions (`view.lesson`). */
export function lessonScore(lesson, me) {
  const asked = Object.keys(lesson?.questions ?? {});
  const right = asked.filter((q) => (lesson.answers ?? []).some((a) => a.question === q && a.student === me
    && a.correct === true)).length;
  return {right, asked: asked.length};
}

/** `progress` with `lessonId` done and its score kept (the best of the tries). */
export function withDone(progress, lessonId, score) {
  const before = progress?.[lessonId];
  const best = before?.done && before.right > score.right ? {right: before.right, asked: before.asked} : score;
  return {...(progress ?? {}), [lessonId]: {done: true, ...best}};
}

/** "3 of 4 predictions right" (or nothing for a lesson not done). */
export function scoreText(entry) {
  if (!entry?.done) return '';
  return `✓ done · ${entry.right} of ${plural(entry.asked, 'prediction')} right`;
}

/** The saved progress, or {} (storage may be unavailable or hold something else). */
export function readProgress(storage) {
  try {
    const value = JSON.parse(storage.getItem(PROGRESS_KEY) ?? '{}');
    return value && typeof value === 'object' && !Array.isArray(value) ? value : {};
  } catch {
    return {};
  }
}

export function saveProgress(storage, progress) {
  try {
    storage.setItem(PROGRESS_KEY, JSON.stringify(progress));
  } catch {
    // storage full or disabled: the course still works, it only forgets
  }
}
