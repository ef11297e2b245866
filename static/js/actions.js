/**
 * Which faults apply right now, and why not: the server's own rule for each broker fault, as
 * /api/vocabulary states it (`applies`: the broker states it applies in, and its verb — see
 * web/service.py), made on the page's view so a button can be disabled with a reason before
 * the student clicks. The server checks again (the view may be a moment old); its refusal is
 * shown as an alert. Pure: no DOM, tested by node (tests/js/actions.test.mjs).
 */

export const BROKER_STATES = {
  alive: {label: 'alive', icon: '●'},
  crashed: {label: 'crashed', icon: '✖'},
  paused: {label: 'paused', icon: '❚❚'},
  shutting_down: {label: 'shutting down', icon: '⏏'},
  stopped: {label: 'stopped', icon: '■'},
};

export function stateLabel(state) {
  return BROKER_STATES[state]?.label ?? String(state ?? 'unknown');
}

/** Broker ids to draw: the sandbox's configured brokers and any the records mention, sorted. */
export function brokerIds(view, cluster) {
  const ids = new Set((cluster?.brokers ?? []).map(Number));
  for (const broker of Object.values(view.brokers)) ids.add(broker.id);
  return [...ids].sort((a, b) => a - b);
}

export function brokerState(view, id) {
  return view.brokers[String(id)]?.state ?? 'stopped';
}

/** Topic names: /brokers/topics/<t> znodes and topics of known partitions. */
export function topics(view) {
  const names = new Set(Object.values(view.partitions).map((p) => p.topic));
  for (const path of Object.keys(view.znodes)) {
    const m = /^\/brokers\/topics\/([^/]+)$/.exec(path);
    if (m) names.add(m[1]);
  }
  return [...names].sort();
}

export function partitionKeys(view) {
  return Object.values(view.partitions)
    .sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition))
    .map((p) => `${p.topic}-${p.partition}`);
}

function need(broker, state, verb, allowed) {
  if (allowed.includes(state)) return null;
  const words = allowed.map(stateLabel);
  const list = words.length > 1 ? `${words.slice(0, -1).join(', ')} or ${words[words.length - 1]}` : words[0];
  return `Broker ${broker} is ${stateLabel(state)}, so it cannot be ${verb} (it must be ${list}).`;
}

// The broker menu: [id, op, label, extra] — what the page calls each action; when each applies is the server's.
const BROKER_MENU = [
  ['crash', 'crash_broker', 'Crash (kill -9)'], ['stop', 'stop_broker', 'Stop (clean exit)'],
  ['restart', 'start_broker', 'Restart'],
  ['shutdown', 'shutdown_broker', 'Controlled shutdown'], ['pause', 'pause_broker', 'Pause now'],
  ['pause_during', 'pause_broker', 'Pause during…', {needs: 'during'}], ['resume', 'resume_broker', 'Resume'],
  ['expire', 'expire_session', 'Expire session'],
];
const NO_VOCABULARY = 'The fault vocabulary has not loaded (see the message above): reload the page.';

/** The ControllerEvent names a broker can be paused in: pause_broker's `during` choices. */
export function eventNames(vocabulary) {
  const op = vocabulary?.ops?.find((o) => o.name === 'pause_broker');
  return op?.schema?.properties?.during?.enum ?? [];
}

/** The broker menu: every action, enabled or with the reason it does not apply. */
export function brokerActions(view, broker, vocabulary) {
  const state = brokerState(view, broker);
  const armed = view.brokers[String(broker)]?.pause_armed ?? null;
  const applies = new Map((vocabulary?.ops ?? []).map((op) => [op.name, op.applies]));
  const actions = BROKER_MENU.map(([id, op, label, extra = {}]) => {
    const rule = applies.get(op);
    const reason = rule ? need(broker, state, rule.verb, rule.broker_states) : NO_VOCABULARY;
    return {id, op, label, fields: {broker}, enabled: reason === null, reason, ...extra};
  });
  const resume = actions.find((a) => a.id === 'resume');
  if (!resume.enabled && armed) {
    Object.assign(resume, {enabled: true, reason: null, label: `Disarm the pause during ${armed}`});
  }
  const during = actions.find((a) => a.id === 'pause_during');
  if (during.enabled && armed) {
    Object.assign(during, {enabled: false, reason: `Broker ${broker} will already pause during ${armed}.`});
  }
  return actions;
}

/**
 * Every action disabled, with one reason — a recorded session cannot change, whatever the
 * cluster looked like at that moment.
 */
export function lockActions(actions, reason) {
  return actions.map((a) => ({...a, enabled: false, reason, pressed: undefined}));
}

/** The palette's cluster-wide actions. */
export function paletteActions(view, {unclean = false} = {}) {
  const controller = view.controller;
  const ctrlState = controller ? brokerState(view, controller.id) : null;
  const killable = ctrlState !== null && ['alive', 'paused', 'shutting_down'].includes(ctrlState);
  const hasTopics = topics(view).length > 0;
  const hasPartitions = partitionKeys(view).length > 0;
  const running = Object.values(view.brokers).some((b) => b.state === 'alive');
  const off = (ok, reason) => (ok ? {enabled: true, reason: null} : {enabled: false, reason});
  return [
    {id: 'kill_controller', op: 'crash_broker', label: controller ? `Kill the controller (broker ${controller.id})` : 'Kill the controller',
      fields: controller ? {broker: controller.id} : {},
      ...off(killable, controller ? `The controller's broker ${controller.id} is ${stateLabel(ctrlState)}.` : 'There is no controller right now.')},
    {id: 'delete_controller', op: 'delete_controller_znode', label: 'Delete /controller', fields: {},
      ...off('/controller' in view.znodes, '/controller does not exist right now: there is no controller to remove.')},
    {id: 'create_topic', op: 'create_topic', label: 'Create topic…', fields: {}, needs: 'form', enabled: true, reason: null},
    {id: 'delete_topic', op: 'delete_topic', label: 'Delete topic…', fields: {}, needs: 'form', ...off(hasTopics, 'There is no topic to delete.')},
    {id: 'add_partitions', op: 'add_partitions', label: 'Add partitions…', fields: {}, needs: 'form', ...off(hasTopics, 'There is no topic to grow.')},
    {id: 'reassign', op: 'reassign_partitions', label: 'Reassign…', fields: {}, needs: 'form', ...off(hasPartitions, 'There is no partition to reassign.')},
    {id: 'preferred', op: 'preferred_election', label: 'Preferred election…', fields: {}, needs: 'form', ...off(hasPartitions, 'There is no partition.')},
    {id: 'stall', op: 'stall_follower', label: 'Stall follower…', fields: {}, needs: 'form', ...off(running, 'No broker is running.')},
    {id: 'resume_follower', op: 'resume_follower', label: 'Resume follower…', fields: {}, needs: 'form', ...off(running, 'No broker is running.')},
    {id: 'unclean', op: 'set_config', label: `Unclean leader election: ${unclean ? 'on' : 'off'}`, pressed: unclean,
      fields: {name: 'unclean.leader.election.enable', value: !unclean}, enabled: true, reason: null},
  ];
}
