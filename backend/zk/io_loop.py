"""The process's one thread for its ZooKeeper traffic, shared by every session.

Every broker's and operator's ZooKeeper session (``session_loop.py``; a broker's through its
cable, ``cable.py``) is served by the one thread this module starts: a selector over all their
sockets, a heap of the sessions' timers (pings, connection time-outs, reconnection waits), and
calls that other threads hand it. Nothing it runs may block: every session of the process waits
while it does. Name lookups, which may, go to a small pool beside it (:meth:`SessionLoop.resolve`).

``backend/zk`` sits below the runtime, so the one-per-process rule is kept here rather than by
``backend/runtime/per_process.py``, which says the same.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import os
import selectors
import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Protocol

READ, WRITE = selectors.EVENT_READ, selectors.EVENT_WRITE

RECV_BYTES = 256 * 1024
"""The most one read of a session's socket takes (an 896 KB answer comes in several)."""


class Owner(Protocol):
    """What the loop wakes and times: a session's connection. Each entry point handles its own
    errors (a session's trouble is that session's)."""

    timer_token: int | None

    def on_wake(self) -> None:
        """Its client queued requests."""

    def on_timer(self) -> None:
        """Its timer (:meth:`SessionLoop.set_timer`) is due."""


class SessionLoop:
    """The process's one thread for its ZooKeeper traffic: a selector over the sockets of every
    session, a heap of the sessions' timers, and calls from other threads. Other threads
    reach it only through :meth:`call` and :meth:`wake`; sockets and timers are touched on the
    loop's thread alone."""

    _made: tuple[int, SessionLoop] | None = None
    _made_lock = threading.Lock()

    @classmethod
    def shared(cls) -> SessionLoop:
        """This process's loop, made on first use — and made again in a forked child (a
        scale-out worker), which inherits the object but not its thread."""
        with cls._made_lock:
            loop = cls.in_this_process()
            if loop is None:
                loop = cls()
                cls._made = (os.getpid(), loop)
            return loop

    @classmethod
    def in_this_process(cls) -> SessionLoop | None:
        """This process's loop if a session made it, without making one (a forked child's
        inherited loop is not its own): what ``web/load_guard.py`` reads."""
        made = cls._made
        return made[1] if made is not None and made[0] == os.getpid() else None

    def __init__(self) -> None:
        self._selector = selectors.DefaultSelector()
        self._lock = threading.Lock()
        self._calls: list[Callable[[], None]] = []
        self._woken: dict[Owner, None] = {}
        """Connections with requests queued since the loop last looked, in the order they asked."""
        self._poked = False
        self._timers: list[tuple[float, int, Owner]] = []
        self._tokens = itertools.count()
        self._watched: dict[socket.socket, tuple[int, Callable]] = {}
        """Each watched socket's events and handler: asking the selector instead raises, and
        formats, a KeyError for every socket it does not hold."""
        self._received = memoryview(bytearray(RECV_BYTES))
        """:meth:`receive`'s buffer, the loop's thread's alone."""
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._selector.register(self._wake_r, READ, None)
        self._resolver = ThreadPoolExecutor(max_workers=2, thread_name_prefix="zk-resolve")
        self._ended = False
        self.dropped = 0
        """Connections of its sessions that dropped or timed out (a ping unanswered in time, a
        server gone), counted on the loop's thread."""
        self.expired = 0
        """Sessions ZooKeeper said had expired when they came back: each one's broker or controller
        was dead to the cluster, whoever caused it."""
        self.thread = threading.Thread(target=self._run, name="zk-sessions", daemon=True)
        self.thread.start()

    # -- from any thread ---------------------------------------------------------------------
    def call(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` on the loop's thread."""
        with self._lock:
            self._calls.append(fn)
            poke = self._poke()
        if poke:
            self._send_poke()

    def wake(self, conn: Owner) -> None:
        """``conn``'s client queued a request: send what it queued. Many wakes before the loop
        looks are one wake-up of its thread."""
        with self._lock:
            self._woken[conn] = None
            poke = self._poke()
        if poke:
            self._send_poke()

    def _poke(self) -> bool:
        if self._poked:
            return False
        self._poked = True
        return True

    def _send_poke(self) -> None:
        try:
            self._wake_w.send(b"x")
        except OSError:  # BlockingIOError included: the loop is woken already
            pass

    def resolve(self, lookup: Callable[[], list], round_id: int, then: Callable[[int, list], None]) -> None:
        """``then(round_id, lookup())`` on the loop's thread, ``lookup`` (a name lookup) on a
        thread of the loop's small pool; a lookup that fails gives no hosts."""
        def off_loop() -> None:
            try:
                found = lookup()
            except Exception:  # noqa: BLE001 - no host resolved: the round fails and is retried
                found = []
            self.call(lambda: then(round_id, found))
        self._resolver.submit(off_loop)

    # -- on the loop's thread ----------------------------------------------------------------
    def watch(self, sock: socket.socket, events: int, handler: Callable[[socket.socket, int], None]) -> None:
        """``handler(sock, ready)`` when ``sock`` is ready for ``events`` (0: not watched for
        now). The handler must never block: every session of the process waits."""
        if sock.fileno() < 0:
            return
        now = self._watched.get(sock)
        if now == (events, handler):
            return  # already so: no system call
        if not events:
            if now is not None:
                self._selector.unregister(sock)
                del self._watched[sock]
            return
        if now is None:
            self._selector.register(sock, events, handler)
        else:
            self._selector.modify(sock, events, handler)
        self._watched[sock] = (events, handler)

    def receive(self, sock: socket.socket) -> memoryview:
        """What ``sock`` has now, up to :data:`RECV_BYTES` (empty: the peer closed it), valid until
        the next call. Read into one buffer kept for the purpose: ``sock.recv(RECV_BYTES)`` makes
        a new 256 KiB object each time and shrinks it to what came, which glibc does with an
        ``mmap``, an ``mremap`` and a ``munmap`` — three system calls for every answer and ping."""
        return self._received[:sock.recv_into(self._received)]

    def forget(self, sock: socket.socket) -> None:
        """Stop selecting ``sock`` and close it."""
        if self._watched.pop(sock, None) is not None:
            self._selector.unregister(sock)
        sock.close()

    def set_timer(self, conn: Owner, when: float, early: float = 0.0) -> None:
        """``conn.on_timer()`` at ``when`` (monotonic), replacing its previous timer; or up to
        ``early`` seconds before, when the loop wakes then for another timer alone.

        The early margin is for timers whose moment is already a random draw (kazoo's pings):
        on this VM a thread woken from idle costs ~80 µs before it runs a line (the twelfth
        round measured it), more than a ping itself, and hundreds of sessions' pings each on a
        wake-up of their own were most of an idle sandbox's CPU. A timer never fires late for
        it, and no wake-up is added: those due within the margin go with the one that is due.
        Only on a timer's wake-up: a busy loop, woken by answers and requests, pings at kazoo's
        moments (going early on every wake-up, the busy class's tails and CPU per fault looked
        worse: docs/performance.md, nineteenth round)."""
        token = next(self._tokens)
        conn.timer_token = token
        heapq.heappush(self._timers, (when, token, conn, when - early))

    def behind_s(self) -> float:
        """How long its most overdue timer (a ping, a time-out) has been due, now; 0 while the
        loop keeps up. Read from any thread without a lock: the heap's first entry is read whole,
        and a moment's stale answer only moves a smoothed average (``web/load_guard.py``).

        A worker's other threads can run on time while this one runs seconds late: it wakes for
        hundreds of sockets a turn and gets the interpreter one switch interval at a time, and a
        ping answered too late drops its session (docs/performance.md, issue 14, twenty-ninth
        round)."""
        try:
            due = self._timers[0][0]
        except IndexError:
            return 0.0
        return max(0.0, time.monotonic() - due)

    @staticmethod
    def cancel_timer(conn: Owner) -> None:
        conn.timer_token = None  # its heap entry is skipped when it comes up

    def close(self) -> None:
        """End the loop's thread and let go of its selector and sockets. The process's shared
        loop is never closed (its sessions live as long as the process); a loop made apart, as
        the tests make one to see its timers alone, is. Its sessions must be gone first."""
        self.call(self._end)
        self.thread.join(5)
        self._selector.close()
        self._wake_r.close()
        self._wake_w.close()
        self._resolver.shutdown(wait=False)

    def _end(self) -> None:
        self._ended = True

    def _run(self) -> None:
        while not self._ended:
            try:
                self._turn()
            except Exception:  # noqa: BLE001 - the loop serves every session: it must go on
                logging.getLogger(__name__).exception("the ZooKeeper session loop failed a turn")

    def _turn(self) -> None:
        timeout = None
        if self._timers:
            timeout = max(0.0, self._timers[0][0] - time.monotonic())
        events = self._selector.select(timeout)
        for key, ready in events:
            if key.data is None:
                self._run_calls()
            else:
                _safely(key.data, key.fileobj, ready)
        self._run_timers(early=not events)

    def _run_calls(self) -> None:
        try:
            self._wake_r.recv(4096)  # one read: until the lock is taken below, one poke at most is sent
        except BlockingIOError:
            pass
        with self._lock:
            calls, self._calls = self._calls, []
            woken, self._woken = self._woken, {}
            self._poked = False
        for fn in calls:
            _safely(fn)
        for conn in woken:
            _safely(conn.on_wake)

    def _run_timers(self, early: bool) -> None:
        """Every timer due; and, when the loop woke for nothing else (``early``), those after it
        that may go early (in the heap's order: one that may not stops the look ahead)."""
        now = time.monotonic()
        timers = self._timers
        while timers and (timers[0][0] <= now or early and timers[0][3] <= now):
            _, token, conn, _ = heapq.heappop(timers)
            if conn.timer_token == token:
                conn.timer_token = None
                _safely(conn.on_timer)


def _safely(fn: Callable, *args) -> None:
    try:
        fn(*args)
    except Exception:  # noqa: BLE001 - one session's trouble must not stop every other
        logging.getLogger(__name__).exception("a step on the ZooKeeper loop failed")
