/**
 * One record in full: every field, its display-only detail, the record that caused it
 * (cause_seq) and the records it caused — each a button, so a student can walk the chain of
 * "why" back to the fault that started it.
 */
import d3 from '/vendor/d3.mjs';
import {presentFields} from '../record.js';
import {prettyJson} from './util.js';

const FIRST = ['seq', 'kind', 'subject', 'from_state', 'to_state', 'outcome', 'cause', 'cause_seq'];

export function createRecordDetail(container, {onSelect, onScrub}) {
  const root = d3.select(container).append('section').attr('class', 'record-detail').attr('aria-live', 'polite')
    .attr('aria-label', 'Selected record');
  root.append('p').attr('class', 'hint').text('Click a record to see all its fields, its cause and what it led to.');

  function summary(r) {
    return `#${r.seq} ${r.kind} ${r.subject}${r.to_state ? ` → ${r.to_state}` : ''}`;
  }

  function linkButton(selection, r) {
    selection.append('button').attr('type', 'button').attr('class', 'record-link')
      .attr('data-target-seq', r.seq).text(summary(r)).on('click', () => onSelect(r.seq));
  }

  /** Show `record` (or nothing); `store` answers cause and consequence look-ups. */
  function show(record, store) {
    root.selectAll('*').remove();
    if (!record) {
      root.append('p').attr('class', 'hint').text('Click a record to see all its fields, its cause and what it led to.');
      return;
    }
    root.attr('data-selected-seq', record.seq);
    root.append('h3').text(summary(record));
    if (record.note) root.append('p').attr('class', 'note').text(record.note);

    const cause = root.append('div').attr('class', 'cause');
    cause.append('span').attr('class', 'label').text('Cause: ');
    if (Number.isInteger(record.cause_seq)) {
      const r = store.record(record.cause_seq);
      if (r) linkButton(cause, r);
      else cause.append('span').text(`#${record.cause_seq} (before the records this page holds)`);
    } else {
      cause.append('span').text(record.cause ?? 'none recorded (a fault, a timer or the start of the cluster)');
    }

    const led = store.consequences(record.seq);
    const consequences = root.append('div').attr('class', 'consequences');
    consequences.append('span').attr('class', 'label').text(`Led to (${led.length}): `);
    const list = consequences.append('ul');
    for (const seq of led.slice(0, 50)) {
      const r = store.record(seq);
      if (r) linkButton(list.append('li'), r);
    }
    if (led.length > 50) list.append('li').text(`… and ${led.length - 50} more`);

    root.append('button').attr('type', 'button').attr('class', 'scrub-here')
      .text(`Show the cluster right after #${record.seq}`).on('click', () => onScrub(record.seq));

    const present = presentFields(record);
    const fields = [...FIRST.filter((k) => present.includes(k)), ...present.filter((k) => !FIRST.includes(k))];
    const dl = root.append('dl').attr('class', 'fields');
    for (const key of fields) {
      dl.append('dt').text(key);
      dl.append('dd').text(key === 'ts_ms' ? `${record[key]} (${new Date(record[key]).toISOString()})` : JSON.stringify(record[key]));
    }
    if (Object.keys(record.detail ?? {}).length) {
      root.append('h4').text('detail');
      root.append('pre').attr('class', 'detail-json').text(prettyJson(record.detail));
    }
  }

  return {show};
}
