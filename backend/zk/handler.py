"""kazoo's threading handler, made cheaper per request: a plain ``poll`` for ``select``, and
wake-ups that a thread submitting many requests can hold back and send at once.

Every kazoo client has a connection thread that loops on ``handler.select`` over its socket
and a wake-up socket, and calls ``select`` again before each read of an answer: three or four
waits per request. kazoo's stock ``selector_select`` builds a ``DefaultSelector`` (epoll on
Linux) on every call — epoll_create, one epoll_ctl per fd, epoll_wait, close. A web app holds a
few clients per sandbox, and profiling 30 sandboxes under load showed kazoo's connection
threads as the largest holder of the GIL, 16 % of the samples in ``selectors``
(docs/performance.md). One ``select.poll`` object registers without a system call and waits
with one ``poll``: ≈ 1.5 µs a wait against ≈ 6 µs through a ``PollSelector``; unlike
``select.select`` it has no limit on fd numbers, which is why kazoo moved off ``select``.
"""

from __future__ import annotations

import copy
import math
import select as select_module
import threading
from contextlib import contextmanager
from typing import Callable, Iterator

from kazoo.handlers.threading import AsyncResult, SequentialThreadingHandler
from kazoo.handlers.utils import fileobj_to_fd

_READABLE_IF = ~select_module.POLLOUT  # as selectors.PollSelector: errors and hang-ups wake both
_WRITABLE_IF = ~select_module.POLLIN


def poll_select(rlist, wlist, xlist, timeout: float | None = None):
    """``select.select``'s contract (kazoo's ``selector_select``'s): the ready objects of
    ``rlist`` and ``wlist``; ``xlist`` is never ready. ``timeout`` in seconds, ``None`` = wait."""
    if timeout is not None:
        if not isinstance(timeout, (int, float)):
            raise TypeError("timeout must be a number")
        if timeout < 0:
            raise ValueError("timeout must be non-negative")
    wanted: dict[int, int] = {}
    readers: dict[int, list] = {}
    writers: dict[int, list] = {}
    for objects, mask, owners in ((rlist, select_module.POLLIN, readers), (wlist, select_module.POLLOUT, writers)):
        for obj in objects:
            fd = fileobj_to_fd(obj)
            wanted[fd] = wanted.get(fd, 0) | mask
            owners.setdefault(fd, []).append(obj)
    poller = select_module.poll()
    for fd, mask in wanted.items():
        poller.register(fd, mask)
    ms = None if timeout is None else (math.ceil(timeout * 1e3) if timeout > 0 else 0)
    readable, writable = [], []
    for fd, flags in poller.poll(ms):
        if fd in readers and flags & _READABLE_IF:
            readable.extend(readers[fd])
        elif fd in writers and flags & _WRITABLE_IF:
            writable.extend(writers[fd])
    return readable, writable, []


