/**
 * Every broker's controller module (Kafka's ControllerEventManager): its event queue, the
 * event being processed and its ControllerState. Only one is the active controller — shown
 * with its epoch — but a zombie's module goes on working on what it believes, which is the
 * point of the lesson. Cards are joined by broker id, queued events by event id. Above them,
 * ActiveControllerCount summed over the brokers (what operators watch); in each card, the
 * controller gauges that broker reports (metrics.js).
 */
import d3 from '/vendor/d3.mjs';
import {brokerIds} from '../actions.js';
import {activeControllerCount, brokerGauges} from '../metrics.js';
import {epochColour} from './util.js';

export function createControllerView(container) {
  const summary = d3.select(container).append('p').attr('class', 'ctl-summary').attr('role', 'status');
  const root = d3.select(container).append('div').attr('class', 'controller-modules');

  function render(view, ctx) {
    const sum = activeControllerCount(view);
    summary.attr('data-active-controller-count', sum.count).classed('warning', sum.count !== 1)
      .text(`ActiveControllerCount, summed over the brokers: ${sum.count} — ${sum.meaning}.`);
    const ids = [...new Set([...brokerIds(view, ctx.cluster), ...Object.keys(view.events).map(Number)])]
      .sort((a, b) => a - b);
    const active = view.controller && !view.controller.resigned ? view.controller.id : null;
    root.selectAll('section.ctl-module').data(ids, (id) => id).join(
      (enter) => enter.append('section').attr('class', 'ctl-module').attr('data-module-broker', (id) => id)
        .call((s) => {
          const h = s.append('h3');
          h.append('span').attr('class', 'ctl-name').text((id) => `Broker ${id}`);
          h.append('span').attr('class', 'badge ctl-role');
          s.append('div').attr('class', 'ctl-state');
          s.append('div').attr('class', 'ctl-current');
          s.append('dl').attr('class', 'ctl-metrics').attr('aria-label', (id) => `Controller metrics of broker ${id}`);
          s.append('ol').attr('class', 'ctl-queue').attr('aria-label', (id) => `Event queue of broker ${id}`);
        }),
      (update) => update,
      (exit) => exit.remove(),
    )
      .order()
      .classed('active', (id) => id === active)
      .style('--epoch-colour', (id) => (id === active ? epochColour(view.controller.epoch) : null))
      .each(function update(id) {
        const s = d3.select(this);
        const events = view.events[String(id)] ?? {state: 'Idle', current: null, queue: []};
        const broker = view.brokers[String(id)];
        s.select('.ctl-role').text(role(view, id, active)).classed('hidden', role(view, id, active) === '');
        s.select('.ctl-state').text(`ControllerState: ${events.state}`);
        s.select('.ctl-current').text(events.current ? `⚙ processing ${events.current.name} #${events.current.id}` : 'idle')
          .classed('busy', Boolean(events.current));
        s.classed('frozen', broker?.state === 'paused');
        const gauges = s.select('.ctl-metrics').selectAll('div.metric').data(brokerGauges(view, id), (g) => g[0])
          .join((enter) => enter.append('div').attr('class', 'metric')
            .call((d) => { d.append('dt'); d.append('dd'); }));
        gauges.attr('data-metric', (g) => g[0]).attr('data-value', (g) => g[1]);
        gauges.select('dt').text((g) => g[0]);
        gauges.select('dd').text((g) => g[1]);
        const items = s.select('.ctl-queue').selectAll('li.event').data(events.queue, (e) => e.id).join(
          (enter) => enter.append('li').attr('class', 'event')
            .call((li) => { if (ctx.animate) li.style('opacity', 0).transition().duration(250).style('opacity', 1); }),
          (update) => update,
          (exit) => exit.remove(),
        );
        items.attr('data-event-id', (e) => e.id).attr('data-event', (e) => `${e.name}#${e.id}`)
          .text((e) => `${e.name} #${e.id}`);
        s.select('.ctl-queue').classed('empty', events.queue.length === 0)
          .attr('data-empty-text', 'queue empty');
      });
  }

  return {render};
}

function role(view, id, active) {
  if (id === active) return `active controller · epoch ${view.controller.epoch}`;
  if (view.controller && view.controller.id === id && view.controller.resigned) return 'resigned';
  if (view.brokers[String(id)]?.state === 'paused') return 'frozen (paused)';
  return '';
}
