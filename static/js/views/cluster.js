/**
 * The cluster: brokers around ZooKeeper, the controller's crown, and requests in flight.
 *
 * Brokers are HTML buttons (keyboard and screen readers get them for free) laid over an SVG
 * that draws each broker's ZooKeeper session and the requests. Everything is a D3 keyed join:
 * a broker is joined by id, a request by its subject, so a state change animates the element
 * that is already there — the crown flies to the new controller, a request travels from the
 * controller to its broker and either lands (applied) or bounces back (rejected).
 */
import d3 from '/vendor/d3.mjs';
import {BROKER_STATES, brokerIds} from '../actions.js';
import {anyCountdown, sessionCountdown} from '../session-countdown.js';
import {epochColour} from './util.js';

const COUNTDOWN_TICK_MS = 200;

const W = 500;
const H = 300;
const CENTRE = {x: W / 2, y: H / 2 + 8};
const SHOW_DONE_MS = {applied: 900, rejected: 3500};
const LANE_PX = 24; // between requests that share a path: a label (12 px) plus its outcome line
const MAX_LANES = 3;

export function createClusterView(container, {onBrokerClick}) {
  const stage = d3.select(container).append('div').attr('class', 'cluster-stage');
  const svg = stage.append('svg').attr('viewBox', `0 0 ${W} ${H}`).attr('aria-hidden', 'true');
  const sessions = svg.append('g').attr('class', 'sessions');
  const requests = svg.append('g').attr('class', 'requests');
  const zk = stage.append('div').attr('class', 'zk-node').style('left', pct(CENTRE.x, W)).style('top', pct(CENTRE.y, H));
  zk.append('span').attr('class', 'zk-title').text('ZooKeeper');
  const zkEpoch = zk.append('span').attr('class', 'zk-epoch');
  const layer = stage.append('div').attr('class', 'broker-layer');
  const done = new Map(); // request key -> when this page first showed it answered
  const lanes = new Map(); // request key -> its lane beside the line (see assignLanes)
  let positions = new Map();
  let wake = null;
  let tick = null;

  function render(view, ctx) {
    const ids = brokerIds(view, ctx.cluster);
    const clock = ctx.moment?.ms ?? null; // for a crashed broker's countdown: the moment shown
    if (ctx.moment?.running && anyCountdown(view) && tick === null) { // live: a crashed broker's session counts down
      tick = setTimeout(() => { tick = null; ctx.invalidate(); }, COUNTDOWN_TICK_MS);
    }
    positions = layout(ids);
    zkEpoch.text(view.controller_epoch === null ? '/controller_epoch: none' : `/controller_epoch = ${view.controller_epoch}`);
    renderSessions(view, ids);
    renderBrokers(view, ids, ctx, clock);
    renderCrown(view, ctx);
    renderRequests(view, ctx);
  }

  function renderSessions(view, ids) {
    sessions.selectAll('line').data(ids, (id) => id).join('line')
      .attr('x1', CENTRE.x).attr('y1', CENTRE.y)
      .attr('x2', (id) => positions.get(id).x).attr('y2', (id) => positions.get(id).y)
      .attr('class', (id) => (view.brokers[id]?.registered ? 'session registered' : 'session'));
  }

  function renderBrokers(view, ids, ctx, clock) {
    const controllerId = view.controller?.id;
    layer.selectAll('button.broker').data(ids, (id) => id).join(
      (enter) => {
        const b = enter.append('button').attr('type', 'button').attr('class', 'broker')
          .attr('data-broker-id', (id) => id)
          .style('left', (id) => pct(positions.get(id).x, W)).style('top', (id) => pct(positions.get(id).y, H))
          .on('click', (event, id) => onBrokerClick(id, event.currentTarget));
        b.append('span').attr('class', 'broker-name');
        const state = b.append('span').attr('class', 'broker-state');
        state.append('span').attr('class', 'icon').attr('aria-hidden', 'true');
        state.append('span').attr('class', 'label');
        b.append('span').attr('class', 'broker-meta');
        return b;
      },
      (update) => update,
      (exit) => exit.remove(),
    )
      .call((b) => move(b, ctx).style('left', (id) => pct(positions.get(id).x, W))
        .style('top', (id) => pct(positions.get(id).y, H)))
      .attr('data-state', (id) => view.brokers[id]?.state ?? 'stopped')
      .classed('is-controller', (id) => id === controllerId)
      .style('--epoch-colour', (id) => (id === controllerId ? epochColour(view.controller.epoch) : null))
      .attr('aria-label', (id) => brokerLabel(view, id, clock))
      .attr('aria-haspopup', 'menu')
      .call((b) => {
        b.select('.broker-name').text((id) => `Broker ${id}`);
        b.select('.icon').text((id) => BROKER_STATES[view.brokers[id]?.state ?? 'stopped']?.icon ?? '?');
        b.select('.label').text((id) => (BROKER_STATES[view.brokers[id]?.state ?? 'stopped']?.label ?? '?'));
        b.select('.broker-meta').text((id) => brokerMeta(view, id, clock));
      });
  }

  function renderCrown(view, ctx) {
    const c = view.controller;
    const data = c !== null && c.id !== null && positions.has(c.id) ? [c] : [];
    stage.selectAll('div.crown').data(data, () => 'crown').join(
      (enter) => enter.append('div').attr('class', 'crown').attr('role', 'img')
        .style('left', (d) => pct(positions.get(d.id).x, W)).style('top', (d) => pct(positions.get(d.id).y - 40, H))
        .call((e) => e.append('span').attr('class', 'crown-icon').attr('aria-hidden', 'true').text('♛'))
        .call((e) => e.append('span').attr('class', 'crown-text')),
      (update) => update,
      (exit) => exit.remove(),
    )
      .attr('data-controller', (d) => d.id)
      .attr('data-epoch', (d) => d.epoch ?? '')
      .classed('resigned', (d) => Boolean(d.resigned))
      .style('--epoch-colour', (d) => epochColour(d.epoch))
      .attr('aria-label', (d) => `Controller: broker ${d.id}, epoch ${d.epoch ?? '?'}${d.resigned ? ' (resigned)' : ''}`)
      .call((e) => e.select('.crown-text').text((d) => `controller · epoch ${d.epoch ?? '?'}${d.resigned ? ' · resigned' : ''}`))
      .call((e) => move(e, ctx, 600).style('left', (d) => pct(positions.get(d.id).x, W))
        .style('top', (d) => pct(positions.get(d.id).y - 40, H)));
  }

  function renderRequests(view, ctx) {
    const now = performance.now();
    const shown = [];
    for (const [key, r] of Object.entries(view.requests)) {
      if (!positions.has(r.to)) continue;
      if (r.state === 'sent') {
        done.delete(key);
        shown.push({key, ...r});
        continue;
      }
      // First seen answered: now — or, after a jump (a scrub, a seek), long ago: answered requests
      // are history. A live burst too big to animate is no jump: the zombie's bounce is shown still.
      if (!done.has(key)) done.set(key, ctx.jumped ? -Infinity : now);
      if (now - done.get(key) < (SHOW_DONE_MS[r.state] ?? 900)) shown.push({key, ...r});
    }
    for (const key of done.keys()) if (!(key in view.requests)) done.delete(key);
    assignLanes(shown, lanes);
    const groups = requests.selectAll('g.request').data(shown, (d) => d.key).join(
      (enter) => enter.append('g').attr('class', 'request').attr('data-request', (d) => d.key)
        .attr('transform', (d) => at(d, 0))
        .call((g) => g.append('circle').attr('r', 6))
        .call((g) => g.append('text').attr('class', 'request-name').attr('y', -9))
        .call((g) => g.append('text').attr('class', 'request-outcome').attr('y', 16)),
      (update) => update,
      (exit) => exit.transition().duration(ctx.animate ? 300 : 0).style('opacity', 0).remove(),
    );
    groups.select('circle').attr('fill', (d) => epochColour(d.epoch));
    groups.selectAll('text').attr('text-anchor', (d) => anchor(d)); // away from the line, so labels overlap less
    groups.select('.request-name').text((d) => `${d.name} e${d.epoch ?? '?'}`);
    groups.select('.request-outcome').text((d) => (d.state === 'rejected' ? outcomeText(d.error ?? d.outcome) : ''));
    groups.each(function animate(d) {
      if (this.dataset.state === d.state) return;
      const g = d3.select(this).attr('data-state', d.state).classed('rejected', d.state === 'rejected');
      const t = (ms) => g.transition().duration(ctx.animate ? ms : 0).ease(d3.easeCubicOut);
      if (d.state === 'sent') t(450).attr('transform', at(d, 0.55));
      else if (d.state === 'applied') t(400).attr('transform', at(d, 1)).transition().duration(400).style('opacity', 0);
      else if (d.state === 'rejected') {
        t(300).attr('transform', at(d, 0.92)).transition().duration(700).ease(d3.easeBounceOut).attr('transform', at(d, 0.2));
      }
    });
    if (shown.some((d) => d.state !== 'sent') && wake === null) {
      wake = setTimeout(() => { wake = null; ctx.invalidate(); }, 400);
    }
  }

  /**
   * A point on the way from the sending controller to the request's broker (t: 0 to 1). Requests
   * on the same path at once (UpdateMetadata right behind LeaderAndIsr) each get a lane beside
   * the line, so their names do not print over each other.
   */
  function at(d, t) {
    const to = positions.get(d.to);
    const from = positions.get(d.from) ?? CENTRE;
    const start = d.from === d.to ? {x: to.x + 34, y: to.y - 34} : from;
    const dx = to.x - start.x;
    const dy = to.y - start.y;
    const length = Math.hypot(dx, dy) || 1;
    const offset = (d.lane ?? 0) * LANE_PX;
    const x = start.x + dx * t - (dy / length) * offset;
    const y = start.y + dy * t + (dx / length) * offset;
    return `translate(${x},${y})`;
  }

  function anchor(d) {
    const to = positions.get(d.to);
    const from = positions.get(d.from) ?? CENTRE;
    if (Math.abs(to.x - from.x) < 20) return 'middle';
    return to.x > from.x ? 'start' : 'end';
  }

  return {render};
}

