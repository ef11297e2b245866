"""CPU time per thread (and of the ZooKeeper JVM) over an interval, from ``/proc``.

The controller shares one Python process (and its GIL) with every simulated broker's kazoo
threads and request handlers. A per-thread CPU account over the measured interval shows who
else was running while the controller worked; ``cProfile`` sees only the controller thread.
"""

from __future__ import annotations

import gc
import os
import threading
import time
from collections import defaultdict
from typing import Callable, TypeVar

from bench.measure import machine_busy_seconds, stat_cpu_seconds
from bench.server_threads import kind

T = TypeVar("T")


def snapshot(jvm_pid: int | None = None) -> dict[str, float]:
    """CPU seconds used so far, by thread group, plus ``zookeeper-jvm`` and ``process``."""
    names = {t.native_id: t.name for t in threading.enumerate()}
    out: dict[str, float] = defaultdict(float)
    for tid in os.listdir("/proc/self/task"):
        try:
            seconds = stat_cpu_seconds(f"/proc/self/task/{tid}/stat")
        except OSError:
            continue
        out[kind(names.get(int(tid), "other"))] += seconds
    out["process (all Python threads)"] = stat_cpu_seconds("/proc/self/stat")
    ours = out["process (all Python threads)"]
    if jvm_pid is not None:
        try:
            out["zookeeper-jvm"] = stat_cpu_seconds(f"/proc/{jvm_pid}/stat")
            ours += out["zookeeper-jvm"]
        except OSError:
            pass
    out["other processes (machine busy time minus ours)"] = machine_busy_seconds() - ours
    return dict(out)


def diff(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """CPU seconds per group between two snapshots (groups that used less than 10 ms left out).
    A thread that ended meanwhile is missing from ``after``; its time shows only in ``process``."""
    out = {k: round(after.get(k, 0.0) - before.get(k, 0.0), 2) for k in after}
    return {k: v for k, v in sorted(out.items(), key=lambda kv: -kv[1]) if v >= 0.01}


class FullCollections:
    """Python's full (generation-2) garbage collections while the block runs: how many, and
    for how long they held the GIL. With the simulated brokers' state of 10,000 partitions the
    heap holds about half a million tracked objects, and one full collection stops every thread
    of the process for 0.13–0.25 s — longer than the controller's whole election. Whether one
    falls inside a measured event depends on what the process allocated before it, so the
    benches collect first and report any that still happen."""

    def __init__(self) -> None:
        self.count = 0
        self.seconds = 0.0
        self._started: float | None = None

    def __enter__(self) -> "FullCollections":
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc) -> None:
        gc.callbacks.remove(self._callback)

    def _callback(self, phase: str, info: dict) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._started = time.perf_counter()
        elif self._started is not None:
            self.count += 1
            self.seconds += time.perf_counter() - self._started
            self._started = None

    def summary(self) -> dict:
        return {"count": self.count, "seconds": round(self.seconds, 3)}


def without_collections(measure: Callable[[], T]) -> T:
    """``measure()`` with the cyclic garbage collector off, after a full collection. A floor is
    what kazoo and ZooKeeper can do at best; the bench measures it in the process that hosts the
    cluster, whose garbage (a frozen heap makes full collections frequent, and each visits
    everything the measured event allocated) would otherwise land in it at random."""
    gc.collect()
    gc.disable()
    try:
        return measure()
    finally:
        gc.enable()
