/**
 * The Socket.IO link to one sandbox. On every (re)connect it joins again, and hands the join's
 * snapshot to `onSnapshot`; `records` events for this sandbox go to `onRecords(records, head)`
 * (`head`: the newest seq the server sent, which the batch must reach). Ordering,
 * duplicates and gaps are the record store's business, not this module's.
 */
const ACK_TIMEOUT_MS = 10000;

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
    /** Send a fault; resolves with the server's ack {ok, message|error, seq}. */
    fault(op, fields) {
      return new Promise((resolve, reject) => {
        socket.timeout(ACK_TIMEOUT_MS).emit('fault', {sandbox, token, op, ...fields}, (timeout, answer) => {
          if (timeout) reject(new Error('the server did not answer in time'));
          else resolve(answer);
        });
      });
    },
    close() {
      closed = true;
      socket.close();
    },
  };
}
