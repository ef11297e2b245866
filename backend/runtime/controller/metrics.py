"""What the controller measures about its own work (Kafka's ``ControllerStats``), as records.

Kafka keeps rate-and-time metrics per ``ControllerState``; the lab says what a student can see:
how long a big batch of ZooKeeper writes took, and how they were sent — what Kafka 1.1's
pipelining (KAFKA-5642) buys, live. New controller measurements belong here.
"""

from __future__ import annotations

import threading

from backend.core.controller.events import ControllerState
from backend.core.records import Record
from backend.core.subjects import metric_subject
from backend.view.metrics import controller_gauges, rate_and_time_metric_name
from backend.runtime.peers import Emit

TIMED_WRITES = 200
"""A batch of at least this many controller writes leaves a ``zk_writes`` record with its time."""


class ControllerStats:
    def __init__(self, broker_id: int, emit: Emit) -> None:
        self.broker_id = broker_id
        self._emit = emit

    def writes_done(self, count: int, seconds: float, pipelined: bool, epoch: int) -> None:
        """A batch of ``count`` fenced writes took ``seconds`` (from the first submitted to the
        last answered); a big one is worth a record."""
        if count < TIMED_WRITES:
            return
        how = ("pipelined: each sent without waiting for the previous answer" if pipelined
               else "one at a time: each sent after the previous answer")
        self._emit([Record(kind="controller", subject=f"broker:{self.broker_id}", to_state="zk_writes",
                           broker_id=self.broker_id, controller_id=self.broker_id, controller_epoch=epoch or None,
                           count=count, note=f"Controller {self.broker_id} wrote {count} znodes to ZooKeeper in "
                                             f"{seconds * 1000:.0f} ms, {how}.",
                           detail={"ms": round(seconds * 1000, 1), "pipelined": pipelined})])


class _Timer:
    """What a Yammer timer or histogram tells over JMX, reduced to count, mean, max and last (ms)."""

    def __init__(self) -> None:
        self.count, self.total_ms, self.max_ms, self.last_ms = 0, 0.0, 0.0, 0.0

    def update(self, seconds: float) -> None:
        ms = seconds * 1000
        self.count += 1
        self.total_ms += ms
        self.max_ms = max(self.max_ms, ms)
        self.last_ms = ms

    def snapshot(self) -> dict[str, float]:
        mean = self.total_ms / self.count if self.count else 0.0
        return {"count": self.count, "mean_ms": round(mean, 3), "max_ms": round(self.max_ms, 3),
                "last_ms": round(self.last_ms, 3)}


class EventStats:
    """The event manager's measurements: ``EventQueueTimeMs`` (how long each event waited in the
    queue) and one ``<State>RateAndTimeMs`` timer per controller state (how long processing took)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._queue_time = _Timer()
        self._timers: dict[str, _Timer] = {}

    def taken(self, waited_s: float) -> None:
        with self._lock:
            self._queue_time.update(waited_s)

    def processed(self, state: ControllerState, seconds: float) -> None:
        name = rate_and_time_metric_name(state)
        if name is not None:
            with self._lock:
                self._timers.setdefault(name, _Timer()).update(seconds)

    def snapshot(self) -> tuple[dict, dict]:
        """``(EventQueueTimeMs, {timer name: its values})``."""
        with self._lock:
            return self._queue_time.snapshot(), {n: t.snapshot() for n, t in self._timers.items()}


class GaugeReporter:
    """Kafka's ``updateMetrics``, run after every event: each controller gauge that changed
    becomes a ``metric`` record, so the replay log (and Spark) holds every value it took. It
    also counts this controller's unclean elections (``UncleanLeaderElectionsPerSec``)."""

    def __init__(self, broker_id: int, emit: Emit) -> None:
        self.broker_id = broker_id
        self._emit = emit
        self._last: dict[str, int] = {}
        self.unclean_elections = 0

    def update(self, ctx, active: bool) -> None:
        gauges = controller_gauges(ctx, active)
        changed = [(name, value) for name, value in gauges.items() if self._last.get(name, 0) != value]
        self._last = gauges
        if changed:
            self._emit([Record(kind="metric", subject=metric_subject(name), to_state="changed",
                               broker_id=self.broker_id, op=name, count=value, note=f"Broker {self.broker_id}: {name} is now {value}.")
                        for name, value in changed])

    def count_unclean_elections(self, records) -> None:
        self.unclean_elections += sum(1 for r in records if r.kind == "election" and r.election == "offline_unclean"
                                      and r.outcome == "ok")
