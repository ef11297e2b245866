/**
 * The Socket.IO link to one sandbox. On every (re)connect it joins again, and hands the join's
 * snapshot to `onSnapshot`; `records` events for this sandbox go to `onRecords(records, head)`
 * (`head`: the newest seq the server sent, which the batch must reach). Ordering,
 * duplicates and gaps are the record store's business, not this module's.
 */
export const ACK_TIMEOUT_MS = 10000;

/**
 * What a page says when an action's answer did not come within `ACK_TIMEOUT_MS`. A server near
 * its capacity can answer a start in seconds (docs/performance.md, issue 14, twenty-eighth round),
 * and the action is usually carried out all the same: "failed" or "refused" would send the
 * student to click again, so the answer says to watch the records first.
 */
export function unanswered() {
  return {ok: false, unanswered: true,
    error: `no answer from the server within ${ACK_TIMEOUT_MS / 1000} s. It may still carry it out: `
      + 'watch the records before you try again'};
}

export function connectSandbox(io, {sandbox, token, onSnapshot, onRecords, onStatus, onJoinError, onConnection,
  onZookeeper}) {
  const socket = io({transports: ['websocket'], reconnectionDelayMax: 4000});
  let closed = false;

  socket.on('connect', () => {
    onStatus?.('joining');
    socket.timeout(ACK_TIMEOUT_MS).emit('join', {sandbox, token}, (timeout, answer) => {
      if (closed) return;
      if (timeout) {
        onStatus?.('join timed out');
        onJoinError?.('the server did not answer the join in time');
        return;
      }
      if (!answer?.ok) {
        onStatus?.('refused');
        onJoinError?.(answer?.error ?? 'the server refused to join this sandbox');
        return;
      }
      onStatus?.('live');
      onConnection?.(true);
      onSnapshot(answer.snapshot);
    });
  });
  socket.on('records', (payload) => {
    if (!closed && payload?.sandbox === sandbox && Array.isArray(payload.records)) onRecords(payload.records, payload.head);
  });
  socket.on('zookeeper', (status) => { if (!closed) onZookeeper?.(status); }); // the server's ZooKeeper came or went
  socket.on('sandbox_gone', (payload) => { // the server process that held this sandbox stopped
    if (closed || payload?.sandbox !== sandbox) return;
    onStatus?.('gone');
    onJoinError?.(payload.error);
  });
  socket.on('disconnect', (reason) => {
    if (closed) return;
    onStatus?.(`disconnected (${reason})`);
    onConnection?.(false, `the connection to the server was lost (${reason}); reconnecting…`);
  });
  socket.on('connect_error', (error) => {
    if (closed) return;
    onStatus?.(`cannot connect (${error.message})`);
    onConnection?.(false, `cannot reach the server (${error.message}); retrying…`);
  });

  return {
    socket, // for tests that cut the connection
    get connected() { return socket.connected; },
    /** Send a fault; resolves with the server's ack {ok, message|error, seq}, or `unanswered()`. */
    fault(op, fields) {
      return new Promise((resolve) => {
        socket.timeout(ACK_TIMEOUT_MS).emit('fault', {sandbox, token, op, ...fields},
          (timeout, answer) => resolve(timeout ? unanswered() : answer));
      });
    },
    close() {
      closed = true;
      socket.close();
    },
  };
}
