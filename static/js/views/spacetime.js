/**
 * The space-time diagram: one lane per broker, one for ZooKeeper, one for admin tools; time
 * (record seq) runs down. Who told whom what, when — ZooKeeper writes with zxid and outcome,
 * watch notifications, the controllers' event processing, requests and their responses.
 *
 * Drawn from the record store (spacetime-model.js, fed the records that arrived since the last
 * frame), only while the panel is on screen and only what is in sight: a spacer as tall as
 * every record, an SVG as tall as the viewport that follows the scroll, items found by
 * bisection and joined by id — so 10,000 records cost what 40 do (bench/page_render.py --diagram). It follows the playback cursor (live: the newest record;
 * paused, stepped or scrubbed: the cursor stays in sight, what comes after it dimmed), zooms,
 * filters by kind, broker and partition, opens a clicked item's record in the timeline and
 * shows the timeline's selected record, and exports what is in sight as SVG for slides.
 */
import d3 from '/vendor/d3.mjs';
import {ITEM_KINDS, SpacetimeModel} from '../spacetime-model.js';
import {defineMarkers, drawItems} from './spacetime-draw.js';

const ROWS = [3, 6, 10, 16, 24, 36]; // px per record
const LEFT = 46;
const OVERSCAN = 12;
const KIND_NAMES = {zk: 'ZooKeeper writes', watch: 'watch notifications', event: 'controller events',
  request: 'requests', mark: 'faults and states'};

