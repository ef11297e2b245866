"""One thread for every ZooKeeper session of the process: kazoo's connection loop, driven by events.

kazoo gives each client a connection thread (``ConnectionHandler.zk_loop``) that sleeps in
``select`` on its socket and wakes to send a request, read an answer or ping. A class of 200
sandboxes holds 800 sessions, so 800 such threads. Each wake-up of one is a thread hand-off
through the interpreter lock; after any stall of a second, hundreds of them are ready at once
and queue for the lock, the herd that stopped one worker at 200 sandboxes
(docs/performance.md, the seventeenth round named it). Here one thread (``io_loop.SessionLoop``)
serves every session of the process from one selector: a ping, a request or an answer is work
on that thread, not a thread of its own to wake. A broker's cable (``cable.py``: paused, its
traffic blackholed; cut, refused) is a state of its connection here, not a proxy in between:
a request crosses no second socket.

What goes over the wire, and when, is kazoo's: :class:`LoopConnection` is kazoo's
``ConnectionHandler`` with its blocking loop turned inside out. Requests, pings and the
handshake are serialised by kazoo's own ``_submit``; answers, watch events and the close are
read by kazoo's own ``_read_response`` and ``_read_watch_event``; the client sees the same
state changes in the same order; the host order and the reconnection back-off (``KazooRetry``'s
delay, jitter, back-off and limits) are kazoo's arithmetic, run on timers instead of sleeps
(``host_rounds.py``). But a live connection keeps the clocks of ZooKeeper's Java client
(``ClientCnxn``, Kafka's; ``keepalive.py``): it pings after half the read time-out of sending
nothing (sooner at a turn after a second's quiet) and drops when it has heard nothing for the
whole read time-out, where kazoo drops when a ping is still unanswered at its next ping,
0.9–1.3 s later at the lab's 4 s timeout (:meth:`LoopConnection._step`; docs/fidelity.md). What
it leaves out the lab does not use: TLS, SASL and digest auth, and read-only mode
(:func:`use_session_loop` refuses a client that asks for them).

The one rule it adds: what kazoo runs on its connection thread while a session lives —
listeners told of ``SUSPENDED`` and ``CONNECTED``, the ``rawlink`` callbacks of answers when the
client's handler is stopped — now runs on the loop that every session shares, so it must not
wait (the lab's listeners only put events on queues). The end of a session (``LOST``: expired or
closed) is told on a thread of its own, where a listener may wait as on kazoo's thread, holding
up its own session alone (:meth:`LoopConnection._session_ended`).
"""

from __future__ import annotations

import os
import socket
import threading
import time
from typing import Callable

from kazoo.client import CLOSED_STATES, KazooClient
from kazoo.exceptions import AuthFailedError, ConnectionDropped, SessionExpiredError
from kazoo.loggingsupport import BLATHER
from kazoo.protocol.connection import (AUTH_XID, CLOSE_RESPONSE, PING_XID, WATCH_XID, ConnectionHandler,
                                       _CONNECTION_DROP, _SESSION_EXPIRED)
from kazoo.protocol.serialization import Auth, Connect, ReplyHeader, int_struct
from kazoo.protocol.states import KeeperState

from backend.zk.cable import Cable
from backend.zk.drop_cause import DropCause
from backend.zk.handler import PollingThreadingHandler
from backend.zk.host_rounds import (CONNECTED, HANDSHAKE, LISTENING, RESOLVING, STOPPED, TCP_CONNECTING, WAITING,
                                    HostRounds)
from backend.zk.io_loop import READ, WRITE, SessionLoop
from backend.zk.keepalive import next_turn, ping_due, timed_out

PING_EARLY_S = 0.05
"""How much earlier than it is due a ping may go, with another session's timer that is due when
the loop is otherwise idle (``io_loop.SessionLoop.set_timer`` says why). At the lab's 4 s timeout
the Java client itself pings at any turn after a second's quiet, so a ping 50 ms before its
1.33 s is one it could send."""


class _LoopWake:
    """What kazoo's client writes its wake-up byte to: a wake of the shared loop for this
    connection, not a byte through a socket pair of its own."""

    def __init__(self, conn: LoopConnection) -> None:
        self._conn = conn

    def send(self, data: bytes) -> int:
        self._conn.loop.wake(self._conn)
        return len(data)

    def sendall(self, data: bytes) -> None:
        self.send(data)

    def close(self) -> None:
        pass


