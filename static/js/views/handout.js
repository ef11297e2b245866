/**
 * The instructor's view of a hand-out of private copies (web/handout.py): built, failed and
 * remaining in words — "Handing out private copies: 12 of 60 built, 1 failed, 47 to go" — and each
 * failure with the student's name and the server's reason (the capacity refusal, a failure).
 * Fed by the `class_handout` event after every copy and by GET /api/classes/<id>/handout (or the
 * class's description) after a reload. `handoutText` is pure, for the node test.
 */
import {plural} from '../words.js';

/** The hand-out's state in one sentence a busy instructor reads at a glance. */
export function handoutText(handout) {
  if (!handout) return '';
  const {total, built, remaining} = handout;
  const failed = handout.failed?.length ?? 0;
  const students = plural(total, 'student');
  if (handout.status === 'running') {
    return `Handing out private copies: ${built} of ${total} built, ${failed} failed, ${remaining} to go.`;
  }
  return `Hand-out finished: ${built} of ${students} got a private copy`
    + (failed ? `; ${failed} did not (reasons below).` : '.');
}

export function createHandoutView(container) {
  container.innerHTML = '<p class="handout-status" role="status"></p><ul class="handout-failures"></ul>';
  const status = container.querySelector('.handout-status');
  const failures = container.querySelector('.handout-failures');
  let shown = null;
  return {
    /** Draw `handout` unless it is an older report of the same hand-out (events may cross). */
    render(handout) {
      if (!handout) return;
      const done = (h) => h.built + (h.failed?.length ?? 0);
      if (shown && shown.id === handout.id && (done(shown) > done(handout)
          || (shown.status === 'done' && handout.status !== 'done'))) return;
      shown = handout;
      container.dataset.handout = handout.id;
      container.dataset.status = handout.status;
      container.dataset.built = String(handout.built);
      container.dataset.failed = String(handout.failed?.length ?? 0);
      container.dataset.remaining = String(handout.remaining);
      status.textContent = handoutText(handout);
      failures.replaceChildren(...(handout.failed ?? []).map((f) => {
        const li = document.createElement('li');
        li.dataset.studentId = f.student;
        li.textContent = `✗ ${f.name}: ${f.error}`;
        return li;
      }));
    },
    running: () => shown?.status === 'running',
    /** True once a hand-out of this class has been drawn (the "without one" button then shows). */
    shown: () => Boolean(shown),
  };
}