export function createSpacetimeView(container, {store, invalidate, onSelect, getSelected}) {
  const model = new SpacetimeModel();
  const root = d3.select(container);
  const bar = root.append('div').attr('class', 'st-controls');
  const filter = {kind: '', broker: '', partition: ''};
  const kind = choose(bar, 'Show', 'st-kind', (v) => setFilter('kind', v));
  const brokerSel = choose(bar, 'Broker', 'st-broker', (v) => setFilter('broker', v));
  const partitionSel = choose(bar, 'Partition', 'st-partition', (v) => setFilter('partition', v));
  fill(kind, ITEM_KINDS, 'everything', (k) => KIND_NAMES[k]);
  let zoom = 3;
  bar.append('button').attr('type', 'button').attr('data-action', 'zoom-out').attr('aria-label', 'Zoom out').text('−')
    .on('click', () => setZoom(zoom - 1));
  bar.append('button').attr('type', 'button').attr('data-action', 'zoom-in').attr('aria-label', 'Zoom in').text('+')
    .on('click', () => setZoom(zoom + 1));
  bar.append('button').attr('type', 'button').attr('data-action', 'export').text('Export SVG')
    .attr('title', 'Download what is in sight as an SVG file (for slides)').on('click', () => exportSvg());
  const header = root.append('svg').attr('class', 'st-lanes').attr('height', 34);
  const scroller = root.append('div').attr('class', 'st-scroll').on('scroll', () => {
    scrollTop = scroller.node().scrollTop;
    domScroll = scrollTop;
    follow = scrollTop + viewport >= height() - row() * 2;
    invalidate();
  });
  const spacer = scroller.append('div').attr('class', 'st-spacer');
  const svg = scroller.append('svg').attr('class', 'st-svg');
  defineMarkers(svg);
  const laneGroup = svg.append('g').attr('class', 'st-lane-lines');
  const itemGroup = svg.append('g').attr('class', 'st-items');
  const cursorLine = svg.append('line').attr('class', 'st-cursor');

  let width = 600;
  let viewport = 400;
  let scrollTop = 0;
  let domScroll = 0; // the scroller's offset as last seen or set: written only when it changes
  let follow = true;
  let lastCursor = null;
  let lastSelected = null;
  let last = null; // what the last render drew: for the export

  new ResizeObserver(() => {
    width = scroller.node().clientWidth;
    viewport = scroller.node().clientHeight;
    invalidate();
  }).observe(scroller.node());

  // Records reach the model when the diagram is drawn, and it is drawn only while it is on screen:
  // a page scrolled elsewhere pays nothing for it (bench/page_render.py, docs/performance.md).
  let batches = []; // records not in the model yet; null: build it again from the store
  let onScreen = true;
  store.on('records', (e) => {
    if (e.reset || e.prepended) batches = null;
    else if (batches !== null && e.added.length) batches.push(e.added);
  });
  new IntersectionObserver((entries) => {
    onScreen = entries[entries.length - 1].isIntersecting;
    if (onScreen) invalidate();
  }).observe(container);

  function catchUp() {
    if (batches === null) {
      model.clear();
      model.add(store.slice(store.first, store.head));
    } else {
      for (const batch of batches) model.add(batch);
    }
    batches = [];
  }

  const row = () => ROWS[zoom];
  const height = () => (model.maxSeq + 3) * row();
  const yOf = (seq) => (seq + 1) * row();

  function setFilter(name, value) {
    filter[name] = value;
    invalidate();
  }

  function setZoom(next) {
    const anchor = (scrollTop + viewport / 2) / row(); // the seq in the middle stays in the middle
    zoom = Math.max(0, Math.min(ROWS.length - 1, next));
    scrollTo(anchor * row() - viewport / 2);
    invalidate();
  }

  function scrollTo(top) {
    scrollTop = Math.max(0, Math.min(top, height() - viewport));
    if (Math.abs(domScroll - scrollTop) >= 1) {
      domScroll = scrollTop;
      scroller.node().scrollTop = scrollTop; // forces a layout: only when the offset moves
    }
  }

  function reveal(seq) {
    const y = yOf(seq);
    if (y < scrollTop + row() || y > scrollTop + viewport - row()) scrollTo(y - viewport / 2);
  }

  function geometry(lanes, head, offset) {
    const step = (width - LEFT - 16) / lanes.length;
    const index = new Map(lanes.map((lane, i) => [lane, i]));
    return {x: (lane) => LEFT + step * ((index.get(lane) ?? 0) + 0.5), y: (seq) => yOf(seq) - offset,
      row: row(), head, labels: row() >= 10, lanes, step, key: `${width}|${row()}|${lanes}|${offset}`};
  }

  function render(view, ctx) {
    if (!onScreen) return;
    const started = performance.now();
    catchUp();
    updateOptions(view, ctx);
    spacer.style('height', `${height()}px`);
    const trailing = ctx.mode !== 'live' || ctx.seq < ctx.head;
    if (getSelected() !== lastSelected && getSelected() !== null && getSelected() !== undefined) reveal(getSelected());
    else if (trailing && ctx.seq !== lastCursor) reveal(ctx.seq);
    else if (follow && !trailing) scrollTo(height());
    lastSelected = getSelected();
    lastCursor = ctx.seq;
    const lanes = model.lanes(ctx.cluster?.brokers ?? []);
    const geo = geometry(lanes, model.maxSeq, 0); // items at their seq; the group moves with the scroll
    const lo = Math.floor(scrollTop / row()) - OVERSCAN;
    const hi = Math.ceil((scrollTop + viewport) / row()) + OVERSCAN;
    const items = model.query(lo, hi, filter);
    svg.attr('width', width).attr('height', viewport).style('transform', `translateY(${scrollTop}px)`);
    itemGroup.attr('transform', `translate(0,${-scrollTop})`);
    laneLines(laneGroup, geo, viewport);
    laneHeader(header.attr('width', width), geo, view);
    drawItems(itemGroup, items, geo, {selected: getSelected(), cursor: ctx.seq, onClick: (d) => onSelect(d.seq)});
    cursorLine.attr('x1', 0).attr('x2', width).attr('y1', yOf(ctx.seq) - scrollTop).attr('y2', yOf(ctx.seq) - scrollTop)
      .attr('data-seq', ctx.seq);
    last = {items, lo: Math.max(0, lo + OVERSCAN), hi: Math.min(model.maxSeq, hi - OVERSCAN), lanes, view};
    container.dataset.items = String(items.length);
    container.dataset.renderMs = (performance.now() - started).toFixed(2); // bench/page_render.py --diagram
  }

  let optionsKey = '';

  function updateOptions(view, ctx) {
    const brokers = model.lanes(ctx.cluster?.brokers ?? []).filter((l) => l.startsWith('broker:')).map((l) => l.slice(7));
    const key = `${brokers}|${model.partitions.size}`;
    if (key === optionsKey) return;
    optionsKey = key;
    fill(brokerSel, brokers, 'every broker', (b) => `broker ${b}`);
    fill(partitionSel, [...model.partitions].sort(), 'every partition', (p) => p);
    brokerSel.property('value', filter.broker);
    partitionSel.property('value', filter.partition);
  }

  /** What is in sight, as a standalone SVG file (inline styles: it must look the same on a slide). */
  function exportSvg() {
    if (!last) return null;
    const {lo, hi, lanes, view} = last;
    const top = 40;
    const offset = yOf(lo) - top - row();
    const geo = geometry(lanes, model.maxSeq, offset);
    const doc = d3.create('svg').attr('xmlns', 'http://www.w3.org/2000/svg').attr('width', width)
      .attr('height', yOf(hi) - offset + row() * 2).attr('font-family', 'system-ui, sans-serif').attr('font-size', 11);
    doc.append('style').text(EXPORT_STYLE);
    defineMarkers(doc);
    doc.append('rect').attr('width', '100%').attr('height', '100%').attr('fill', '#fff');
    laneLines(doc.append('g'), geo, yOf(hi) - offset + row() * 2);
    laneHeader(doc.append('g').attr('class', 'st-lanes'), geo, view);
    drawItems(doc.append('g'), model.query(lo, hi, filter), geo, {});
    const text = new XMLSerializer().serializeToString(doc.node());
    const link = document.createElement('a');
    link.href = URL.createObjectURL(new Blob([text], {type: 'image/svg+xml'}));
    link.download = `kclab-diagram-${lo}-${hi}.svg`;
    link.click();
    setTimeout(() => URL.revokeObjectURL(link.href), 10000);
    return text;
  }

  return {render, exportSvg, model};
}