class PollingThreadingHandler(SequentialThreadingHandler):
    """``SequentialThreadingHandler`` with :func:`poll_select` and deferrable wake-ups."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._deferring = threading.local()
        self._wake: _WakeSocket | None = None

    def select(self, *args, **kwargs):
        return poll_select(*args, **kwargs)

    def async_result(self) -> AsyncResult:
        return QuietAsyncResult(self)

    def create_socket_pair(self):
        """kazoo's pair (read end, write end), the write end wrapped in a :class:`_WakeSocket`.
        One handler serves one client; a restarted connection gets a new pair."""
        read_end, write_end = super().create_socket_pair()
        return read_end, self.deferrable(write_end)

    def deferrable(self, wake) -> _WakeSocket:
        """``wake`` (what kazoo's client writes its wake-up bytes to) behind this handler's
        :meth:`deferred_wakeups`: kazoo's own socket pair, or the shared session loop's wake
        (``backend/zk/session_loop.py``)."""
        self._wake = _WakeSocket(wake, self._deferring)
        return self._wake

    def release(self) -> None:
        """The client has stopped (``teardown.unlink``): drop the connection's wake-up, which
        points back at it (a deferred block that ends later has nothing to flush), and any
        callback queued after kazoo's ``stop`` emptied the queues (a watch told of the session's
        end), which no worker will run and which holds its watcher."""
        with self._state_change:
            self._wake = None
            if not self._running:
                self.callback_queue, self.completion_queue = self.queue_impl(), self.queue_impl()

    @contextmanager
    def deferred_wakeups(self) -> Iterator[Callable[[], None]]:
        """Hold back this thread's wake-ups until the block ends or the yielded ``flush`` is
        called. Requests are queued in order either way; only their sending is delayed."""
        if getattr(self._deferring, "held", None) is not None:  # nested: the outer block flushes
            yield lambda: None
            return
        self._deferring.held = 0

        def flush() -> None:
            if self._wake is not None:
                self._wake.flush()
        try:
            yield flush
        finally:
            flush()
            self._deferring.held = None


class QuietAsyncResult(AsyncResult):
    """kazoo's ``AsyncResult`` whose ``get`` raises without making a reference cycle.

    kazoo's ``get`` raises ``self._exception`` from a frame that holds ``self``: the exception's
    traceback holds that frame, the frame the result, the result the exception. Every frame of
    the call up to its catcher hangs on the cycle, with what they held — a broker's client
    refused at start (``NodeExists``), a controller's requests cut off by its session's end — so
    a restarted broker's old state waited for the cyclic collector, which a class of 200 makes
    take seconds (issue 14, thirty-seventh round). Here the raising frame lets go of the result
    and the exception before the traceback keeps it, and what is raised is a copy of the stored
    exception: a caller's frame that holds the result (``r = x_async(); r.get()``) is in the
    copy's traceback, but the result holds only the original, which has none. Same outcomes as
    kazoo's: the value, the stored exception's type and arguments, or kazoo's time-out."""

    def set_exception(self, exception: BaseException) -> None:
        """Kept without the traceback it was raised with: kazoo's callbacks store what they caught
        from a frame whose closure holds this result (``capture_exceptions``), another cycle.
        ``get`` raises it with a traceback of its own caller's."""
        super().set_exception(exception.with_traceback(None))

    def get(self, block: bool = True, timeout: float | None = None):
        with self._condition:
            if not self.ready() and block:
                self._condition.wait(timeout)
            ready, exception, value = self.ready(), self._exception, self.value
        if not ready:
            exception = self._timeout_factory()
        elif exception is None:
            return value
        else:
            exception = _copied(exception)
        try:
            raise exception
        finally:
            del self, exception


def _copied(exception: BaseException) -> BaseException:
    """A copy of ``exception`` without its traceback (kazoo's are plain: a type and its
    arguments); the exception itself when it cannot be copied."""
    try:
        return copy.copy(exception).with_traceback(None)
    except Exception:  # noqa: BLE001 - an exception type that cannot be rebuilt from its arguments
        return exception


class _WakeSocket:
    """The write end of kazoo's wake-up socketpair, able to hold its wake-ups back.

    kazoo's ``_call`` queues a request and writes one byte to this socket, so the connection
    thread (asleep in ``poll``) sends it. One byte per request is one system call that releases
    the GIL to that thread and must win it back: a controller submitting 2,000 fenced writes
    spent most of its submission time in this ``send`` (docs/performance.md §1). Inside
    :meth:`PollingThreadingHandler.deferred_wakeups` the bytes of the calling thread are counted
    instead and written in one ``sendall`` at each :meth:`flush`: the connection thread still
    gets exactly one byte per queued request, in one wake-up.
    """

    def __init__(self, sock, deferring: threading.local) -> None:
        self._sock = sock
        self._deferring = deferring

    def send(self, data: bytes) -> int:
        held = getattr(self._deferring, "held", None)
        if held is None:
            return self._sock.send(data)
        self._deferring.held = held + len(data)
        return len(data)

    def flush(self) -> None:
        held = getattr(self._deferring, "held", None)
        if held:
            self._deferring.held = 0
            try:
                self._sock.sendall(b"\0" * held)
            except OSError:
                pass  # closed under us: kazoo fails the queued requests when it notices, as in its _call

    def close(self) -> None:
        self._sock.close()

    def fileno(self) -> int:
        return self._sock.fileno()


@contextmanager
def deferred_wakeups(zk) -> Iterator[Callable[[], None]]:
    """``zk.handler.deferred_wakeups()`` when the client has our handler, else a no-op block
    (the bench's and tools' plain clients)."""
    if isinstance(zk.handler, PollingThreadingHandler):
        with zk.handler.deferred_wakeups() as flush:
            yield flush
    else:
        yield lambda: None
