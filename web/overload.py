"""Load shedding: while the worker's threads wait too long for their turn, students' new work waits.

Why: every sandbox's brokers and ZooKeeper sessions, and every page socket, share one process and
its interpreter lock. Measured with 200 active students on one worker of a 2-core machine
(``docs/performance.md``, issue 14, "200 students on one worker"), the worker saturated: threads
waited seconds for the lock, kazoo's connection threads missed their pings, ZooKeeper dropped
sessions — the app's own and the brokers' — and re-registering them added work to a worker that
had none to spare, until requests went unanswered for a minute. A server that slows down under a
class must not fall over: while it is late, a student's *new* work (a fault, a produce, a new
sandbox or lesson) is refused at once with a 503 that says why and when to retry, and everything
already running — the sessions, the pages, the instructor's demo — keeps the worker's time.

How "late" is measured: one thread sleeps :data:`PROBE_S` again and again and notes how late it
wakes. Waking late means waiting for the interpreter lock or for a core: exactly what the kazoo
threads that keep the ZooKeeper sessions alive suffer. :class:`LagMeter` smooths those samples,
so a single hiccup (a garbage collection, a Spark job starting) sheds nothing.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from web.service import ApiError

PROBE_S = 0.1
"""How often the probe wakes: ten samples a second, a few microseconds each."""
SMOOTHING = 0.3
"""Weight of the newest sample in the moving average: a single 1 s stall moves it to 0.3 s."""
BUSY_LAG_S = 0.4
"""Shed from this average lateness on. A kazoo client pings after a third of the session timeout
idle (1.3 s under the lab's 4 s) and drops the connection after two thirds: shedding starts well
before a ping is late enough to lose a session."""
CALM_LAG_S = 0.1
"""Accept again below this average (hysteresis, so the door does not flap)."""
RETRY_AFTER_S = 5


class LagMeter:
    """The moving average of the probe's lateness and the busy/calm decision (pure: fed samples)."""

    def __init__(self, busy_s: float = BUSY_LAG_S, calm_s: float = CALM_LAG_S, smoothing: float = SMOOTHING) -> None:
        self.busy_s, self.calm_s, self.smoothing = busy_s, calm_s, smoothing
        self.lag_s = 0.0
        self.busy = False
        self.shed = 0
        """Requests refused while busy, for ``/healthz``."""

    def note(self, lag_s: float) -> None:
        """One probe woke ``lag_s`` late."""
        self.lag_s += self.smoothing * (max(0.0, lag_s) - self.lag_s)
        if self.lag_s >= self.busy_s:
            self.busy = True
        elif self.lag_s <= self.calm_s:
            self.busy = False

    def describe(self) -> dict:
        return {"busy": self.busy, "lag_ms": round(self.lag_s * 1000, 1), "shed": self.shed}


class Overload:
    """The probe thread of one worker and the check its student-facing requests call."""

    def __init__(self, enabled: bool = True, meter: LagMeter | None = None, sandboxes: Callable[[], int] = lambda: 0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        """``enabled``: ``kclab serve --shed-lag-ms 0`` (``SHED_LAG_MS``) turns shedding off; the
        probe then does not run. ``sandboxes``: how many run here, for the refusal's words."""
        self.enabled = enabled
        self.meter = meter or LagMeter()
        self.sandboxes = sandboxes
        self.clock = clock
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> "Overload":
        if self.enabled:
            self._thread = threading.Thread(target=self._probe, name="overload-probe", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """End the probe (within one ``PROBE_S``); the meter keeps its last verdict."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(1.0)

    def _probe(self) -> None:
        while True:
            due = self.clock() + PROBE_S
            if self._stop.wait(PROBE_S):
                return
            self.meter.note(self.clock() - due)

    def require(self) -> None:
        """Raise a 503 (``Retry-After``) while the worker is late; return at once otherwise."""
        if not (self.enabled and self.meter.busy):
            return
        self.meter.shed += 1
        raise ApiError(503, f"the server is busy: its {self.sandboxes()} running clusters keep it fully occupied "
                            f"(each of its threads waits {self.meter.lag_s:.1f} s for its turn). Nothing you did is "
                            f"lost; try again in {RETRY_AFTER_S} s", headers={"Retry-After": str(RETRY_AFTER_S)},
                       retry_after=RETRY_AFTER_S)

    def describe(self) -> dict:
        return {"enabled": self.enabled, **self.meter.describe()}
