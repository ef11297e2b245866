"""CPU per kind of thread of a running server process, over a window: where a class's CPU goes.

The server's worker holds thousands of threads (kazoo's connection threads, controllers, the
broadcaster, one writer per page socket), and a sampling profiler falls behind them (issue 14,
sixth round). The kernel counts every thread's CPU exactly (``/proc/<pid>/task/<tid>/schedstat``,
nanoseconds); Python 3.11 does not give the kernel its threads' names, so a ``py-spy dump`` at the
window's end names them (its ``Thread <tid> (...): "<name>"`` lines). A thread that ended inside
the window cannot be read any more: what the process spent beyond its live threads' sum (the
process's own count keeps its ended threads) goes under ``(ended in the window)``.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections import Counter

from bench.measure import cpu_seconds


def snapshot(pid: int | str = "self") -> dict[int, int]:
    """CPU nanoseconds so far of each thread of ``pid`` (default: this process)."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                out[int(tid)] = int(f.read().split()[0])
        except OSError:
            pass  # ended meanwhile
    return out


def names(py_spy: str, pid: int) -> dict[int, str]:
    """Each live thread's Python name, from ``py-spy dump`` (tried three times: a dump of
    thousands of threads taken without stopping them sometimes comes back empty)."""
    for _ in range(3):
        dump = subprocess.run([py_spy, "dump", "--pid", str(pid), "--nonblocking"], capture_output=True,
                              text=True, timeout=120).stdout
        found = {int(tid): name for tid, name in re.findall(r'^Thread (\d+) \(\w+\): "(.*)"$', dump, re.M)}
        if found:
            return found
    return {}


def account(before: dict[int, int], after: dict[int, int], named: dict[int, str], seconds: float,
            process_ns: int) -> dict[str, float]:
    """Per cent of one core per thread group over ``seconds`` (largest first); ``process_ns``, the
    process's CPU over the same window, puts what the live threads do not account for under
    ``(ended in the window)``."""
    groups: Counter = Counter()
    for tid in after:
        spent = after[tid] - before.get(tid, 0)
        name = kind(named[tid]) if tid in named else "(unnamed)"
        groups[name] += spent
    groups["(ended in the window)"] += max(0, process_ns - sum(groups.values()))
    return {name: round(100 * ns / 1e9 / seconds, 2) for name, ns in groups.most_common() if ns > 0}


def workers_snapshot(pids) -> dict[int, tuple[dict[int, int], float]]:
    """Each worker's threads' CPU and its own, at a window's start: :func:`workers_account`'s."""
    return {pid: (snapshot(pid), cpu_seconds(pid)) for pid in pids}


def workers_account(py_spy: str | None, before: dict[int, tuple[dict[int, int], float]],
                    seconds: float) -> dict[str, float]:
    """The workers' CPU over the window since ``before`` by kind of thread, summed over the
    workers (``bench/classroom.py --thread-account``)."""
    total: Counter = Counter()
    for pid, (threads, cpu) in before.items():
        try:
            after, spent = snapshot(pid), cpu_seconds(pid) - cpu
        except OSError:
            continue  # a worker that died
        total.update(account(threads, after, names(py_spy, pid), seconds, round(spent * 1e9)))
    return {name: round(pct, 2) for name, pct in total.most_common()}


def kind(name: str) -> str:
    """A thread's name without its counter or broker id (``controller-event-thread-2`` ->
    ``controller-event-thread``); an unnamed one by its target (``Thread-7 (zk_loop)`` ->
    ``(zk_loop)``: kazoo's connection threads; ``(_run)``: the broadcaster; ``(writer)``: a page
    socket's writer)."""
    unnamed = re.fullmatch(r"Thread-\d+ \((.+)\)", name)
    if unnamed:
        return f"({unnamed.group(1)})"
    return re.sub(r"[-_ ]?\d+$", "", name) or name
