"""Timed waits end on the process's grid (``backend/zk/wake_grid.py``): long ones on a multiple of
the grid and never earlier than asked, short ones where asked, and nothing a socket ends is held."""

from __future__ import annotations

import math
import socket
import time

from hypothesis import given, strategies as st

from backend.zk import handler
from backend.zk.handler import PollingThreadingHandler
from backend.zk.wake_grid import SESSION_GRID_S, on_grid, timeout_on_grid


def _on_the_grid(t: float, grid: float, within: float = 1e-7) -> bool:
    return abs(t - round(t / grid) * grid) < within


@given(now=st.floats(0, 1e6), wait=st.floats(0, 10), grid=st.sampled_from([0.05, 0.2]))
def test_a_long_wait_ends_on_the_grid_within_one_step_and_a_short_one_where_asked(now, wait, grid):
    due = now + wait
    ends = on_grid(due, grid, now)
    assert ends >= due
    if wait > grid:
        assert _on_the_grid(ends, grid) and ends < due + grid + 1e-6
    else:
        assert ends == due


def test_no_time_out_stays_none_and_a_short_one_is_not_moved():
    assert timeout_on_grid(None, 0.2) is None
    assert timeout_on_grid(0.0, 0.2) == 0.0
    assert timeout_on_grid(0.15, 0.2) == 0.15


def test_a_kazoo_wait_that_times_out_ends_on_the_grid_and_an_answer_ends_it_at_once(monkeypatch):
    """The ping's wait of kazoo's connection loop (a time-out of ~1 s on its socket and wake-up
    socket) is what the grid moves; ``poll`` never returns before its time-out, so the idle wait
    ends at or after the grid point it was moved to."""
    asked, poll_select = [], handler.poll_select

    def recording(rlist, wlist, xlist, timeout=None):
        asked.append((time.monotonic(), timeout))
        return poll_select(rlist, wlist, xlist, timeout)

    a, b = socket.socketpair()
    try:
        monkeypatch.setattr(handler, "poll_select", recording)
        select = PollingThreadingHandler().select
        assert select([a], [], [], 0.5) == ([], [], [])
        ended = time.monotonic()
        started, timeout = asked[-1]
        assert timeout >= 0.5 and _on_the_grid(started + timeout, SESSION_GRID_S, within=0.002)  # `started` is a little late
        assert ended >= math.floor((started + timeout) * 1000) / 1000  # not before the grid point (poll's ms)
        assert select([a], [], [], 0.1) == ([], [], []) and asked[-1][1] == 0.1  # shorter than the grid
        b.send(b"x")
        began = time.monotonic()
        assert select([a], [], [], 30) == ([a], [], [])
        assert time.monotonic() - began < 5  # readable: no wait at all, whatever the time-out
    finally:
        a.close()
        b.close()
