/**
 * Every record, newest at the bottom, filterable by kind, broker and partition.
 *
 * Histories get long (thousands of records a minute under load), so the list is virtual: a
 * spacer as tall as all matching rows, and DOM nodes only for the rows in sight, joined by seq.
 * The filter's result is an array of seqs, extended as records arrive and rebuilt only when
 * the filter changes or earlier records are fetched. Records past the cursor (paused, slow
 * motion) are shown dimmed: what is about to happen.
 */
import d3 from '/vendor/d3.mjs';
import {createRecordDetail} from './record-detail.js';

const ROW = 24;
const OVERSCAN = 8;
const KINDS = ['zk', 'controller_event', 'controller', 'broker', 'partition', 'replica', 'election', 'isr',
  'request', 'log', 'fault', 'lesson', 'metric'];

export function createTimelineView(container, {store, onScrub, invalidate}) {
  const root = d3.select(container);
  const filters = root.append('div').attr('class', 'tl-filters');
  const filter = {kind: '', broker: '', partition: ''};
  const kindSelect = select(filters, 'Kind', 'tl-kind', (v) => setFilter('kind', v));
  const brokerSelect = select(filters, 'Broker', 'tl-broker', (v) => setFilter('broker', v));
  const partitionSelect = select(filters, 'Partition', 'tl-partition', (v) => setFilter('partition', v));
  options(kindSelect, KINDS, 'every kind');
  const count = filters.append('span').attr('class', 'tl-count').attr('aria-live', 'off');
  const body = root.append('div').attr('class', 'tl-body');
  const scroller = body.append('div').attr('class', 'tl-scroll').attr('role', 'list')
    .attr('aria-label', 'Records, oldest first').on('scroll', () => {
      const top = scroller.node().scrollTop;
      domScroll = top;
      if (Math.abs(top - lastSet) < 1) return; // the scroll this view made
      scrollTop = top;
      follow = top + viewport >= index.length * ROW - ROW * 1.5;
      invalidate();
    });
  const spacer = scroller.append('div').attr('class', 'tl-spacer');
  const detail = createRecordDetail(body.append('div').attr('class', 'tl-detail').node(), {
    onSelect: (seq) => selectRecord(seq, true),
    onScrub,
  });

  let lastSet = -1; // the scroll offset this view last set
  let domScroll = 0; // the scroller's offset as last seen or set
  let index = []; // seqs of matching records, ascending
  let follow = true;
  let selected = null;
  let scrollToCursor = false;
  let lastCursor = null;
  let optionsKey = '';

  store.on('records', (e) => {
    if (e.reset || e.prepended) rebuild();
    else for (const r of e.added) if (matches(r)) index.push(r.seq);
  });

  function setFilter(name, value) {
    filter[name] = value;
    rebuild();
    follow = true;
    invalidate();
  }

  function rebuild() {
    index = [];
    for (const r of store.slice(store.first, store.head)) if (matches(r)) index.push(r.seq);
  }

  function matches(r) {
    if (filter.kind && r.kind !== filter.kind) return false;
    if (filter.broker !== '' && !aboutBroker(r, Number(filter.broker))) return false;
    if (filter.partition && !aboutPartition(r, filter.partition)) return false;
    return true;
  }

  function selectRecord(seq, scroll) {
    selected = seq;
    detail.show(store.record(seq), store);
    if (scroll) {
      const i = d3.bisectLeft(index, seq);
      if (index[i] === seq) scrollIntoView(i);
    }
    invalidate();
  }

  // Layout is read once per render at most: the viewport height comes from a ResizeObserver and
  // the scroll offset is tracked here, so following the newest record at 5,000 records/s does
  // not force the browser to lay the page out again and again.
  let viewport = 0;
  let scrollTop = 0;
  new ResizeObserver(() => { viewport = scroller.node().clientHeight; invalidate(); }).observe(scroller.node());

  function scrollIntoView(i) {
    const top = i * ROW;
    if (top < scrollTop || top + ROW > scrollTop + viewport) setScroll(Math.max(0, top - viewport / 2));
  }

  function setScroll(top) {
    scrollTop = Math.max(0, Math.min(top, index.length * ROW - viewport));
    follow = scrollTop >= index.length * ROW - viewport - ROW * 1.5;
  }

  function render(view, ctx) {
    updateOptions(view, ctx);
    const node = scroller.node();
    const trailing = ctx.mode !== 'live' || ctx.seq < ctx.head; // paused, scrubbed or in slow motion: show the cursor
    if ((ctx.jumped && ctx.mode === 'scrubbed') || (trailing && ctx.seq !== lastCursor)) scrollToCursor = true;
    lastCursor = ctx.seq;
    if (scrollToCursor) {
      scrollToCursor = false;
      scrollIntoView(Math.max(0, d3.bisectRight(index, ctx.seq) - 1));
    } else if (follow) {
      setScroll(index.length * ROW);
    }
    // The spacer's height and the scroll offset first: the page renders the timeline before the
    // other views, so the layout this forces covers only the (contained) scroller.
    spacer.style('height', `${index.length * ROW}px`);
    if (Math.abs(domScroll - scrollTop) >= 1) {
      lastSet = scrollTop;
      domScroll = scrollTop;
      node.scrollTop = scrollTop;
    }
    const first = Math.max(0, Math.floor(scrollTop / ROW) - OVERSCAN);
    const last = Math.min(index.length, Math.ceil((scrollTop + viewport) / ROW) + OVERSCAN);
    const rows = index.slice(first, last).map((seq, i) => ({seq, i: first + i, r: store.record(seq)}))
      .filter((d) => d.r !== undefined);
    scroller.selectAll('button.entry').data(rows, (d) => d.seq).join(
      (enter) => enter.append('button').attr('type', 'button').attr('class', 'entry').attr('role', 'listitem')
        .attr('data-seq', (d) => d.seq).attr('data-kind', (d) => d.r.kind)
        .on('click', (event, d) => selectRecord(d.seq, false))
        .call((b) => {
          b.append('span').attr('class', 'e-seq').text((d) => `#${d.seq}`);
          b.append('span').attr('class', 'e-kind').text((d) => d.r.kind);
          b.append('span').attr('class', 'e-subject').text((d) => d.r.subject);
          b.append('span').attr('class', 'e-state').text((d) => stateText(d.r));
          b.append('span').attr('class', 'e-note').text((d) => d.r.note ?? '');
        }),
      (update) => update,
      (exit) => exit.remove(),
    )
      .style('top', (d) => `${d.i * ROW}px`)
      .classed('future', (d) => d.seq > ctx.seq)
      .classed('current', (d) => d.seq === ctx.seq)
      .classed('selected', (d) => d.seq === selected)
      .classed('bad', (d) => d.r.outcome !== null && d.r.outcome !== 'ok')
      .attr('aria-current', (d) => (d.seq === ctx.seq ? 'step' : null))
      .attr('aria-pressed', (d) => String(d.seq === selected));
    const held = store.count;
    count.text(index.length === held ? `${held} records` : `${index.length} of ${held} records`);
  }

  function updateOptions(view, ctx) {
    const brokers = [...new Set([...(ctx.cluster?.brokers ?? []), ...Object.values(view.brokers).map((b) => b.id)])]
      .sort((a, b) => a - b);
    const partitions = Object.keys(store.headView.partitions).sort();
    const key = `${brokers}|${partitions}`;
    if (key === optionsKey) return;
    optionsKey = key;
    options(brokerSelect, brokers, 'every broker');
    options(partitionSelect, [...new Set([...partitions, ...(filter.partition ? [filter.partition] : [])])], 'every partition');
    brokerSelect.property('value', filter.broker);
    partitionSelect.property('value', filter.partition);
  }

  return {render, select: (seq) => selectRecord(seq, true), get selected() { return selected; }};
}

function select(parent, label, id, onChange) {
  const wrap = parent.append('label').attr('for', id).text(`${label} `);
  return wrap.append('select').attr('id', id).on('change', (event) => onChange(event.target.value));
}

function options(sel, values, any) {
  sel.selectAll('option').data(['', ...values], (d) => d).join('option')
    .attr('value', (d) => d).text((d) => (d === '' ? any : d));
}

function aboutBroker(r, b) {
  return r.broker_id === b || r.controller_id === b || r.subject === `broker:${b}`
    || (r.kind === 'replica' && r.subject.endsWith(`/${b}`));
}

function aboutPartition(r, key) {
  if (r.topic !== null && r.partition !== null && `${r.topic}-${r.partition}` === key) return true;
  if (r.subject === `partition:${key}` || r.subject.startsWith(`replica:${key}/`)) return true;
  const dash = key.lastIndexOf('-');
  return r.subject === `znode:/brokers/topics/${key.slice(0, dash)}/partitions/${key.slice(dash + 1)}/state`;
}

function stateText(r) {
  const state = r.to_state ?? '';
  return r.outcome && r.outcome !== 'ok' ? `${state} (${r.outcome})` : state;
}
