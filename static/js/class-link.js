/**
 * A page's Socket.IO link to a class (web/teaching_sockets.py), and the class session as a
 * "source" of records for the store.
 *
 * The link joins the class on every (re)connect — `join_class` puts the socket in the class's
 * rooms and in the current session's room, and answers with the class and a snapshot of the
 * session — and passes the class's events on (a new session, pause, a private copy, answers,
 * students, a hand-out's progress or why a student's copy failed). It stays up while the page shows something else (a student's private copy), so
 * the instructor can always call the page back. Records are handed to whichever class source
 * follows the session they belong to, and so is `sandbox_gone`: with several workers, the one
 * holding the class's cluster may stop, and its pages say so as a sandbox's page does.
 */
import {ACK_TIMEOUT_MS, unanswered} from './socket.js';

export const CLASS_EVENTS = ['class_session', 'class_paused', 'private_sandbox', 'private_sandbox_failed',
  'class_answers', 'class_students', 'class_handout'];

export function connectClass(io, {classId, token, onJoined, onEvent, onConnection}) {
  const socket = io({transports: ['websocket'], reconnectionDelayMax: 4000});
  let following = null; // {session, onRecords}
  let closed = false;

  const late = () => ({ok: false, error: 'the server did not answer in time'});
  const call = (event, data, onTimeout = late) => new Promise((resolve) => {
    socket.timeout(ACK_TIMEOUT_MS).emit(event, data, (timeout, answer) => resolve(timeout
      ? onTimeout() : answer ?? {ok: false, error: 'no answer'}));
  });
  const join = () => call('join_class', {class: classId, token});

  socket.on('connect', async () => {
    const answer = await join();
    if (closed) return;
    if (answer.ok) onConnection?.(true);
    onJoined(answer);
  });
  socket.on('records', (payload) => {
    if (!closed && following && payload?.sandbox === following.session && Array.isArray(payload.records)) {
      following.onRecords(payload.records, payload.head);
    }
  });
  socket.on('sandbox_gone', (payload) => { // the server process that held the class's cluster stopped
    if (!closed && following && payload?.sandbox === following.session) following.onGone?.(payload.error);
  });
  for (const name of CLASS_EVENTS) socket.on(name, (payload) => { if (!closed) onEvent(name, payload ?? {}); });
  socket.on('disconnect', (reason) => {
    if (!closed) onConnection?.(false, `the connection to the class was lost (${reason}); reconnecting…`);
  });
  socket.on('connect_error', (error) => {
    if (!closed) onConnection?.(false, `cannot reach the server (${error.message}); retrying…`);
  });

  return {
    socket,
    join,
    follow(session, onRecords, onGone) { following = {session, onRecords, onGone}; },
    unfollow(session) { if (following?.session === session) following = null; },
    /** A prediction for the open question: resolves {ok, counts} or {ok: false, error}. */
    answer: (question, answer) => call('class_answer', {class: classId, token, question, answer}),
    /** A fault on the class cluster: the server applies the instructor's and refuses a student's. */
    fault: (op, fields) => call('class_fault', {class: classId, token, op, ...fields}, unanswered),
    close() {
      closed = true;
      socket.close();
    },
  };
}

/**
 * The class session as the store's source: records from the link, the join's snapshot, gaps
 * from GET /api/classes/<id>/records. Faults go to `class_fault` (students: refused, and the
 * page shows the server's reason). `rejoined(answer)` hands a reconnect's snapshot on.
 */
export function classSource(link, {teaching, classId, token, session, label, readOnly = null, lessonActions = null}) {
  let handlers = null;
  return {
    kind: 'class',
    id: session,
    label,
    cluster: null,
    readOnly,
    lessonActions,
    fetchRecords: (since, limit) => teaching.classRecords(classId, token, session, since, limit),
    start(h) {
      handlers = h;
      link.follow(session, h.onRecords, (error) => {
        handlers?.onStatus?.('gone');
        handlers?.onJoinError?.(error ?? 'the server process that held this class stopped');
      });
      h.onStatus?.('joining the class');
      link.join().then((answer) => this.rejoined(answer));
    },
    rejoined(answer) {
      if (!handlers) return;
      if (!answer?.ok) {
        handlers.onStatus?.('refused');
        handlers.onJoinError?.(answer?.error ?? 'the server refused to let this page follow the class');
      } else if (answer.class?.session === session && answer.snapshot) {
        handlers.onStatus?.('live');
        handlers.onSnapshot(answer.snapshot);
      }
    },
    fault: (op, fields) => link.fault(op, fields),
    close() {
      handlers = null;
      link.unfollow(session);
    },
  };
}
