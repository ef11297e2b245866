/**
 * Partitions: one table row per partition, joined by "topic-partition". Each row shows the
 * assigned replicas (preferred first, reassignment marks, each replica's state), the leader,
 * the ISR in ZooKeeper's order, the leader epoch, the partition state — and *why*: the
 * controller's sentence for the last election or ISR change, a click away.
 */
import d3 from '/vendor/d3.mjs';
import {epochColour, flash, leaderText} from './util.js';

const COLUMNS = ['Partition', 'Replicas (preferred first)', 'Leader', 'ISR', 'Leader epoch', 'Log (HW / LEO)', 'State', 'Why'];
const REPLICA_SHORT = {
  NewReplica: 'new', OnlineReplica: 'online', OfflineReplica: 'offline', ReplicaDeletionStarted: 'deleting',
  ReplicaDeletionSuccessful: 'deleted', ReplicaDeletionIneligible: 'undeletable', NonExistentReplica: 'none',
};

export function createPartitionsView(container) {
  const table = d3.select(container).append('table').attr('class', 'partitions');
  table.append('thead').append('tr').selectAll('th').data(COLUMNS).join('th').attr('scope', 'col').text((d) => d);
  const body = table.append('tbody');
  const empty = d3.select(container).append('p').attr('class', 'empty').text('No partitions yet.');
  const open = new Set();

  function render(view, ctx) {
    const rows = Object.entries(view.partitions).map(([key, p]) => ({key, ...p}))
      .sort((a, b) => (a.topic < b.topic ? -1 : a.topic > b.topic ? 1 : a.partition - b.partition));
    empty.classed('hidden', rows.length > 0);
    body.selectAll('tr.partition').data(rows, (d) => d.key).join(
      (enter) => enter.append('tr').attr('class', 'partition').attr('data-partition', (d) => d.key)
        .call((tr) => {
          tr.append('th').attr('scope', 'row').attr('class', 'p-name').text((d) => d.key);
          tr.append('td').attr('class', 'p-replicas');
          tr.append('td').attr('class', 'p-leader');
          tr.append('td').attr('class', 'p-isr');
          tr.append('td').attr('class', 'p-epoch');
          tr.append('td').attr('class', 'p-log');
          tr.append('td').attr('class', 'p-state');
          tr.append('td').attr('class', 'p-why').append('button').attr('type', 'button').attr('class', 'why')
            .on('click', (event, d) => {
              if (open.has(d.key)) open.delete(d.key);
              else open.add(d.key);
              ctx.invalidate();
            });
        }),
      (update) => update,
      (exit) => exit.remove(),
    )
      .order()
      .each(function update(d) {
        // Thousands of rows, one of which changed: a row whose data is what it drew last time
        // is left alone (no DOM writes), so a frame costs what changed, not the whole table.
        const isOpen = open.has(d.key);
        const signature = JSON.stringify([d, isOpen, (d.replicas ?? []).map((b) => [replicaState(view, d, b),
          replicaLeo(view, d, b)])]);
        if (signature === this.__signature) return;
        this.__signature = signature;
        const tr = d3.select(this)
          .attr('data-leader', d.leader === null ? '' : d.leader)
          .attr('data-isr', (d.isr ?? []).join(','))
          .attr('data-leader-epoch', d.leader_epoch === null ? '' : d.leader_epoch)
          .attr('data-state', d.state ?? '')
          .classed('offline', d.leader === null || d.leader < 0 || d.state === 'OfflinePartition')
          .classed('reassigning', d.adding.length > 0 || d.removing.length > 0);
        replicaChips(tr.select('.p-replicas'), d, view);
        tr.select('.p-leader').text(leaderText(d.leader)).classed('none', leaderText(d.leader) === 'none');
        tr.select('.p-isr').text(`[${(d.isr ?? []).join(', ')}]`);
        tr.select('.p-epoch').text(d.leader_epoch ?? '—')
          .attr('title', d.controller_epoch === null ? null : `written by a controller with epoch ${d.controller_epoch}`)
          .style('--epoch-colour', epochColour(d.controller_epoch));
        tr.select('.p-log').text(logText(d)).classed('lost', d.lost > 0)
          .attr('title', 'high watermark (what consumers may read) / log end offset of the leader'
            + (d.lost > 0 ? `; ${d.lost} acknowledged message(s) lost` : ''));
        tr.select('.p-state').text(d.state ?? '(not known to the controller)');
        tr.select('.why').text(d.why ?? '—').attr('title', d.why).attr('aria-expanded', String(isOpen))
          .attr('aria-label', d.why ? `Why: ${d.why}` : 'No explanation yet')
          .classed('open', isOpen);
        if (ctx.animate && this.__changed !== undefined && this.__changed !== d.changed_seq) flash(this, 'flash');
        if (ctx.animate && this.__leader !== undefined && this.__leader !== d.leader) flash(tr.select('.p-leader').node(), 'flash-strong');
        this.__changed = d.changed_seq;
        this.__leader = d.leader;
      });
  }

  return {render};
}