class LoopConnection(HostRounds, ConnectionHandler):
    """kazoo's ``ConnectionHandler`` for :class:`SessionLoop`: the same requests, answers, state
    changes and clocks as its ``zk_loop`` (see the module's docstring), as steps the loop runs
    when a socket is ready, a request is queued or a timer is due."""

    def __init__(self, client: KazooClient, retry_sleeper, logger=None, cable: Cable | None = None) -> None:
        super().__init__(client, retry_sleeper, logger=logger)
        self.loop = SessionLoop.shared()
        self.cable = cable or Cable()
        """The broker's cable (``cable.py``): paused, the traffic is blackholed; cut, refused.
        Every connection has one (a session that is no broker's too: a test pauses it), attached
        here so that resuming or cutting it always reaches this connection."""
        self.cable.attach(self)
        self.phase = STOPPED
        self.timer_token: int | None = None
        self._running = False
        self._telling: threading.Thread | None = None
        """The thread telling the client its session ended (:meth:`_session_ended`), if any."""
        self._retry = None
        self._hosts: list[tuple[str, str, int]] = []
        self._round_id = 0
        self._host_count = 1
        self._inbox = bytearray()
        self._outbox = bytearray()
        self._peer: tuple[str, int] | None = None
        self._read_timeout = 0.0
        self._connect_timeout = 0.0
        self._last_send = 0.0
        self._last_heard = 0.0
        """When the last answer, watch event or ping's answer was read whole (``ClientCnxn``'s
        ``lastHeard``): the connection drops after the read time-out without one."""
        self._armed_at = 0.0
        """When the live connection's timer (:meth:`_arm`) is set to go off."""
        self.drop = DropCause()
        """Why this connection last dropped (``drop_cause.py``): the lab's lateness, ZooKeeper's
        silence, or neither; read by the session's owner when told ``SUSPENDED`` or ``LOST``."""

    # -- kazoo's client calls these (any thread) ------------------------------------------------
    def start(self) -> None:
        if self.connection_closed.is_set():
            wake = _LoopWake(self)
            handler = self.handler
            if isinstance(handler, PollingThreadingHandler):  # its deferred wake-ups hold ours back
                wake = handler.deferrable(wake)
            self._write_sock, self._read_sock = wake, None
            self.connection_closed.clear()
        if self._running:
            raise Exception("Unable to start, connection routine already active.")
        self._running = True
        self.connection_stopped.clear()
        self.loop.call(lambda: self.guarded(self._begin))

    def stop(self, timeout=None) -> bool:
        """kazoo's: wait for the connection to stop, then for what it is still telling the
        client (kazoo joins its thread, which tells the client last)."""
        self.connection_stopped.wait(timeout)
        if self.connection_stopped.is_set():
            telling = self._telling
            if telling is not None and telling is not threading.current_thread():
                telling.join()
            self._running = False
        return self.connection_stopped.is_set()

    def _write(self, msg, timeout) -> None:
        """kazoo's ``_submit`` ends here: the bytes wait in the outbox for :meth:`_flush`."""
        self._outbox += msg

    def on_cable_changed(self, done: threading.Event) -> None:
        """The cable was resumed or cut: a connection it held is closed under the client, which
        reads the end of it (kazoo's ``socket connection broken``) and dials again; ``done`` is
        set once the client has been told."""
        def hang_up() -> None:
            try:
                if self.phase in (TCP_CONNECTING, HANDSHAKE, CONNECTED):
                    # A crashed process (cut) says nothing of it; a woken one reads the end of file.
                    self.guarded(self._lost if self.cable.cut else self._hung_up)
            finally:
                done.set()
        self.loop.call(hang_up)

    # -- on the loop's thread -----------------------------------------------------------------
    def guarded(self, step: Callable, *args) -> None:
        """Run one step, and kazoo's ``_connect_attempt``'s handling of what it raises: a dropped
        connection or a time-out moves on to the next host, an expired session too (kazoo then
        starts a new one), anything else ends the connection. Moving on is a step of its own,
        and may raise in turn (the next host refuses at once); the hosts run out in a few."""
        while step is not None:
            try:
                step(*args)
                return
            except (ConnectionDropped, OSError) as exc:
                if isinstance(exc, OSError):
                    exc = ConnectionDropped(f"socket connection error: {getattr(exc, 'strerror', None) or exc}")
                if self.phase == CONNECTED:
                    self.drop.hung_up(time.monotonic(), self._last_send, self._read_timeout)
                self.logger.warning("Connection dropped: %s", exc)
                self.loop.dropped += 1
                step, args = self._lost, ()
            except self.handler.timeout_exception as exc:
                self.logger.warning("Connection time-out: %s", exc)
                self.loop.dropped += 1
                step, args = self._lost, ()
            except SessionExpiredError:
                self.loop.expired += 1
                step, args = self._expired, ()
            except AuthFailedError as exc:
                self.logger.warning("AUTH_FAILED closing: %s", exc)
                self.client._session_callback(KeeperState.AUTH_FAILED)
                step, args = self._finish, ()
            except Exception:  # noqa: BLE001 - kazoo's thread would die here; this loop serves others
                self.logger.exception("Unhandled exception in connection loop")
                step, args = self._finish, ()

    def _on_socket(self, sock: socket.socket, ready: int) -> None:
        self.guarded(self.on_ready, sock, ready)

    def on_ready(self, sock: socket.socket, ready: int) -> None:
        if sock is not self._socket:
            return  # an event of a socket closed earlier in the same round of the selector
        if self.phase == TCP_CONNECTING:
            code = self._socket.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
            if code:
                raise ConnectionDropped(f"socket connection error: {os.strerror(code)}")
            self._handshake()
            return
        if ready & WRITE:
            self._flush()
        if ready & READ:
            self._receive()

    def on_wake(self) -> None:
        """The client queued requests (or ``stop()`` queued the close)."""
        self.guarded(self._on_wake)

    def on_timer(self) -> None:
        self.guarded(self._on_timer)

    def _on_wake(self) -> None:
        if self.phase == CONNECTED:
            self._step()
        elif self.phase in (WAITING, RESOLVING) and self.client._stopped.is_set():
            self._finish()  # kazoo's retry is interrupted while it sleeps

    def _on_timer(self) -> None:
        if self.phase == WAITING:
            self._round()
        elif self.phase in (TCP_CONNECTING, HANDSHAKE):
            raise self.handler.timeout_exception("socket time-out during read")
        elif self.phase == CONNECTED:
            self._step(early=PING_EARLY_S)

    def _handshake(self) -> None:
        client = self.client
        self.logger.log(BLATHER, "    Using session_id: %r", client._session_id)
        connect = Connect(0, client.last_zxid, client._session_timeout, client._session_id or 0,
                          client._session_passwd, client.read_only)
        self._await_handshake()
        self._submit(connect, None)
        self._flush()

    def _await_handshake(self) -> None:
        """kazoo's wait for the handshake's answer: the session timeout shared among the hosts."""
        self.phase = HANDSHAKE
        self.loop.set_timer(self, time.monotonic() + self.client._session_timeout / 1000.0 / self._host_count)

    def _connected(self, frame: bytes) -> None:
        """kazoo's ``_connect`` after the handshake's answer, and ``_connect_attempt``'s set-up."""
        client = self.client
        try:
            result, _ = Connect.deserialize(frame, 0)
        except Exception:  # noqa: BLE001 - as kazoo: a reply it cannot read is a dropped connection
            self.logger.exception("Exception raised during deserialization of request: %s", "Connect")
            raise ConnectionDropped("invalid server response") from None
        if result.time_out <= 0:
            raise SessionExpiredError("Session has expired")
        client._session_id = result.session_id
        client._protocol_version = result.protocol_version
        client._session_passwd = result.passwd
        self._connect_timeout = result.time_out / self._host_count / 1000.0
        self._read_timeout = result.time_out * 2.0 / 3.0 / 1000.0
        self.phase = CONNECTED
        client._session_callback(KeeperState.CONNECTED_RO if result.read_only else KeeperState.CONNECTED)
        self._ro_mode = None
        self._retry.reset()
        self.ping_outstanding.clear()
        self._last_send = self._last_heard = time.monotonic()
        self.drop.connected()
        self.loop.cancel_timer(self)  # the handshake's; :meth:`_step` sets the connection's own
        self._step()

    def _step(self, early: float = 0.0) -> None:
        """``ClientCnxn.SendThread.run``'s turn on a live connection, run whenever it would wake:
        at its timer, with requests queued, with an answer read.

        The connection drops when nothing has been heard for the read time-out (two thirds of
        the session timeout). A ping goes when the connection has sent nothing for half the read
        time-out, or for more than a second at a turn after that second
        (``keepalive.py``); it is queued after the requests of the same turn, and it or any
        request resets the clock. Nothing waits for a ping's answer: any answer is a sign of life.
        ``early``: on the timer, a ping up to that much before it is due goes now
        (:data:`PING_EARLY_S`); the drop never goes early."""
        now = time.monotonic()
        if timed_out(now, self._last_heard, self._read_timeout):
            self.drop.timed_out(now, now - self._armed_at, self._last_heard, self._last_send, self._read_timeout,
                                self._answer_waiting)
            late = self.drop.late_s
            raise ConnectionDropped(f"Client session timed out, have not heard from server in "
                                    f"{(now - self._last_heard) * 1000:.0f}ms" + (
                                        f" (this loop ran {late * 1000:.0f}ms late)" if late else ""))
        ping = ping_due(now, self._last_send, self._read_timeout, early)
        if self._send_queued() or ping:
            if ping:
                self._send_ping(self._connect_timeout)
            self.drop.sending(now, self._last_send, self._read_timeout)
            self._last_send = now
            self._flush()
        when, is_ping = next_turn(now, self._last_heard, self._last_send, self._read_timeout)
        self._arm(when, PING_EARLY_S if is_ping else 0.0)

    def _answer_waiting(self) -> bool:
        """Has ZooKeeper's next answer reached this connection's socket, unread?"""
        try:
            return bool(self._socket.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT))
        except (BlockingIOError, OSError, AttributeError):
            return False

    def _arm(self, when: float, early: float) -> None:
        """The connection's timer at ``when``, unless one is set sooner: a timer that finds nothing
        due sets the next, so a send or an answer that puts the moment off costs no new timer."""
        if self.timer_token is None or when < self._armed_at:
            self._armed_at = when
            self.loop.set_timer(self, when, early=early)

    def _send_queued(self) -> bool:
        """kazoo's ``_send_request``, for everything queued at once: one wake-up sends them all."""
        client = self.client
        sent = False
        while self.phase == CONNECTED and client._queue:
            request, async_object = client._queue[0]
            if request is _SESSION_EXPIRED:
                raise SessionExpiredError("Session expired: Testing")
            if request is _CONNECTION_DROP:
                raise ConnectionDropped("Connection dropped: Testing")
            if request.type == Auth.type:
                xid = AUTH_XID
            else:
                self._xid = (self._xid % 2147483647) + 1
                xid = self._xid
            self._submit(request, self._connect_timeout, xid)
            client._queue.popleft()
            client._pending.append((request, async_object, xid))
            sent = True
        return sent

    def _flush(self) -> None:
        if self.cable.paused:
            self._outbox.clear()  # blackholed
        if self._outbox:
            try:
                sent = self._socket.send(self._outbox)
            except BlockingIOError:
                sent = 0
            del self._outbox[:sent]
        self.loop.watch(self._socket, READ | WRITE if self._outbox else READ, self._on_socket)

    def _receive(self) -> None:
        chunk = self.loop.receive(self._socket)
        if not chunk:
            raise ConnectionDropped("socket connection broken")
        if self.cable.paused:
            return  # blackholed: only the connection's end gets through
        inbox = self._inbox
        inbox += chunk
        start = 0
        heard = False
        while len(inbox) - start >= 4 and self.phase in (HANDSHAKE, CONNECTED):
            length = int_struct.unpack_from(inbox, start)[0]
            if len(inbox) - start - 4 < length:
                break
            frame = bytes(inbox[start + 4:start + 4 + length])
            start += 4 + length
            if self.phase == HANDSHAKE:
                self._connected(frame)
            elif self._answer(frame) is CLOSE_RESPONSE:
                self.logger.info("Closing connection to %s:%s", *self._peer)
                return self._finish()
            else:
                heard = True
        del inbox[:start]
        if heard and self.phase == CONNECTED:
            self._last_heard = time.monotonic()
            self._step()

    def _answer(self, frame: bytes):
        """kazoo's ``_read_socket`` for one whole frame."""
        header, offset = ReplyHeader.deserialize(frame, 0)
        if header.xid == PING_XID:
            self.logger.log(BLATHER, "Received Ping")
            self.ping_outstanding.clear()
        elif header.xid == AUTH_XID:
            request, async_object, xid = self.client._pending.popleft()
            if header.err:
                async_object.set_exception(AuthFailedError())
                self.client._session_callback(KeeperState.AUTH_FAILED)
            else:
                async_object.set(True)
        elif header.xid == WATCH_XID:
            self._read_watch_event(frame, offset)
        else:
            return self._read_response(header, frame, offset)
        return None

    def _hung_up(self) -> None:
        raise ConnectionDropped("socket connection broken")

    def _close_socket(self) -> None:
        self.loop.cancel_timer(self)
        if self._socket is not None:
            self.loop.forget(self._socket)
            self._socket = None

    def _lost(self) -> None:
        """A dropped connection or a time-out: say so and try the next host."""
        self._close_socket()
        if self.client._state != KeeperState.CONNECTING:
            self.logger.warning("Transition to CONNECTING")
            self.client._session_callback(KeeperState.CONNECTING)
        self._next_host()

    def _expired(self) -> None:
        """ZooKeeper answered that the session expired: say so (off the loop, see
        :meth:`_session_ended`); when the listeners are done, the next host gets a new session."""
        self._close_socket()
        self._retry.reset()
        self.logger.warning("Session has expired")
        self.phase = LISTENING
        self._session_ended(KeeperState.EXPIRED_SESSION, then=lambda: self.loop.call(
            lambda: self.guarded(self._next_host)))

    def _finish(self) -> None:
        """``zk_loop``'s end: the connection has stopped, the client is closed (its listeners
        told off the loop; ``stop()`` waits for them, as kazoo's joins its thread)."""
        self._close_socket()
        self.phase = STOPPED
        self._session_ended(KeeperState.CLOSED, then=lambda: None)  # its thread is known before stop() looks
        self.connection_stopped.set()
        self.logger.log(BLATHER, "Connection stopped")

    def _session_ended(self, state: str, then: Callable[[], None]) -> None:
        """Tell the client its session ended, on a thread of its own, then ``then()``.

        A session's end is where a listener may wait: a broker's waits until its controller has
        taken ``Expire`` (Kafka's ``beforeInitializingSession``, run on its
        ``zk-session-expiry-handler`` thread, up to 30 s here) before the broker gets a new
        session. On kazoo's thread that held up this session alone; on the loop it would hold up
        every session of the process, and the controller it waits for may itself be waiting for
        an answer the loop must read. So this connection waits (no new session before the
        listeners return, as with kazoo) and the loop goes on. Nothing to tell when the client
        already knows (kazoo ignores a state it is in), so most closes start no thread."""
        if self.client._state == state or (state == KeeperState.CLOSED and self.client._state in CLOSED_STATES):
            self.client._session_callback(state)  # a no-op, or as good as one: the client already said LOST
            then()
            return

        def tell() -> None:
            try:
                self.client._session_callback(state)
            except Exception:  # noqa: BLE001 - as on kazoo's thread: say so, and the connection goes on
                self.logger.exception("Unhandled exception in a session's end")
            finally:
                then()
        telling = threading.Thread(target=tell, name="zk-session-expiry-handler", daemon=True)
        telling.start()
        self._telling = telling


def use_session_loop(client: KazooClient, cable: Cable | None = None) -> KazooClient:
    """Serve ``client``'s connection from the process's :class:`SessionLoop` instead of a thread of
    its own, through ``cable`` when given (a broker's). Call before ``start()``. Refuses what
    :class:`LoopConnection` does not do."""
    if client.use_ssl or client.auth_data or client.read_only or client._connection.sasl_options is not None:
        raise ValueError("the session loop does not do TLS, auth or read-only sessions")
    client._connection = LoopConnection(client, client._conn_retry.copy(), logger=client.logger, cable=cable)
    return client
