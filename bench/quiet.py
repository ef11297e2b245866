"""Waiting for a quiet machine: the benches share 2 cores with whatever else runs (test suites,
Spark, other benches). ``--wait-quiet PCT`` makes a bench wait, before each run, until the whole
machine's busy share measured over a few seconds is at most PCT % of all cores (or give up
after a while and run anyway, saying so). Every run records the load it ran under either way.
"""

from __future__ import annotations

import os
import sys
import time

from bench.measure import machine_busy_seconds


def busy_pct(seconds: float = 3.0) -> float:
    """The machine's busy share of all cores over the next ``seconds``."""
    b0, t0 = machine_busy_seconds(), time.monotonic()
    time.sleep(seconds)
    return 100 * (machine_busy_seconds() - b0) / (time.monotonic() - t0) / os.cpu_count()


def wait_quiet(max_pct: float | None, timeout_s: float = 600.0) -> dict:
    """Wait until the machine is at most ``max_pct`` % busy (no wait when ``None``); returns what
    was seen: the busy share when the run starts, the wait, and whether it gave up."""
    start = time.monotonic()
    pct = busy_pct()
    while max_pct is not None and pct > max_pct and time.monotonic() - start < timeout_s:
        print(f"  waiting for a quieter machine: {pct:.0f} % busy > {max_pct:.0f} %", file=sys.stderr, flush=True)
        time.sleep(10)
        pct = busy_pct()
    return {"busy_pct_before": round(pct, 1), "waited_s": round(time.monotonic() - start, 1),
            "gave_up_waiting": max_pct is not None and pct > max_pct, "loadavg": [round(x, 2) for x in os.getloadavg()]}
