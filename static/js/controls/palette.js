/**
 * The fault palette: cluster-wide actions (kill the controller, delete /controller, topics,
 * reassignment, preferred election, stalled followers, unclean leader election), each a
 * button that is disabled with a reason when it does not apply. Actions that need arguments
 * ask for them in a small form; "Other fault…" offers every op of /api/vocabulary.
 */
import d3 from '/vendor/d3.mjs';
import {brokerIds, lockActions, paletteActions, partitionKeys, topics} from '../actions.js';
import {askForm} from './dialogs.js';

export function createPalette(container, {getView, getCluster, act, getVocabulary, getLock = () => null}) {
  const root = d3.select(container).append('div').attr('class', 'palette').attr('role', 'group')
    .attr('aria-label', 'Faults and admin actions');
  function render() {
    const view = getView();
    const unclean = uncleanEnabled(view, getCluster());
    const actions = paletteActions(view, {unclean});
    const vocabulary = getVocabulary();
    if (vocabulary) actions.push({id: 'other', label: 'Other fault…', enabled: true, reason: null, needs: 'form'});
    const locked = getLock();
    root.attr('data-locked', locked ? 'true' : null);
    root.selectAll('button').data(locked ? lockActions(actions, locked) : actions, (a) => a.id).join('button')
      .attr('type', 'button').attr('data-action', (a) => a.id)
      .text((a) => a.label)
      .property('disabled', (a) => !a.enabled)
      .attr('title', (a) => a.reason)
      .attr('aria-pressed', (a) => (a.pressed === undefined ? null : String(a.pressed)))
      .on('click', (event, a) => run(a));
    root.selectAll('p.locked-note').data(locked ? [locked] : []).join('p') // said once, in words
      .attr('class', 'locked-note why-not').text((reason) => reason);
  }

  async function run(action) {
    const view = getView();
    if (action.id === 'unclean') {
      // The new value arrives as the /config/brokers/<default> znode, so the button follows
      // ZooKeeper (and a scrub back shows the value of that moment).
      await act(action.op, action.fields, `Unclean leader election ${action.fields.value ? 'on' : 'off'}`);
      return;
    }
    const fields = action.needs === 'form' ? await FORMS[action.id](view, getCluster(), getVocabulary()) : action.fields;
    if (fields === null) return;
    if (action.id === 'other') await act(fields.op, fields.fields, fields.op);
    else await act(action.op, fields, action.label.replace('…', ''));
  }

  return {render};
}

/**
 * Whether unclean leader election is on cluster-wide: the dynamic config in ZooKeeper
 * (/config/brokers/<default>, what kafka-configs.sh wrote) wins over the sandbox's static
 * configuration (its "server.properties"), as in Kafka.
 */
export function uncleanEnabled(view, cluster) {
  const dynamic = view.config?.brokers?.['<default>']?.['unclean.leader.election.enable'];
  if (dynamic !== undefined) return dynamic === 'true';
  return Boolean(cluster?.config?.['unclean.leader.election.enable']);
}

const opts = (values, labels = (v) => String(v)) => values.map((v) => ({value: v, label: labels(v)}));
const brokerList = (text) => text.split(/[\s,]+/).filter(Boolean).map(Number);