function laneLines(group, geo, h) {
  group.selectAll('line.st-lane').data(geo.lanes, (l) => l).join('line').attr('class', 'st-lane')
    .attr('data-lane', (l) => l).attr('x1', (l) => geo.x(l)).attr('x2', (l) => geo.x(l)).attr('y1', 0).attr('y2', h);
}

function laneHeader(group, geo, view) {
  group.selectAll('text.st-lane-name').data(geo.lanes, (l) => l).join('text').attr('class', 'st-lane-name')
    .attr('data-lane', (l) => l).attr('x', (l) => geo.x(l)).attr('y', 14).attr('text-anchor', 'middle')
    .text((l) => laneName(l, view));
}

function laneName(lane, view) {
  if (lane === 'zk') return 'ZooKeeper';
  if (lane === 'admin') return 'admin tools';
  const id = lane.slice('broker:'.length);
  const b = view.brokers?.[id];
  const crown = view.controller && String(view.controller.id) === id && !view.controller.resigned
    ? ` ♛${view.controller.epoch ?? ''}` : '';
  return `broker ${id}${crown}${b && b.state !== 'alive' ? ` (${b.state})` : ''}`;
}

function choose(parent, text, cls, onChange) {
  const label = parent.append('label').text(`${text} `);
  return label.append('select').attr('class', cls).on('change', (event) => onChange(event.target.value));
}

function fill(select, values, any, name) {
  select.selectAll('option').data(['', ...values], (d) => d).join('option')
    .attr('value', (d) => d).text((d) => (d === '' ? any : name(d)));
}

const EXPORT_STYLE = `
.st-hit { stroke: none; fill: none; }
.st-lane { stroke: #c5cad3; stroke-width: 1; }
.st-lane-name { font-weight: 600; fill: #1d2330; }
.st-line { stroke: #44506a; stroke-width: 1.4; fill: none; }
.st-line.bad, .st-line.back.bad { stroke: #c62828; stroke-dasharray: 5 3; }
.st-line.back { stroke-dasharray: 2 3; stroke-width: 1; }
.st-line.watch { stroke: #1f5fbf; stroke-dasharray: 6 3; }
.st-line.pending { stroke-dasharray: 3 3; }
.st-line.fault { stroke: #9a6700; }
.st-bar { fill: #b9c7e6; stroke: #44506a; }
.st-bar.failed, .st-bar.preempted { fill: #ffb3b3; }
.st-mark { fill: #fff4d6; stroke: #9a6700; }
.st-dot.zk { fill: #5b8c3a; }
.st-label { fill: #1d2330; paint-order: stroke; stroke: #fff; stroke-width: 3px; }
.st-label.bad { fill: #a01010; font-weight: 600; }
.st-label.watch { fill: #1f5fbf; }
.st-cross { fill: #c62828; font-weight: 700; font-size: 14px; }`;
