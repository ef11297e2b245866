/**
 * Drawing the space-time diagram's items (spacetime-model.js) into an SVG group: used for the
 * screen and, unchanged, for the exported SVG — so a slide shows exactly what the page showed.
 *
 * Geometry `geo`: {x(lane), y(seq), row (px per record), head (the newest seq), labels (bool), key
 * (changes when x or y do: an item is drawn again only when its key or its own state changed)}.
 * Every item is a `g.st-item` keyed by id, with data-kind, data-seq (the record a click opens),
 * data-subject (its record's subject: what a lesson's `arrow:` highlight names) and
 * data-outcome; a refused write or a bounced request has data-refused and a ✗ in its words.
 */
import {epochColour} from './util.js';

/** Arrowheads, defined once per SVG. */
export function defineMarkers(svg) {
  const defs = svg.append('defs');
  for (const [id, colour] of [['st-arrow', '#44506a'], ['st-arrow-bad', '#c62828'], ['st-arrow-watch', '#1f5fbf']]) {
    defs.append('marker').attr('id', id).attr('viewBox', '0 0 10 10').attr('refX', 9).attr('refY', 5)
      .attr('markerWidth', 7).attr('markerHeight', 7).attr('orient', 'auto-start-reverse')
      .append('path').attr('d', 'M0,0 L10,5 L0,10 z').attr('fill', colour);
  }
}

/** Join `items` into `group` (keyed by id) and draw each for the geometry. */
export function drawItems(group, items, geo, {selected = null, cursor = Infinity, onClick = null} = {}) {
  const joined = group.selectAll('g.st-item').data(items, (d) => d.id).join((enter) => {
    const g = enter.append('g').attr('tabindex', 0).attr('role', 'button');
    if (onClick) {
      g.on('click', (event, d) => onClick(d)).on('keydown', (event, d) => {
        if (event.key === 'Enter' || event.key === ' ') { event.preventDefault(); onClick(d); }
      });
    }
    return g;
  });
  joined
    .attr('class', (d) => `st-item st-${d.kind}${d.seqs.includes(selected) ? ' selected' : ''}${Math.min(d.from.seq, d.to.seq) > cursor ? ' future' : ''}`)
    .attr('data-kind', (d) => d.kind).attr('data-seq', (d) => d.seq).attr('data-subject', (d) => d.subject ?? null)
    .attr('data-outcome', (d) => d.outcome ?? null)
    .attr('data-refused', (d) => (d.refused || d.outcome === 'rejected' ? '' : null))
    .attr('aria-label', (d) => `#${d.seq} ${d.label}`)
    .each(function draw(d) {
      const key = `${geo.key}|${d.from.seq}|${d.to.seq}|${d.from.lane}|${d.outcome}|${d.open ? geo.head : ''}|${d.label}`;
      if (this.__drawn === key) return; // unchanged: scrolling moves the group, not the items
      this.__drawn = key;
      this.replaceChildren();
      el(this, 'title', {}, `#${d.seq} ${d.label}${d.why ? ` — ${d.why}` : ''}`); // the whole story, on hover
      DRAW[d.kind](this, d, geo);
    });
  return joined;
}

const NS = 'http://www.w3.org/2000/svg';

function el(parent, name, attrs, text) {
  const node = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) if (v !== null && v !== undefined) node.setAttribute(k, v);
  if (text !== undefined) node.textContent = text;
  parent.appendChild(node);
  return node;
}

function endY(d, geo) {
  return d.open ? geo.y(geo.head) : geo.y(d.to.seq);
}

/** A line (or, on one lane, a small loop) between two points. */
function link(parent, x1, y1, x2, y2, cls, marker) {
  const loop = Math.abs(x1 - x2) < 1;
  const d = loop ? `M${x1},${y1} C${x1 + 34},${y1} ${x2 + 34},${y2 + 6} ${x2 + 4},${y2 + 4}` : `M${x1},${y1} L${x2},${y2}`;
  el(parent, 'path', {d, class: 'st-hit'}); // a wide, invisible stroke: an arrow is easy to click
  return el(parent, 'path', {d, class: cls, 'marker-end': marker ? `url(#${marker})` : null});
}

