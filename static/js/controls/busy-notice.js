import {whenThereIsRoom} from '../busy-retry.js';

/**
 * What a page shows while it waits for a place on a busy server (`busy-retry.js`): why, a
 * countdown to the next try, and "Try now" — a student who saw a classmate close a sandbox need
 * not wait. The main page (a new sandbox) and the lessons page (a walkthrough) both wait this way.
 * Waits may overlap (a boot's and a "New sandbox…"): the box shows the latest one's countdown,
 * and only that wait's end hides it; an earlier wait still going shows itself again at its next try.
 */
export function createBusyNotice(box, {onShow = () => {}} = {}) {
  const text = box.querySelector('.busy-text');
  const button = box.querySelector('.try-now');
  let tick = null;
  let owner = null;

  function show({seconds, reason, tryNow}) {
    const until = Date.now() + seconds * 1000;
    const update = () => {
      const left = Math.max(0, Math.ceil((until - Date.now()) / 1000));
      text.textContent = `No sandbox yet: ${reason}. The page asks again in ${left} s.`;
    };
    clearInterval(tick);
    update();
    tick = setInterval(update, 1000);
    button.onclick = tryNow;
    box.hidden = false;
    onShow();
  }

  return {
    /** `run(onWait)` — a `whenThereIsRoom` given that `onWait` — with this box showing its waits. */
    async during(run) {
      const me = {};
      try {
        return await run((wait) => {
          owner = me;
          show(wait);
        });
      } finally {
        if (owner === me) {
          owner = null;
          clearInterval(tick);
          box.hidden = true;
        }
      }
    },
    /** `attempt()`, asked again while the server says when (`whenThereIsRoom`), this box showing why. */
    retrying(attempt) {
      return this.during((onWait) => whenThereIsRoom(attempt, {onWait}));
    },
  };
}
