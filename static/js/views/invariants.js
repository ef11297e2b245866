/**
 * The invariant panel: each rule Kafka's controller keeps, holding or broken, in words.
 *
 * It draws `view.invariants` (invariants-model.js, the port of backend/view) — the display
 * view, so a page scrubbed back shows the rules as they stood then. A broken rule lists what
 * broke it: the record (a button: it opens in the timeline) and its cause; a zombie controller
 * is named under "one controller", and marked harmless once fenced. Status is a word and an
 * icon as well as a colour. Rules are joined by id, violations by key.
 */
import d3 from '/vendor/d3.mjs';
import {RULES} from '../invariants-model.js';

const STATUS = {holds: ['✓', 'holds'], waiting: ['⏳', 'waiting for the controller'], broken: ['✗', 'broken']};

export function createInvariantsView(container, {onSelect}) {
  const root = d3.select(container).append('ol').attr('class', 'rules').attr('aria-label', "Kafka's rules");
  const items = root.selectAll('li.rule').data(RULES, (rule) => rule.id).join((enter) => enter.append('li')
    .attr('class', 'rule').attr('data-rule', (rule) => rule.id)
    .call((li) => {
      const head = li.append('div').attr('class', 'rule-head');
      head.append('span').attr('class', 'rule-icon').attr('aria-hidden', 'true');
      head.append('span').attr('class', 'rule-title').text((rule) => rule.title);
      head.append('span').attr('class', 'rule-status');
      head.append('span').attr('class', 'rule-count');
      li.append('p').attr('class', 'rule-statement').text((rule) => rule.statement);
      li.append('ul').attr('class', 'rule-notes');
      li.append('ul').attr('class', 'rule-violations');
      li.append('details').attr('class', 'rule-repaired').call((d) => {
        d.append('summary');
        d.append('ul');
      });
    }));
  let previous = {};
  let drawn = null; // what the panel shows: drawn again only when the rules' state changed

  function render(view, ctx) {
    const checks = view.invariants;
    if (!checks) return;
    const key = JSON.stringify(checks.rules);
    if (key === drawn) return;
    drawn = key;
    items.each(function draw(rule) {
      const state = checks.rules[rule.id];
      const li = d3.select(this);
      const [icon, word] = STATUS[state.status];
      li.attr('data-status', state.status).attr('data-count', state.count);
      if (ctx.animate && previous[rule.id] && previous[rule.id] !== 'broken' && state.status === 'broken') {
        this.classList.remove('just-broke');
        void this.offsetWidth; // restart the animation
        this.classList.add('just-broke');
      }
      previous[rule.id] = state.status;
      li.select('.rule-icon').text(icon);
      li.select('.rule-status').text(word);
      li.select('.rule-count').text(state.count ? `broken ${state.count} time(s) so far` : '');
      notes(li.select('.rule-notes'), rule.id, state.info);
      violations(li.select('.rule-violations'), state.open, false);
      const repaired = li.select('.rule-repaired').classed('hidden', state.closed.length === 0);
      repaired.select('summary').text(`${state.closed.length} repaired`);
      violations(repaired.select('ul'), [...state.closed].reverse(), true);
    });
  }

  function notes(list, ruleId, info) {
    const lines = [];
    if (ruleId === 'one_controller' && info) {
      for (const z of info.zombies) lines.push({key: `z${z.broker}`, text: `⚠ ${z.text}`, seq: z.fenced ?? z.since, zombie: z});
    }
    if (ruleId === 'no_stale_apply' && info) {
      lines.push({key: 'fence', text: `Fenced: brokers refused ${info.refused} request(s) from a stale controller epoch (STALE_CONTROLLER_EPOCH).`,
        seq: info.last});
    }
    list.selectAll('li').data(lines, (d) => d.key).join((enter) => enter.append('li').call((li) => {
      li.append('span').attr('class', 'note-text');
      li.append('button').attr('type', 'button').attr('class', 'record-link')
        .on('click', (event, d) => onSelect(d.seq));
    }))
      .attr('class', (d) => (d.zombie ? `zombie${d.zombie.fenced !== null ? ' fenced' : ''}` : 'fence'))
      .attr('data-zombie', (d) => (d.zombie ? d.zombie.broker : null))
      .call((li) => {
        li.select('.note-text').text((d) => d.text);
        li.select('button').text((d) => `#${d.seq}`).attr('data-target-seq', (d) => d.seq);
      });
  }

  function violations(list, items, repaired) {
    list.selectAll('li.violation').data(items, (v) => `${v.key}@${v.seq}`).join((enter) => enter.append('li')
      .attr('class', 'violation').call((li) => {
        li.append('span').attr('class', 'v-text');
        li.append('button').attr('type', 'button').attr('class', 'record-link v-record')
          .on('click', (event, v) => onSelect(v.seq));
        li.append('button').attr('type', 'button').attr('class', 'record-link v-cause')
          .on('click', (event, v) => onSelect(v.cause_seq));
      }))
      .attr('data-status', (v) => v.status).attr('data-seq', (v) => v.seq)
      .call((li) => {
        li.select('.v-text').text((v) => `${v.status === 'waiting' ? '⏳' : '✗'} ${v.text}${repaired ? ` (repaired at #${v.until})` : ''}`);
        li.select('.v-record').text((v) => `record #${v.seq}`).attr('data-target-seq', (v) => v.seq);
        li.select('.v-cause').classed('hidden', (v) => v.cause_seq === null)
          .text((v) => `cause #${v.cause_seq}`).attr('data-target-seq', (v) => v.cause_seq);
      });
  }

  return {render};
}