/** One chip per replica: broker id, preferred / leader / ISR / adding / removing marks, state. */
function replicaChips(cell, p, view) {
  const isr = new Set(p.isr ?? []);
  const adding = new Set(p.adding ?? []);
  const removing = new Set(p.removing ?? []);
  const replicas = p.replicas ?? [];
  cell.selectAll('span.replica').data(replicas, (b) => b).join(
    (enter) => enter.append('span').attr('class', 'replica')
      .call((s) => s.append('span').attr('class', 'r-id'))
      .call((s) => s.append('span').attr('class', 'r-marks'))
      .call((s) => s.append('span').attr('class', 'r-state'))
      .call((s) => s.append('span').attr('class', 'r-leo')),
  )
    .order()
    .attr('data-replica', (b) => `${p.topic}-${p.partition}/${b}`)
    .attr('data-replica-state', (b) => replicaState(view, p, b) ?? '')
    .classed('in-isr', (b) => isr.has(b))
    .classed('leader', (b) => b === p.leader)
    .classed('adding', (b) => adding.has(b))
    .classed('removing', (b) => removing.has(b))
    .attr('title', (b, i) => replicaTitle(view, p, b, i, isr, adding, removing))
    .call((s) => {
      s.select('.r-id').text((b) => b);
      s.select('.r-marks').text((b, i) => marks(p, b, i, isr, adding, removing));
      s.select('.r-state').text((b) => REPLICA_SHORT[replicaState(view, p, b)] ?? replicaState(view, p, b) ?? '?');
      s.select('.r-leo').text((b) => (replicaLeo(view, p, b) === null ? '' : `LEO ${replicaLeo(view, p, b)}`));
    });
}

function logText(p) {
  const hw = p.hw ?? null;
  const leo = p.leo ?? null;
  const text = hw === null && leo === null ? '—' : `${hw ?? '?'} / ${leo ?? '?'}`;
  return p.lost > 0 ? `${text} · ${p.lost} lost` : text;
}

function replicaLeo(view, p, b) {
  return view.replicas[`${p.topic}-${p.partition}/${b}`]?.leo ?? null;
}

function replicaState(view, p, b) {
  return view.replicas[`${p.topic}-${p.partition}/${b}`]?.state ?? null;
}

function marks(p, b, i, isr, adding, removing) {
  return [i === 0 ? '★' : '', b === p.leader ? 'L' : '', isr.has(b) ? '' : '∉ISR',
    adding.has(b) ? '+' : '', removing.has(b) ? '−' : ''].filter(Boolean).join(' ');
}

function replicaTitle(view, p, b, i, isr, adding, removing) {
  const parts = [`Broker ${b}`, replicaState(view, p, b) ?? 'replica state not known'];
  if (i === 0) parts.push('preferred leader');
  if (b === p.leader) parts.push('leader');
  parts.push(isr.has(b) ? 'in the ISR' : 'not in the ISR');
  if (replicaLeo(view, p, b) !== null) parts.push(`log end offset ${replicaLeo(view, p, b)}`);
  if (adding.has(b)) parts.push('being added (reassignment)');
  if (removing.has(b)) parts.push('being removed (reassignment)');
  return parts.join(', ');
}
