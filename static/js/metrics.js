/**
 * PURE The controller's metrics as the page shows them (view.metrics: each broker's last
 * `metric` records). Operators watch ActiveControllerCount summed over the brokers: 1 normally,
 * 2 while a zombie still believes it is the controller, 0 while none is elected. A broker that
 * is not running reports nothing, so it does not count.
 */

const RUNNING = new Set(['alive', 'paused', 'shutting_down']);

/** The gauges the panel shows for one broker, in this order (Kafka's names). */
export const SHOWN = ['ActiveControllerCount', 'OfflinePartitionsCount', 'PreferredReplicaImbalanceCount',
  'GlobalTopicCount', 'GlobalPartitionCount'];

/** ActiveControllerCount summed over the running brokers, and what it means, in words. */
export function activeControllerCount(view) {
  const count = Object.entries(view.metrics ?? {})
    .filter(([id]) => RUNNING.has(view.brokers[id]?.state))
    .reduce((sum, [, gauges]) => sum + (gauges.ActiveControllerCount ?? 0), 0);
  const meaning = count === 1 ? 'one active controller, as it should be'
    : count === 0 ? 'no controller is elected: nobody moves leaders now'
      : `${count} brokers believe they are the controller: a zombie has not learned it was replaced`;
  return {count, meaning};
}

/** One broker's shown gauges as [name, value] (only those it has reported). */
export function brokerGauges(view, id) {
  const gauges = view.metrics?.[String(id)] ?? {};
  return SHOWN.filter((name) => name in gauges).map((name) => [name, gauges[name]]);
}
