"""A process and its descendants, as a bench sees them: peak memory (PSS) and CPU time.

Sampled from ``/proc`` in a thread every ``interval`` seconds. Proportional set size, because a
JVM forks helpers (Hadoop's local file system runs shell commands) that briefly share all its
pages: plain RSS would count the JVM several times over.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from bench import measure


class Sampler:
    """Peak of the summed memory (PSS) of a process and its descendants, and their CPU time,
    sampled in a thread every ``interval`` seconds."""

    def __init__(self, pid: int, interval: float = 0.2) -> None:
        self.pid, self.interval, self.peak = pid, interval, 0
        self._cpu: dict[int, float] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> tuple[int, float]:
        """(peak bytes, CPU seconds)."""
        self._stop.set()
        self._thread.join()
        return self.peak, sum(self._cpu.values())

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            tree = _tree(self.pid)
            self.peak = max(self.peak, sum(_rss(p) for p in tree))
            for pid in tree:
                self._cpu[pid] = max(self._cpu.get(pid, 0.0), cpu_seconds(pid))


def cpu_seconds(pid: int) -> float:
    """utime + stime of one process so far; 0 for one that has gone."""
    try:
        return measure.cpu_seconds(pid)
    except (OSError, IndexError):
        return 0.0


def tree_cpu_seconds(root: int | None = None) -> float:
    """CPU seconds so far of a process (default: this one) and its live descendants (a warm
    SparkSession's JVM and Python workers), as ``Sampler`` counts them."""
    return sum(cpu_seconds(pid) for pid in _tree(os.getpid() if root is None else root))


def tree_rss_mb(root: int) -> float:
    """Resident memory (VmRSS, not PSS) of a process and its live descendants, in MB: what a served
    app (gunicorn's master and workers, a child redis-server) holds, for its growth per sandbox."""
    total = 0
    for pid in _tree(root):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue  # gone meanwhile
        total += next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS")), 0)
    return total / 1024


def _tree(root: int) -> list[int]:
    """The process and its descendants, less a JVM's transient helpers: to run ``chmod`` (Hadoop's
    local file system does, for every file it writes) the JVM spawns a child that shares its
    memory until it execs, and counting it would count the JVM twice. Only a JVM's: PySpark's
    daemon forks its Python workers, which run the executors' Python (the rules' fold) under
    the daemon's own executable, and must count (until issue 16f they were left out)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        parent_exe = _exe(pid)
        jvm = os.path.basename(parent_exe) == "java"
        todo.extend(c for c in children.get(pid, []) if not (jvm and _exe(c) == parent_exe))
    return out


def _exe(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return ""


def _rss(pid: int) -> int:
    """Proportional set size: pages shared between processes are split among them. Plain RSS
    would count the JVM several times over whenever it forks a helper (Hadoop's local file
    system runs shell commands), which briefly shares all its pages."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0
