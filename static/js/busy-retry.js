/**
 * A busy server asked again when it says. When the server cannot start a sandbox now it answers
 * 503 with `retry_after`: it is full (60 s: a place frees when a sandbox closes or an idle one is
 * reclaimed), it is running behind (2 s), or ZooKeeper is away (5 s). A student who opens the page
 * at such a moment (a class all opening the page at once) should get a sandbox as soon as there is
 * room, not a dead page to reload by hand. Every other refusal (429: this browser holds its share;
 * 400) is final and comes back at once.
 */

/** At most this long between two tries, whatever a server asks. */
export const MAX_WAIT_S = 300;
/** After this many seconds of waiting in all, the page stops asking and says why. */
export const GIVE_UP_S = 900;

/** Seconds to wait before asking again after `error` (an ApiError), or null when asking again is
 *  no use. Up to a fifth more than the server asked, at random: a class refused together does not
 *  come back together. */
export function retryDelayS(error, random = Math.random) {
  if (error?.status !== 503) return null;
  const asked = Number(error.body?.retry_after);
  if (!Number.isFinite(asked) || asked <= 0) return null;
  return Math.min(asked, MAX_WAIT_S) * (1 + random() / 5);
}

/**
 * `attempt()` until it resolves; while it fails with a 503 that says when to try again, wait that
 * long, telling `onWait({seconds, reason, tryNow})` first (`tryNow()` ends the wait at once: a
 * student who sees a place free up). Rejects with the last error when that error is final or the
 * waits would pass `giveUpS`.
 */
export async function whenThereIsRoom(attempt, {onWait = () => {}, timers = globalThis, random = Math.random,
  giveUpS = GIVE_UP_S} = {}) {
  let waited = 0;
  for (;;) {
    try {
      return await attempt();
    } catch (error) {
      const seconds = retryDelayS(error, random);
      if (seconds === null || waited + seconds > giveUpS) throw error;
      waited += seconds;
      await new Promise((resolve) => {
        const id = timers.setTimeout(resolve, seconds * 1000);
        onWait({seconds, reason: error.message, tryNow: () => { timers.clearTimeout(id); resolve(); }});
      });
    }
  }
}
