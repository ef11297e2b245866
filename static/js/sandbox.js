/**
 * The page's sandbox on the server: resume the one whose id and token are kept in
 * localStorage, or create one; then a "source" the app reads records from — a Socket.IO join
 * (snapshot, then live records) with the HTTP API for missing ranges and for faults when the
 * socket is down.
 */
import {whenThereIsRoom} from './busy-retry.js';
import {rememberToken} from './replay-access.js';
import {connectSandbox} from './socket.js';

const KEY = 'kclab.sandbox';

export function savedSandbox() {
  try {
    const saved = JSON.parse(localStorage.getItem(KEY) ?? 'null');
    return saved?.id && saved?.token ? saved : null;
  } catch {
    return null;
  }
}

export function forgetSandbox() {
  localStorage.removeItem(KEY);
}

/** Keep `sandbox` ({id, token}) as this browser's sandbox: a reload resumes it (walkthroughs too). */
export function rememberSandbox(sandbox) {
  rememberToken(sandbox.token);
  localStorage.setItem(KEY, JSON.stringify({id: sandbox.id, token: sandbox.token}));
}

/** Make `sandbox` (a walkthrough just started) this browser's sandbox: the one it had is deleted
 *  (one page, one cluster), and the main page resumes the new one. */
export async function adoptSandbox(api, sandbox) {
  const old = savedSandbox();
  if (old && old.id !== sandbox.id) await api.deleteSandbox(old.id, old.token).catch(() => null);
  rememberSandbox(sandbox);
}

/** The saved sandbox if the server still has it, else a new one: {id, token, cluster, resumed}.
 *  A server too busy to start one now is asked again when it says (`onWait` is told each wait). */
export async function openSandbox(api, {cluster = undefined, fresh = false, onWait = undefined} = {}) {
  const saved = fresh ? null : savedSandbox();
  if (saved) {
    try {
      const info = await api.getSandbox(saved.id, saved.token);
      return {...saved, cluster: info.cluster, mode: info.mode, lesson: info.lesson, resumed: true};
    } catch (error) {
      if (error.status !== 404 && error.status !== 403) throw error;
      forgetSandbox(); // the server no longer has it (restarted, or it expired): make a new one
    }
  }
  const created = await whenThereIsRoom(() => api.createSandbox(cluster ?? {}), {onWait});
  rememberSandbox(created);
  return {id: created.id, token: created.token, cluster: created.cluster, mode: created.mode, lesson: created.lesson,
    resumed: false};
}

export function sandboxSource(api, io, sandbox) {
  let link = null;
  return {
    kind: 'sandbox',
    id: sandbox.id,
    token: sandbox.token,
    sandbox, // {id, token, cluster, mode, lesson}: a walkthrough's lesson panel reads mode and lesson
    label: `sandbox ${sandbox.id}`,
    cluster: sandbox.cluster,
    get link() { return link; },
    fetchRecords: (since, limit) => api.records(sandbox.id, sandbox.token, since, limit),
    start(handlers) {
      link = connectSandbox(io, {sandbox: sandbox.id, token: sandbox.token, ...handlers});
    },
    fault(op, fields) {
      if (link?.connected) return link.fault(op, fields);
      return api.fault(sandbox.id, sandbox.token, op, fields);
    },
    async remove() {
      this.close();
      await api.deleteSandbox(sandbox.id, sandbox.token).catch(() => null);
    },
    close() {
      link?.close();
      link = null;
    },
  };
}
