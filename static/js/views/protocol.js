/**
 * The protocol's two views, mounted in one call (app.js): the invariant panel (views/invariants.js)
 * and the space-time diagram (views/spacetime.js). Both open a record in the timeline when
 * clicked (`timeline.select`), and the diagram shows the timeline's selected record. They are
 * drawn before the lesson panel, so a lesson can highlight a rule (`rule:<id>`) or an arrow.
 */
import {createInvariantsView} from './invariants.js';
import {createSpacetimeView} from './spacetime.js';

export function mountProtocol(layout, {store, invalidate, timeline}) {
  const onSelect = (seq) => {
    if (Number.isInteger(seq)) timeline.select(seq);
  };
  const invariants = panel(layout, 'invariants', "Kafka's rules",
    'Checked on every record. Click a record number to open it in the timeline; scrub back to see the rules as they stood.');
  const spacetime = panel(layout, 'spacetime', 'Who told whom, when',
    'Time runs down, one record a row. Arrows into ZooKeeper are writes (✗ refused), out of it watches; bars are '
    + 'the controllers processing events; arrows between brokers are requests (✗ bounced for a stale epoch). Click one.');
  return [
    createInvariantsView(invariants, {onSelect}),
    createSpacetimeView(spacetime, {store, invalidate, onSelect, getSelected: () => timeline.selected}),
  ];
}

function panel(layout, name, title, hint) {
  const section = document.createElement('section');
  section.className = `panel ${name}-panel`;
  section.setAttribute('aria-labelledby', `h-${name}`);
  section.innerHTML = `<h2 id="h-${name}"></h2><p class="panel-hint"></p><div id="${name}" class="${name}"></div>`;
  section.querySelector('h2').textContent = title;
  section.querySelector('p').textContent = hint;
  layout.appendChild(section);
  return section.querySelector(`#${name}`);
}