/**
 * Give each request a lane when it first shows: the lowest lane no other unanswered or rejected
 * request on the same path (sender and broker) holds, at most MAX_LANES. A request keeps its
 * lane, so it never jumps sideways while it flies.
 */
function assignLanes(shown, lanes) {
  const taken = new Map();
  for (const d of shown) {
    if (lanes.has(d.key) && d.state !== 'applied') {
      const path = `${d.from}>${d.to}`;
      if (!taken.has(path)) taken.set(path, new Set());
      taken.get(path).add(lanes.get(d.key));
    }
  }
  for (const d of [...shown].sort((a, b) => a.sent_seq - b.sent_seq)) {
    if (!lanes.has(d.key)) {
      const path = `${d.from}>${d.to}`;
      if (!taken.has(path)) taken.set(path, new Set());
      let lane = 0;
      while (taken.get(path).has(lane) && lane < MAX_LANES - 1) lane += 1;
      taken.get(path).add(lane);
      lanes.set(d.key, lane);
    }
    d.lane = lanes.get(d.key);
  }
  const keys = new Set(shown.map((d) => d.key));
  for (const key of lanes.keys()) if (!keys.has(key)) lanes.delete(key);
}

function layout(ids) {
  const rx = W * 0.36;
  const ry = H * 0.34;
  const out = new Map();
  ids.forEach((id, i) => {
    const angle = -Math.PI / 2 + (2 * Math.PI * i) / Math.max(1, ids.length);
    out.set(id, {x: CENTRE.x + rx * Math.cos(angle), y: CENTRE.y + ry * Math.sin(angle)});
  });
  return out;
}

