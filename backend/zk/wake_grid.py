"""Timed wake-ups of the process's threads, ended on a shared grid so that they come together.

An idle sandbox's CPU is mostly threads waking on timers: each ZooKeeper session's connection
thread to send its ping (a third of the session timeout) and again for the answer, the cable
thread that carries both, and the replica scheduler's runner for the brokers' idle fetches
(Kafka's ``replica.fetch.wait.max.ms``). On the lab's 2-vCPU VMs a thread's timed wake-up costs
~85 µs of CPU when it falls alone and ~45 µs when hundreds fall on the same millisecond (a scratch
of 400 threads waking every 1.33 s, docs/performance.md, issue 14, twelfth round): most of a lone
wake-up is the virtual CPU leaving its idle state, which the threads that wake with it share. So
a wait long enough to be a timer ends at the next multiple of a grid of the monotonic clock
instead of where it fell: the same wake-ups, each a little later, together.

Only waits longer than the grid are moved, so a short wait (a produce's batching gap, a retry
back-off) ends when it was asked to, and nothing waits more than twice as long as it asked.
Nothing that a socket or another thread ends is moved: an answer, a request or a wake still ends
the wait at once. Both grids are multiples of the monotonic clock (shared by every process of the
machine), so two workers' wake-ups and the two users' below fall together too.
"""

from __future__ import annotations

import math
import time

SESSION_GRID_S = 0.2
"""For kazoo's connection threads (``handler.PollingThreadingHandler``): their timed waits are the
pings, every ~1.1–1.3 s at the lab's 4 s session timeout, already jittered by kazoo by up to
0.4 s; at most 0.2 s later leaves a ping well inside the session timeout."""

ROUND_GRID_S = 0.05
"""For the replica scheduler's runner: an idle fetch is due every 500 ms, and a leader's ISR check
or a produce's time-out at its own deadline; at most 50 ms later is below what the page shows (its
broadcasts are 1/15 s apart)."""


def on_grid(due: float, grid: float, now: float | None = None) -> float:
    """When a wait until ``due`` (monotonic seconds) should end: the first multiple of ``grid`` at
    or after it if it is more than ``grid`` away from ``now``, else ``due`` itself."""
    now = time.monotonic() if now is None else now
    if due - now <= grid:
        return due
    return max(due, math.ceil(due / grid) * grid)


def timeout_on_grid(timeout: float | None, grid: float) -> float | None:
    """``on_grid`` for a time-out in seconds from now (``None``: no time-out, left as it is)."""
    if timeout is None or timeout <= grid:
        return timeout
    now = time.monotonic()
    return on_grid(now + timeout, grid, now) - now
