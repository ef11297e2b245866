/**
 * What the lesson panel's buttons do, for the source being shown. The class pages set
 * `source.lessonActions` themselves (a student answers over the class link, the instructor
 * continues through the class API); for this browser's own sandbox playing a lesson they are
 * the walkthrough API (continue, answer, back, restart, try), and for a "Try it yourself" copy
 * the way back to the lesson. Back, Restart and Try answer a new sandbox: `switchSandbox` shows it.
 *
 * actions: {role, me (whose graded answers are "mine"), lessonKey (for the outline), next(),
 * answer(question, answer), replay(step) (the lesson again on a new cluster, up to that stop),
 * restart(), tryFrom(step) (a free-play copy), startLesson(id) (the next lesson of the course),
 * returnToLesson()} — absent ones are buttons the page does not show. Looking back at an
 * earlier stop needs no action: the page rebuilds it from the records it has.
 */
const WALKTHROUGH_KEY = 'kclab.walkthrough'; // the lesson a "Try it yourself" copy came from

/** -> actionsFor(source): the source's lesson actions, or null (one object per source).
 *  `waitForRoom(attempt)`: the page's way to ask a busy server again for a new sandbox
 *  (busy-retry.js, with its notice); Back, Restart, Try and the next lesson each need one. */
export function lessonActions({teaching, api, switchSandbox, waitForRoom = (attempt) => attempt()}) {
  const actionsCache = new WeakMap();

  function actionsFor(source) {
    if (!source) return null;
    if (source.lessonActions !== undefined) return source.lessonActions;
    if (source.kind !== 'sandbox' || !source.sandbox?.lesson) return null;
    if (!actionsCache.has(source)) {
      actionsCache.set(source, source.sandbox.mode === 'sandbox' ? copyActions(source) : walkthroughActions(source));
    }
    return actionsCache.get(source);
  }

  function walkthroughActions(source) {
    const call = (action, body) => teaching.lessonAction(source.id, source.token, action, body);
    const rewind = async (action, body) => switchSandbox(await waitForRoom(() => call(action, body)));
    return {
      role: 'walkthrough', me: 'student', lessonKey: source.sandbox.lesson,
      next: () => call('continue'),
      answer: (q, a) => call('answer', {question: q, answer: a}),
      replay: (step) => rewind('replay', {step}),
      restart: () => rewind('restart'),
      startLesson: async (id) => {
        const next = await waitForRoom(() => teaching.startWalkthrough(id));
        await switchSandbox(next);
        await api.deleteSandbox(source.id, source.token).catch(() => null);
      },
      tryFrom: async (step) => {
        localStorage.setItem(WALKTHROUGH_KEY, JSON.stringify({id: source.id, token: source.token}));
        await rewind('try', {step});
      },
    };
  }

  function copyActions(source) {
    let saved = null;
    try {
      saved = JSON.parse(localStorage.getItem(WALKTHROUGH_KEY) ?? 'null');
    } catch {
      saved = null;
    }
    return {
      role: 'copy', lessonKey: source.sandbox.lesson,
      returnToLesson: saved?.id ? async () => {
        const info = await api.getSandbox(saved.id, saved.token); // throws (with the reason) if it is gone
        await switchSandbox({...info, id: saved.id, token: saved.token});
        localStorage.removeItem(WALKTHROUGH_KEY);
        await api.deleteSandbox(source.id, source.token).catch(() => null);
      } : null,
    };
  }

  return actionsFor;
}