function pct(value, total) {
  return `${(100 * value) / total}%`;
}

function move(selection, ctx, ms = 500) {
  return ctx.animate ? selection.transition().duration(ms) : selection;
}

/** `clock`: the moment the view shows, on the server's clock, or null (session-countdown.js). */
function brokerMeta(view, id, clock) {
  const b = view.brokers[id];
  const countdown = sessionCountdown(b?.session_expiry, clock);
  const leads = Object.values(view.partitions).filter((p) => p.leader === id).length;
  const parts = [`leads ${leads}`];
  if (b?.broker_epoch !== null && b?.broker_epoch !== undefined) parts.push(`broker epoch ${b.broker_epoch}`);
  if (b?.pause_armed) parts.push(`pauses in ${b.pause_armed}`);
  if (b && !b.registered && b.state === 'alive') parts.push('not registered');
  if (countdown) parts.push(countdown.text);
  return parts.join(' · ');
}

function brokerLabel(view, id, clock) {
  const b = view.brokers[id];
  const state = BROKER_STATES[b?.state ?? 'stopped']?.label ?? 'unknown';
  const c = view.controller;
  const role = c && c.id === id ? `, ${c.resigned ? 'resigned ' : ''}controller with epoch ${c.epoch}` : '';
  return `Broker ${id}: ${state}${role}. ${brokerMeta(view, id, clock)}. Open actions.`;
}

/** What a bounced request shows: Kafka's error (STALE_CONTROLLER_EPOCH; an AlterIsr's own, e.g. NOT_CONTROLLER). */
function outcomeText(outcome) {
  return outcome === 'rejected_stale_epoch' ? 'STALE_CONTROLLER_EPOCH' : String(outcome ?? 'rejected').toUpperCase();
}
