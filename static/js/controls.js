/**
 * Everything a student clicks or types, wired to the store and to `act` (which sends faults):
 * the broker menu, the fault palette, playback, keyboard shortcuts with their help overlay,
 * the sandbox settings form and the message area. Each lives in its own module under controls/.
 */
import {createAlerts} from './controls/alerts.js';
import {createBrokerMenu} from './controls/broker-menu.js';
import {createHelp, installKeyboard} from './controls/keyboard.js';
import {createPalette} from './controls/palette.js';
import {createPlayback} from './controls/playback.js';
import {openSettings} from './controls/settings.js';

export {choose} from './controls/dialogs.js';

/**
 * elements: {palette, playback, errors, infos, settingsButton, helpButton};
 * app: {store, act(op, fields, label), getCluster(), getVocabulary(), createSandbox(cluster),
 *   getLock() (optional: why no fault applies at all, e.g. a replay; null when they may)}.
 */
export function createControls(elements, app) {
  const alerts = createAlerts(elements.errors, elements.infos);
  const help = createHelp();
  const getLock = app.getLock ?? (() => null);
  const brokerMenu = createBrokerMenu({getView: () => app.store.headView, act: app.act,
    getVocabulary: app.getVocabulary, getLock});
  const palette = createPalette(elements.palette, {getView: () => app.store.headView, getCluster: app.getCluster,
    act: app.act, getVocabulary: app.getVocabulary, getLock});
  const playback = createPlayback(elements.playback, app.store);
  installKeyboard({store: app.store, toggleHelp: help.toggle});
  elements.helpButton.addEventListener('click', help.toggle);
  elements.settingsButton.addEventListener('click', () => openSettings(app.getCluster(), app.createSandbox));
  return {
    alerts,
    openBrokerMenu: brokerMenu.open,
    render() {
      palette.render();
      playback.render();
    },
  };
}
