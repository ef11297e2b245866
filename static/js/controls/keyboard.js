/**
 * Keyboard shortcuts: space = pause/play, → = step, ? = this list. Keys typed into a field, or
 * pressed in a menu or dialog, keep their usual meaning. Space means pause/play even when a
 * button has the focus (Enter still presses it): after clicking "Crash", space must pause the
 * cluster, not crash a broker again.
 */
export const SHORTCUTS = [
  {keys: 'Space', does: 'pause / play (Enter presses the focused button)'},
  {keys: '→', does: 'step one record (pauses first)'},
  {keys: 'Enter', does: 'Continue a lesson (when no button or field has the focus)'},
  {keys: '?', does: 'show or hide this list'},
  {keys: 'Esc', does: 'close a menu or dialog'},
];

export function installKeyboard({store, toggleHelp}) {
  document.addEventListener('keydown', (event) => {
    if (event.defaultPrevented || event.ctrlKey || event.metaKey || event.altKey) return;
    if (document.querySelector('dialog[open]:not(.help)')) return;
    const target = event.target;
    const typing = target.closest?.('input, select, textarea, [contenteditable="true"]');
    const pressable = target.closest?.('[role="menu"], dialog, a, summary');
    if (event.key === '?' && !typing) {
      toggleHelp();
      event.preventDefault();
    } else if (event.key === ' ' && !typing && !pressable) {
      store.togglePlay();
      event.preventDefault();
    } else if (event.key === 'ArrowRight' && !typing && !target.closest?.('[role="menu"]')) {
      store.step();
      event.preventDefault();
    }
  });
}

/** The help overlay: a <dialog> listing the shortcuts. */
export function createHelp() {
  const dialog = document.createElement('dialog');
  dialog.className = 'modal help';
  dialog.setAttribute('aria-label', 'Keyboard shortcuts');
  dialog.innerHTML = '<h2>Keyboard shortcuts</h2><dl class="shortcuts"></dl>'
    + '<p>Click a broker for its actions; click a record in the timeline for its cause and consequences.</p>'
    + '<div class="dialog-buttons"><button type="button" class="close">Close</button></div>';
  const list = dialog.querySelector('dl');
  for (const s of SHORTCUTS) {
    const dt = document.createElement('dt');
    const kbd = document.createElement('kbd');
    kbd.textContent = s.keys;
    dt.append(kbd);
    const dd = document.createElement('dd');
    dd.textContent = s.does;
    list.append(dt, dd);
  }
  dialog.querySelector('.close').addEventListener('click', () => dialog.close());
  document.body.append(dialog);
  return {
    toggle() {
      if (dialog.open) dialog.close();
      else dialog.showModal();
    },
  };
}
