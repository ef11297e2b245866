"""A worker that has fallen behind refuses a student's next action and says why, instead of
accepting work it cannot do.

Every sandbox of a worker shares one interpreter. A worker asked for more than it can carry
(200 sandboxes on this 2-core machine: issue 14's sixteenth round) can lose its footing: its
brokers' pings go unanswered, hundreds of ZooKeeper sessions expire at once, their brokers
re-register and their controllers fail over, and that is more work again. A student who clicks
then waits for many seconds and gets a ``ConnectionLoss``, or nothing.

So the worker measures how far behind it is: a thread asks to wake every
:data:`PROBE_INTERVAL_S` and notes how late it woke. While that lateness, smoothed over about
half a second, is above ``limit_ms``, a student's new fault, sandbox or walkthrough is refused at
once with a 503 that says the server is overloaded and when to try again, and nothing of it is
started. What is already running goes on. The instructor's demo and a class's hand-out are never
refused (one action every few seconds, which the class is watching). Once the lateness is back
under half the limit, requests are accepted again.

It is a backstop and no cure. A worker carrying its class runs a few to 80 ms behind, even
when it cannot keep up with every request (100 students acting every 4 s). And the probe is
not the most delayed thread: one that makes many system calls in a row, such as the worker's
ZooKeeper session loop, waits for the interpreter at each of them and falls behind by seconds
when the probe does not (docs/performance.md, issue 14, sixteenth and twenty-eighth rounds). A
late loop pings late, and a ping answered too late drops its session: a ``ConnectionLoss`` for
whoever waited on it and, when it comes back too late, a session ZooKeeper has expired: a broker
or controller dead to its cluster that no student touched, and a failover the student did not
cause. So the probe also reads how overdue the loop's timers are (``SessionLoop.behind_s``),
smoothed the same way against a limit of its own, ``zk_limit_ms``, and refuses while either is
over its limit; refusing ends when both are under half theirs. At 200 students on one worker of
this 2-core machine it refused up to a sixth of the students' faults, and 0–3 sessions expired a minute
instead of 1–39; at 100 students the loop ran under 40 ms late and it never refused
(docs/performance.md, issue 14, twenty-ninth round). ``/healthz`` reports both latenesses and the
sessions dropped and expired.
"""

from __future__ import annotations

import math
import threading
import time
from typing import TYPE_CHECKING, Callable

from web.service import ApiError

if TYPE_CHECKING:
    from backend.zk.io_loop import SessionLoop

PROBE_INTERVAL_S = 0.05
SMOOTHING_S = 0.5
"""The time constant of the lateness' moving average: one collector pause (up to 0.2 s, issue 14's
tenth round) moves it by less than half its length; a worker that stays behind for a second
moves it by nearly all of it."""
DEFAULT_LIMIT_MS = 300
"""Refuse above this: well above the lateness of a worker carrying 100 active students on this
machine (at most 81 ms, read once a second), and well below the 0.5–3.4 s of one that has lost
its footing (docs/performance.md, issue 14, sixteenth round)."""
DEFAULT_ZK_LIMIT_MS = 1000
"""Refuse while the session loop's timers are this overdue, smoothed. A session pings when it
has sent nothing for a second or so (1.0–1.3 s at the lab's 4 s), and its connection drops when
it has heard nothing for two thirds of its time-out (2.7 s, ZooKeeper's Java client's rule since
issue 14's fortieth round; kazoo's dropped a connection whose ping was still unanswered 0.9–1.3 s
later); it expires if it is not back within the time-out. At 200 students on one worker a limit of 1 s left 0–3
expiries a minute, refusing up to a sixth of the faults with the tails unchanged; 0.6 s left none,
refusing two fifths, with longer tails for the faults it took (docs/performance.md, issue 14,
twenty-ninth round)."""
RETRY_AFTER_S = 2


class Lateness:
    """One lateness, smoothed over ~``SMOOTHING_S``, and its limit (0: never over it). The probe's
    own and the session loop's are two of these, refusing and resuming by the same rule."""

    def __init__(self, limit_ms: float) -> None:
        self.limit_ms = limit_ms
        self.ms = 0.0

    def add(self, late_s: float, weight: float) -> None:
        self.ms += (max(late_s, 0.0) * 1000 - self.ms) * weight

    def share(self) -> float:
        """How far toward its limit (1: at it); 0 for no limit."""
        return self.ms / self.limit_ms if self.limit_ms > 0 else 0.0


