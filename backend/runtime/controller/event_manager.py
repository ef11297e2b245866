"""Kafka's ``ControllerEventManager`` (§4.1): one queue, one thread, per broker.

Every broker runs one ``controller-event-thread``. ZooKeeper watch callbacks, timers and
requests only *put* events; the thread takes them one at a time and processes each to the end
before the next, so the controller's logic never needs a lock. ``clear_and_put`` empties the
queue — every waiting event is *preempted* instead of processed — and then puts its event:
that is how ``Expire`` jumps the queue when the ZooKeeper session is lost.

Each event leaves four kinds of records: queued, processing, processed (or failed), and
preempted — the browser's Controller view is drawn from exactly these.
"""

from __future__ import annotations

import itertools
import threading
import time
import traceback
from collections import deque
from dataclasses import dataclass, field
from typing import Callable

from backend.core.controller.events import ControllerEvent, ControllerState, ShutdownEventThread
from backend.core.records import Record
from backend.core.subjects import event_subject
from backend.runtime.controller.metrics import EventStats


@dataclass
class QueuedEvent:
    id: int
    event: ControllerEvent
    queued_seq: int | None = None
    """The seq of the record that announced this event: what its consequences point back to."""
    enqueued_at: float = field(default_factory=time.monotonic)
    started: threading.Event = field(default_factory=threading.Event)
    """Set when the thread takes the event (or it is preempted): Kafka's ``processingStarted``."""

    def await_processing(self, timeout: float) -> bool:
        """Kafka's ``QueuedEvent.awaitProcessing``: wait until the thread has taken this event."""
        return self.started.wait(timeout)

    @property
    def subject(self) -> str:
        return event_subject(self.event.name, self.id)


def _no_thread(queued: QueuedEvent) -> None:
    raise RuntimeError("the controller's event thread has stopped")


class ControllerEventManager:
    def __init__(
        self, broker_id: int, process: Callable[[QueuedEvent], None], emit: Callable[[list[Record]], list[Record]],
        event_ids: itertools.count | None = None, gate: threading.Event | None = None,
        preempt: Callable[[QueuedEvent], None] | None = None,
    ) -> None:
        """``process`` handles one event on the event thread; ``emit`` takes records; ``gate``
        is cleared while the broker is paused (the thread then waits before its next event)."""
        self.broker_id = broker_id
        self._process = process
        self._preempt = preempt or (lambda queued: None)
        self._emit = emit
        self._ids = event_ids or itertools.count(1)
        self._gate = gate or _always_open()
        self._queue: deque[QueuedEvent] = deque()
        self._cond = threading.Condition()
        self._current: QueuedEvent | None = None
        self.state = ControllerState.Idle
        self.stats = EventStats()
        self._thread = threading.Thread(target=self._run, name=f"controller-event-thread-{broker_id}", daemon=True)
        self._started = False
        self._closed = False

    def start(self) -> None:
        self._started = True
        self._thread.start()

    # -- putting ------------------------------------------------------------------------------
    def put(self, event: ControllerEvent) -> QueuedEvent:
        with self._cond:
            queued = QueuedEvent(next(self._ids), event)
            if self._closed:
                queued.started.set()  # no thread will take it: nobody may wait for that
            self._queue.append(queued)
            stamped = self._emit([self._record(queued, "queued")])
            queued.queued_seq = stamped[0].seq if stamped else None
            self._cond.notify_all()
        return queued

    def clear_and_put(self, event: ControllerEvent) -> QueuedEvent:
        """Preempt everything waiting, then put ``event`` (Kafka: ``clearAndPut``)."""
        with self._cond:
            drained = list(self._queue)
            self._queue.clear()
            for queued in drained:
                self._preempt(queued)
                queued.started.set()
            if drained:
                why = ("the broker is shutting down, so its controller thread stops"
                       if isinstance(event, ShutdownEventThread)
                       else "a controller without a session must not act on it")
                self._emit([self._record(q, "preempted", note=f"Preempted by {event.name}: {why}.")
                            for q in drained])
            return self.put(event)

    # -- the thread -----------------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            # A paused broker's thread is frozen *before* it takes an event: what arrives while
            # it is frozen stays in the queue, where an Expire's clear_and_put can still preempt it.
            self._gate.wait()
            with self._cond:
                while not self._queue:
                    self._cond.wait()
                if not self._gate.is_set() and not isinstance(self._queue[0].event, ShutdownEventThread):
                    continue  # paused while it waited for an event: freeze, leave the event queued
                queued = self._queue.popleft()
            queued.started.set()
            self.stats.taken(time.monotonic() - queued.enqueued_at)
            if isinstance(queued.event, ShutdownEventThread):
                self._emit([self._record(queued, "processed")])
                return
            with self._cond:
                self._current = queued
                self.state = queued.event.state
            self._emit([self._record(queued, "processing")])
            started = time.monotonic()
            try:
                self._process(queued)
                self._emit([self._record(queued, "processed")])
            except Exception as exc:  # the thread never dies (§2.6)
                self._emit([self._record(queued, "failed", outcome="error",
                                         note=f"{type(exc).__name__}: {exc}",
                                         detail={"traceback": traceback.format_exc(limit=8)})])
            finally:
                self.stats.processed(queued.event.state, time.monotonic() - started)
                with self._cond:
                    self._current = None
                    self.state = ControllerState.Idle
                    self._cond.notify_all()

    def close(self, timeout: float = 10.0) -> None:
        if not self._started:
            return
        self.clear_and_put(ShutdownEventThread())
        self._closed = True
        self._gate.set()
        self._thread.join(timeout)
        if not self._thread.is_alive():
            # ``process`` is the controller's bound method: the controller and this manager
            # point at each other, and a stopped broker's controller waited for a full
            # collection (``teardown.unlink`` says what that cost a class).
            self._process = _no_thread

    # -- looking at it ------------------------------------------------------------------------
    def is_idle(self) -> bool:
        with self._cond:
            return not self._queue and self._current is None

    def size(self) -> int:
        with self._cond:
            return len(self._queue)

    def pending(self) -> list[QueuedEvent]:
        with self._cond:
            return list(self._queue)

    @property
    def current(self) -> QueuedEvent | None:
        return self._current

    def wait_idle(self, timeout: float) -> bool:
        with self._cond:
            return self._cond.wait_for(lambda: not self._queue and self._current is None, timeout)

    def _record(self, queued: QueuedEvent, to_state: str, outcome: str | None = None,
                note: str | None = None, detail: dict | None = None) -> Record:
        return Record(
            kind="controller_event", subject=queued.subject, to_state=to_state, broker_id=self.broker_id,
            op=queued.event.name, outcome=outcome, note=note, cause_seq=queued.queued_seq,
            detail={"controller_state": queued.event.state.name, "queue_size": len(self._queue),
                    **_payload(queued.event), **(detail or {})},
        )


def _payload(event: ControllerEvent) -> dict:
    fields = {k: v for k, v in vars(event).items() if k != "callback"}
    return {"event": {k: str(v) if not isinstance(v, (int, str, bool, type(None))) else v
                      for k, v in fields.items()}} if fields else {}


def _always_open() -> threading.Event:
    gate = threading.Event()
    gate.set()
    return gate
