/**
 * A crashed broker's ZooKeeper session, counting down: a `kill -9`ed process says nothing to
 * ZooKeeper, which expires its session (and deletes its ephemeral znodes: /brokers/ids/N, and
 * /controller if it held it) only `zookeeper.session.timeout.ms` after it last heard from it.
 * Until then nobody, the controller included, can tell the broker is dead.
 *
 * Pure: the fold's `broker.session_expiry` ({session, timeout_ms, expires_ms}, from the crash
 * record) and a clock reading in, words out — no DOM, so node tests it (tests/js). The clock
 * reading is the moment the page shows on the server's clock (records.js `moment()`): now while
 * live, the shown record's time when paused, scrubbed or replaying — so a replay counts down as
 * it happened, not against today's wall clock. `null` (no record yet) names the timeout instead.
 */
export const KAFKA_DEFAULT_SESSION_TIMEOUT_MS = 18000;

const seconds = (ms) => `${(ms / 1000).toFixed(1)} s`;

/** {remaining_ms, due, text} for one crashed broker's session, or null when there is none. */
export function sessionCountdown(expiry, nowMs) {
  if (!expiry || !Number.isFinite(expiry.expires_ms)) return null;
  if (nowMs === null || nowMs === undefined) {
    return {remaining_ms: null, due: false,
      text: `session left to expire (${seconds(expiry.timeout_ms ?? 0)} timeout)`};
  }
  const remaining = Math.max(0, expiry.expires_ms - nowMs);
  if (remaining > 0) return {remaining_ms: remaining, due: false, text: `session expires in ${seconds(remaining)}`};
  return {remaining_ms: 0, due: true, text: 'session timeout passed: ZooKeeper expires it at its next check'};
}

/** The countdown of the crashed broker whose abandoned session is `session` (an ephemeral
 * znode's owner), with the broker's id; null when no crashed broker left that session. */
export function ownerCountdown(view, session, nowMs) {
  if (!session) return null;
  const owner = Object.values(view.brokers).find((b) => b.session_expiry?.session === session);
  if (owner === undefined) return null;
  const countdown = sessionCountdown(owner.session_expiry, nowMs);
  return countdown && {...countdown, broker: owner.id};
}

/** Whether any broker's session is counting down (the page then redraws while live). */
export function anyCountdown(view) {
  return Object.values(view.brokers).some((b) => b.session_expiry);
}

/** The session timeout the brokers started with, and Kafka's default beside it. */
export function sessionTimeoutText(view) {
  const timeouts = [...new Set(Object.values(view.brokers).map((b) => b.session_timeout_ms).filter(Number.isFinite))];
  if (timeouts.length === 0) return '';
  const used = timeouts.sort((a, b) => a - b).map(seconds).join(' / ');
  return `ZooKeeper session timeout ${used} (zookeeper.session.timeout.ms): a crashed broker is noticed only after `
    + `it. Kafka's default is ${seconds(KAFKA_DEFAULT_SESSION_TIMEOUT_MS)}; the lab's is shorter so demos do not wait.`;
}