const FORMS = {
  async create_topic(view, cluster) {
    const brokers = brokerIds(view, cluster).length;
    const v = await askForm('Create topic', [
      {name: 'topic', label: 'Name', required: true, value: nextTopicName(view)},
      {name: 'partitions', label: 'Partitions', type: 'number', min: 1, max: 50, value: 3},
      {name: 'replication_factor', label: 'Replication factor', type: 'number', min: 1, max: brokers, value: Math.min(3, brokers)},
    ], {submit: 'Create', intro: 'Writes /brokers/topics/<name> as kafka-topics.sh does; the controller does the rest.',
      check: (x) => (x.replication_factor > brokers ? `The cluster has ${brokers} broker(s): replication factor at most ${brokers}.` : null)});
    return v && {topic: v.topic, partitions: v.partitions, replication_factor: v.replication_factor};
  },
  async delete_topic(view) {
    const v = await askForm('Delete topic', [
      {name: 'topic', label: 'Topic', type: 'select', options: opts(topics(view))},
    ], {submit: 'Delete', intro: 'Writes /admin/delete_topics/<topic>.'});
    return v && {topic: v.topic};
  },
  async add_partitions(view) {
    const names = topics(view);
    const count = (t) => Object.values(view.partitions).filter((p) => p.topic === t).length;
    const v = await askForm('Add partitions', [
      {name: 'topic', label: 'Topic', type: 'select', options: opts(names)},
      {name: 'partitions', label: 'New total number of partitions', type: 'number', min: 1, value: count(names[0]) + 1},
    ], {submit: 'Grow'});
    return v && {topic: v.topic, partitions: v.partitions};
  },
  async reassign(view, cluster) {
    const keys = partitionKeys(view);
    const first = view.partitions[keys[0]];
    const v = await askForm('Reassign a partition', [
      {name: 'partition', label: 'Partition', type: 'select', options: opts(keys)},
      {name: 'replicas', label: 'New replicas, preferred leader first', required: true,
        value: [...(first?.replicas ?? [])].reverse().join(','), placeholder: 'e.g. 2,1',
        help: `Broker ids of this cluster (${brokerIds(view, cluster).join(', ')}), separated by commas.`},
    ], {submit: 'Reassign', intro: 'Writes /admin/reassign_partitions, as kafka-reassign-partitions.sh does.',
      check: (x) => (brokerList(x.replicas).some(Number.isNaN) || brokerList(x.replicas).length === 0
        ? 'Give broker ids separated by commas, e.g. 2,1.' : null)});
    return v && {partitions: {[v.partition]: brokerList(v.replicas)}};
  },
  async preferred(view) {
    const v = await askForm('Preferred replica election', [
      {name: 'partition', label: 'Partition', type: 'select', options: [{value: '', label: 'every partition'}, ...opts(partitionKeys(view))]},
    ], {submit: 'Elect', intro: 'Writes /admin/preferred_replica_election: leadership goes back to each preferred replica that is in the ISR.'});
    return v && (v.partition ? {partitions: [v.partition]} : {});
  },
  stall: (view, cluster) => followerForm('Stall a follower', 'Stall', view, cluster),
  resume_follower: (view, cluster) => followerForm('Resume a follower', 'Resume', view, cluster),
  async other(view, cluster, vocabulary) {
    const ops = (vocabulary?.ops ?? []).filter((op) => op.kind === 'fault');
    const pick = await askForm('Other fault', [
      {name: 'op', label: 'Operation', type: 'select', options: ops.map((op) => ({value: op.name, label: `${op.name} — ${op.doc}`}))},
    ], {submit: 'Next'});
    if (!pick) return null;
    const op = ops.find((o) => o.name === pick.op);
    if (!op.fields?.length) return {op: op.name, fields: {}};
    const values = await askForm(op.name, op.fields.map((f) => ({
      name: f.name, label: `${f.name}${f.required ? '' : ' (optional)'}`, required: f.required,
      value: f.default === undefined || f.default === null ? '' : JSON.stringify(f.default), help: `${f.doc} — ${f.type}`,
    })), {submit: 'Apply', intro: 'Values are read as JSON when they parse (3, true, [2,1], {"t-0": [2,1]}), else as text.'});
    if (!values) return null;
    const fields = {};
    for (const [k, text] of Object.entries(values)) if (text !== '') fields[k] = parseLoose(text);
    return {op: op.name, fields};
  },
};

async function followerForm(title, verb, view, cluster) {
  const alive = brokerIds(view, cluster).filter((b) => view.brokers[String(b)]?.state === 'alive');
  const v = await askForm(title, [
    {name: 'broker', label: 'Follower broker', type: 'select', options: opts(alive)},
    {name: 'topic', label: 'Topic', type: 'select', options: [{value: '', label: 'every topic'}, ...opts(topics(view))]},
    {name: 'partition', label: 'Partition (optional, needs a topic)', type: 'number', min: 0},
  ], {submit: verb, check: (x) => (x.partition !== null && !x.topic ? 'A partition needs its topic.' : null)});
  if (!v) return null;
  const fields = {broker: Number(v.broker)};
  if (v.topic) fields.topic = v.topic;
  if (v.partition !== null) fields.partition = v.partition;
  return fields;
}

function nextTopicName(view) {
  const names = new Set(topics(view));
  for (const name of ['orders', 'payments', 'clicks', 'logs']) if (!names.has(name)) return name;
  return `topic-${names.size}`;
}

function parseLoose(text) {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}
