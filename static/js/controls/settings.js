/**
 * The sandbox settings form: how many brokers (1–7), which topics (partitions, replication
 * factor), unclean leader election, the inter-broker protocol version. Submitting it creates a
 * new sandbox with that shape.
 */
const MAX_BROKERS = 7;
/** Kafka 2.8's default first; the short names backend/core/ibp.py accepts (2.7 means 2.7-IV2). */
const PROTOCOL_VERSIONS = ['2.8', '2.7', '2.6', '2.5', '2.4'];

export function openSettings(current, onCreate) {
  const brokers = current?.brokers?.length || 3;
  const topics = Object.entries(current?.topics ?? {t: {partitions: 3, replication_factor: 3}});
  const dialog = document.createElement('dialog');
  dialog.className = 'modal settings';
  dialog.setAttribute('aria-label', 'New sandbox');
  dialog.innerHTML = `
    <h2>New sandbox</h2>
    <form method="dialog">
      <label class="field" for="set-brokers">Brokers (1–${MAX_BROKERS})
        <input id="set-brokers" name="brokers" type="number" min="1" max="${MAX_BROKERS}" required></label>
      <fieldset><legend>Topics</legend>
        <table class="topics"><thead><tr><th scope="col">Name</th><th scope="col">Partitions</th>
          <th scope="col">Replication factor</th><th scope="col"><span class="sr-only">Remove</span></th></tr></thead>
          <tbody></tbody></table>
        <button type="button" class="add-topic">Add a topic</button>
      </fieldset>
      <label class="field checkbox" for="set-unclean"><input id="set-unclean" type="checkbox">
        unclean.leader.election.enable (a replica outside the ISR may become leader: data loss)</label>
      <label class="field" for="set-ibp">inter.broker.protocol.version (2.7 and newer: leaders send AlterIsr to
        the controller; 2.6 and older: leaders write ISR changes to ZooKeeper themselves)
        <select id="set-ibp">${PROTOCOL_VERSIONS.map((v) => `<option value="${v}">${v}</option>`).join('')}</select></label>
      <p class="form-problem" role="alert"></p>
      <div class="dialog-buttons"><button type="submit">Create the sandbox</button>
        <button type="button" class="secondary cancel">Cancel</button></div>
    </form>`;
  const $ = (sel) => dialog.querySelector(sel);
  $('#set-brokers').value = String(Math.min(MAX_BROKERS, brokers));
  $('#set-unclean').checked = Boolean(current?.config?.['unclean.leader.election.enable']);
  const ibp = String(current?.config?.['inter.broker.protocol.version'] ?? '2.8');
  if (!PROTOCOL_VERSIONS.includes(ibp)) $('#set-ibp').append(new Option(ibp, ibp)); // a script's "2.7-IV1"
  $('#set-ibp').value = ibp;
  const body = $('tbody');

  function addRow(name = '', partitions = 1, rf = 1) {
    const n = body.children.length;
    const tr = document.createElement('tr');
    tr.innerHTML = `<td><input aria-label="Topic ${n + 1} name" class="t-name" required pattern="[A-Za-z0-9._-]+"></td>
      <td><input aria-label="Topic ${n + 1} partitions" class="t-partitions" type="number" min="1" max="50" required></td>
      <td><input aria-label="Topic ${n + 1} replication factor" class="t-rf" type="number" min="1" max="${MAX_BROKERS}" required></td>
      <td><button type="button" class="secondary remove" aria-label="Remove topic ${n + 1}">×</button></td>`;
    tr.querySelector('.t-name').value = name;
    tr.querySelector('.t-partitions').value = String(partitions);
    tr.querySelector('.t-rf').value = String(rf);
    tr.querySelector('.remove').addEventListener('click', () => tr.remove());
    body.append(tr);
  }
  for (const [name, spec] of topics) addRow(name, spec.partitions ?? 1, spec.replication_factor ?? 1);
  $('.add-topic').addEventListener('click', () => addRow(`topic${body.children.length + 1}`, 1, 1));

  const close = () => { if (dialog.open) dialog.close(); dialog.remove(); };
  $('.cancel').addEventListener('click', close);
  dialog.addEventListener('cancel', () => dialog.remove());
  $('form').addEventListener('input', () => { $('.form-problem').textContent = ''; });
  $('form').addEventListener('submit', (event) => {
    event.preventDefault();
    const n = Number($('#set-brokers').value);
    const cluster = {brokers: Array.from({length: n}, (_, i) => i), topics: {}, config: {}};
    for (const tr of body.children) {
      const name = tr.querySelector('.t-name').value.trim();
      const rf = Number(tr.querySelector('.t-rf').value);
      if (rf > n) {
        $('.form-problem').textContent = `Topic ${name}: replication factor ${rf} needs at least ${rf} brokers.`;
        return;
      }
      if (name in cluster.topics) {
        $('.form-problem').textContent = `Topic ${name} is listed twice.`;
        return;
      }
      cluster.topics[name] = {partitions: Number(tr.querySelector('.t-partitions').value), replication_factor: rf};
    }
    if ($('#set-unclean').checked) cluster.config['unclean.leader.election.enable'] = true;
    if ($('#set-ibp').value !== '2.8') cluster.config['inter.broker.protocol.version'] = $('#set-ibp').value;
    close();
    onCreate(cluster);
  });
  document.body.append(dialog);
  dialog.showModal();
}