class LoadGuard:
    """The worker's lateness, measured by its own probe thread, and the refusal it implies."""

    def __init__(self, limit_ms: float = DEFAULT_LIMIT_MS, interval_s: float = PROBE_INTERVAL_S,
                 clock=time.monotonic, zk_loop: Callable[[], SessionLoop | None] | None = None,
                 zk_limit_ms: float = DEFAULT_ZK_LIMIT_MS) -> None:
        """``zk_loop``: the worker's ZooKeeper session loop, ``None`` until a session made it
        (``SessionLoop.in_this_process``): the probe reads how overdue its timers are
        (``behind_s``) at every wake, and :meth:`describe` its sessions' ``dropped`` and
        ``expired`` counts. ``zk_limit_ms`` 0: never refuse for the loop."""
        self.interval_s = interval_s
        self.clock = clock
        self.zk_loop = zk_loop
        self.probe = Lateness(limit_ms)
        """How late the probe wakes."""
        self.zk = Lateness(zk_limit_ms)
        """How overdue the session loop's timers are."""
        self.shedding = False
        self.refused = 0
        """Requests refused since the start (for ``/healthz`` and the bench)."""
        self.wakes = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> "LoadGuard":
        """The probe thread, unless both limits are 0 (``--shed-after-ms 0`` alone turns off the
        probe's own limit, not the session loop's)."""
        if (self.probe.limit_ms > 0 or self.zk.limit_ms > 0) and self._thread is None:
            self._thread = threading.Thread(target=self._run, name="load-probe", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """The probe stops (within one interval): the lateness stays as it was last measured."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(1)

    def _run(self) -> None:
        before = self.clock()
        while not self._stop.wait(self.interval_s):
            now = self.clock()
            loop = self._loop()
            self.observe(now - before - self.interval_s, now - before, loop.behind_s() if loop else 0.0)
            before = now

    def observe(self, late_s: float, elapsed_s: float, zk_late_s: float = 0.0) -> None:
        """One wake of the probe, ``late_s`` after it was due, ``elapsed_s`` after the previous one,
        with the session loop's timers ``zk_late_s`` overdue: a late wake weighs as long as it kept
        the probe waiting, so one 2-s stall counts as a second of lateness would, not as one sample
        among twenty. Refusing starts when either lateness passes its limit, and ends when both
        are under half theirs."""
        self.wakes += 1
        weight = 1 - math.exp(-max(elapsed_s, 0.0) / SMOOTHING_S)
        self.probe.add(late_s, weight)
        self.zk.add(zk_late_s, weight)
        worst = max(self.probe.share(), self.zk.share())
        if worst > 1:
            self.shedding = True
        elif worst < 0.5:
            self.shedding = False

    def require(self) -> None:
        """A 503 now, while the worker is behind: the student's action is not started."""
        if self.shedding:
            self.refused += 1
            raise ApiError(503, f"the server is overloaded ({self._behind()}): your action "
                                f"was not carried out; try again in {RETRY_AFTER_S} s",
                           headers={"Retry-After": str(RETRY_AFTER_S)}, retry_after=RETRY_AFTER_S, overloaded=True)

    def _behind(self) -> str:
        """Which lateness refuses, in a student's words."""
        if self.zk.share() > self.probe.share():
            return f"its ZooKeeper sessions run {self.zk.ms / 1000:.1f} s behind"
        return f"running {self.probe.ms / 1000:.1f} s behind"

    def _loop(self) -> SessionLoop | None:
        return self.zk_loop() if self.zk_loop is not None else None

    def describe(self) -> dict:
        loop = self._loop()
        return {"lag_ms": round(self.probe.ms, 1), "limit_ms": self.probe.limit_ms,
                "zk_lag_ms": round(self.zk.ms, 1), "zk_limit_ms": self.zk.limit_ms,
                "zk_dropped": loop.dropped if loop else 0, "zk_expired": loop.expired if loop else 0,
                "shedding": self.shedding, "refused": self.refused}