function label(parent, x, y, text, geo, anchor = 'start', cls = 'st-label') {
  if (geo.labels) el(parent, 'text', {x, y: y - 3, 'text-anchor': anchor, class: cls}, text);
}

const DRAW = {
  zk(g, d, geo) {
    const [x1, x2, y] = [geo.x(d.from.lane), geo.x(d.to.lane), geo.y(d.to.seq)];
    link(g, x1, geo.y(d.from.seq), x2, y, d.refused ? 'st-line bad' : 'st-line', d.refused ? 'st-arrow-bad' : 'st-arrow');
    if (d.refused) { // ZooKeeper says no: the write comes back
      link(g, x2, y, x1, y + geo.row * 0.7, 'st-line bad back', 'st-arrow-bad');
      el(g, 'text', {x: x2 - 4, y: y + 4, 'text-anchor': 'end', class: 'st-cross'}, '✗');
      label(g, x2 - 8, y, d.label, geo, 'end', 'st-label bad');
    } else {
      el(g, 'circle', {cx: x2, cy: y, r: 3, class: 'st-dot zk'});
      label(g, x2 - 8, y, d.label, geo, 'end');
    }
  },
  watch(g, d, geo) {
    const [x1, x2, y1, y2] = [geo.x(d.from.lane), geo.x(d.to.lane), geo.y(d.from.seq), geo.y(d.to.seq)];
    link(g, x1, y1, x2, y2, 'st-line watch', 'st-arrow-watch');
    label(g, x2 + (x2 < x1 ? 8 : -8), y2, d.label, geo, x2 < x1 ? 'start' : 'end', 'st-label watch');
  },
  event(g, d, geo) {
    const [x, y1] = [geo.x(d.from.lane), geo.y(d.from.seq)];
    const y2 = Math.max(y1 + 3, endY(d, geo));
    el(g, 'rect', {x: x - 4, y: y1, width: 8, height: y2 - y1, rx: 2, class: `st-bar ${d.outcome}`});
    label(g, x + 8, y1 + 10, `⚙ ${d.label}${d.outcome === 'processing' ? ' (processing…)' : ''}`, geo);
  },
  request(g, d, geo) {
    const [x1, x2, y1] = [geo.x(d.from.lane), geo.x(d.to.lane), geo.y(d.from.seq)];
    const y2 = d.outcome === 'undeliverable' ? y1 : endY(d, geo);
    const colour = epochColour(d.epoch);
    if (d.outcome === 'undeliverable') {
      const mid = (x1 + x2) / 2;
      link(g, x1, y1, mid, y1, 'st-line request bad', null).style.stroke = colour;
      el(g, 'text', {x: mid, y: y1 + 4, 'text-anchor': 'middle', class: 'st-cross'}, '✗');
    } else {
      const line = link(g, x1, y1, x2, y2, `st-line request${d.open ? ' pending' : ''}`, 'st-arrow');
      line.style.stroke = colour;
      if (!d.open) { // the response, or the bounce of a request refused for a stale epoch
        const bad = d.outcome === 'rejected';
        link(g, x2, y2, x1, y2 + geo.row * 0.6, `st-line back${bad ? ' bad' : ''}`, bad ? 'st-arrow-bad' : 'st-arrow');
        if (bad) el(g, 'text', {x: x2 + (x2 < x1 ? 4 : -4), y: y2 + 4, 'text-anchor': x2 < x1 ? 'start' : 'end', class: 'st-cross'}, '✗');
      }
    }
    const left = x2 < x1; // the words sit at the arrow's head, on the sender's side
    label(g, x2 + (left ? 10 : -10), y2, d.label, geo, left ? 'start' : 'end', `st-label${d.outcome === 'rejected' ? ' bad' : ''}`);
  },
  mark(g, d, geo) {
    const [x1, x2, y] = [geo.x(d.from.lane), geo.x(d.to.lane), geo.y(d.to.seq)];
    if (Math.abs(x1 - x2) > 1) link(g, x1, y, x2, y, 'st-line fault', 'st-arrow');
    el(g, 'rect', {x: x2 - 4, y: y - 4, width: 8, height: 8, transform: `rotate(45 ${x2} ${y})`, class: 'st-mark'});
    label(g, x2 + 8, y + 4, d.label, geo);
  },
};
