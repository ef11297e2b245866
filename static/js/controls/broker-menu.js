/**
 * The menu a click on a broker opens: crash, restart, controlled shutdown, pause (now or
 * during a ControllerEvent), resume, expire session. Actions that do not apply to the broker
 * as it is now are disabled, and say why — in the tooltip and in plain text under the item.
 */
import {brokerActions, eventNames, lockActions, stateLabel} from '../actions.js';
import {askForm} from './dialogs.js';

export function createBrokerMenu({getView, act, getVocabulary, getLock = () => null}) {
  const menu = document.createElement('div');
  menu.className = 'broker-menu hidden';
  menu.setAttribute('role', 'menu');
  document.body.append(menu);
  let anchor = null;

  function close() {
    if (menu.classList.contains('hidden')) return;
    menu.classList.add('hidden');
    menu.replaceChildren();
    anchor?.setAttribute('aria-expanded', 'false');
    anchor?.focus();
    anchor = null;
  }

  function open(brokerId, element) {
    if (anchor === element && !menu.classList.contains('hidden')) {
      close();
      return;
    }
    close();
    anchor = element;
    const view = getView();
    const title = document.createElement('p');
    title.className = 'menu-title';
    title.textContent = `Broker ${brokerId} — ${stateLabel(view.brokers[String(brokerId)]?.state ?? 'stopped')}`;
    menu.setAttribute('aria-label', `Actions for broker ${brokerId}`);
    menu.append(title);
    const locked = getLock();
    const actions = brokerActions(view, brokerId, getVocabulary());
    if (locked) { // one reason for all, said once
      const why = document.createElement('small');
      why.className = 'why-not locked';
      why.textContent = locked;
      menu.append(why);
    }
    for (const action of locked ? lockActions(actions, locked) : actions) {
      const button = document.createElement('button');
      button.type = 'button';
      button.setAttribute('role', 'menuitem');
      button.dataset.action = action.id;
      button.textContent = action.label;
      button.disabled = !action.enabled;
      if (action.reason) button.title = action.reason;
      button.addEventListener('click', () => run(action, brokerId));
      menu.append(button);
      if (action.reason && !locked) {
        const why = document.createElement('small');
        why.className = 'why-not';
        why.textContent = action.reason;
        menu.append(why);
      }
    }
    const box = element.getBoundingClientRect();
    menu.style.left = `${window.scrollX + box.right + 6}px`;
    menu.style.top = `${window.scrollY + box.top}px`;
    menu.classList.remove('hidden');
    element.setAttribute('aria-expanded', 'true');
    menu.querySelector('button:not([disabled])')?.focus();
  }

  async function run(action, brokerId) {
    close();
    let fields = action.fields;
    if (action.needs === 'during') {
      const names = eventNames(getVocabulary());
      const values = await askForm(`Pause broker ${brokerId} during an event`, [
        {name: 'during', label: 'Freeze when its controller starts handling', type: 'select',
          options: names.map((n) => ({value: n, label: n})), value: 'ReplicaLeaderElection',
          help: 'The broker freezes right after its first ZooKeeper write for this event, as in a long GC pause.'},
      ], {submit: 'Arm the pause'});
      if (!values) return;
      fields = {...fields, during: values.during};
    }
    await act(action.op, fields, action.label);
  }

  document.addEventListener('keydown', (event) => {
    if (event.key === 'Escape') close();
    if (!menu.classList.contains('hidden') && (event.key === 'ArrowDown' || event.key === 'ArrowUp')) {
      const items = [...menu.querySelectorAll('button:not([disabled])')];
      const i = items.indexOf(document.activeElement);
      items[(i + (event.key === 'ArrowDown' ? 1 : items.length - 1)) % items.length]?.focus();
      event.preventDefault();
    }
  });
  document.addEventListener('pointerdown', (event) => {
    if (!menu.contains(event.target) && !anchor?.contains(event.target)) close();
  });

  return {open, close};
}
