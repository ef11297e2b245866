"""What the benches measure around a server: CPU seconds of a process and its children (from
``/proc``), the machine's busy time, latency percentiles, the server's garbage collections, and a
description of the machine."""

from __future__ import annotations

import json
import math
import os
import platform
import socket
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

_TICK = os.sysconf("SC_CLK_TCK")
_REPOSITORY = Path(__file__).resolve().parent.parent


def archived(commit: str, directory: Path) -> Path:
    """``commit``'s tree unpacked into ``directory`` (``git archive``: no worktree is added to the
    repository), the "before" a bench runs beside this checkout."""
    directory.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(["git", "archive", commit], cwd=_REPOSITORY, capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(directory)], input=archive.stdout, check=True)
    return directory


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def percentile(sorted_values: list[float], p: float) -> float | None:
    """Nearest-rank percentile of an ascending list (``None`` when empty)."""
    if not sorted_values:
        return None
    k = max(0, min(len(sorted_values) - 1, math.ceil(p / 100 * len(sorted_values)) - 1))
    return sorted_values[k]


def latency_stats(values: list[float]) -> dict[str, Any]:
    values = sorted(values)
    if not values:
        return {"n": 0}
    return {"n": len(values), "p50_ms": round(percentile(values, 50), 1), "p95_ms": round(percentile(values, 95), 1),
            "p99_ms": round(percentile(values, 99), 1), "max_ms": round(values[-1], 1),
            "mean_ms": round(statistics.fmean(values), 1)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stat_cpu_seconds(stat_path: str) -> float:
    """utime + stime so far from a ``/proc`` stat file: a process's, or one thread's
    (``/proc/<pid>/task/<tid>/stat``)."""
    with open(stat_path) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def cpu_seconds(pid: int) -> float:
    return stat_cpu_seconds(f"/proc/{pid}/stat")


def children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        if ppid == pid:
            out.append(int(entry))
    return out


def _machine_ticks() -> list[int]:
    """``/proc/stat``'s first line: the whole machine's CPU time since boot, all cores, by state
    (user, nice, system, idle, iowait, irq, softirq, steal, ...), in clock ticks."""
    with open("/proc/stat") as f:
        return [int(v) for v in f.readline().split()[1:]]


def machine_busy_seconds() -> float:
    """Non-idle CPU seconds of the whole machine (all cores) since boot: everything but idle and
    iowait, a VM's stolen time included (the cores were not ours to use)."""
    values = _machine_ticks()
    return (sum(values[:8]) - values[3] - values[4]) / _TICK


def machine_stolen_seconds() -> float:
    """CPU seconds of the whole machine since boot that a VM's host gave other guests while this
    one wanted to run (``steal``): a cause of slow runs that no change to the code explains."""
    return _machine_ticks()[7] / _TICK


def cpu_fields(window, cpu0, cpu1, clients0, clients1, zk0, zk1, busy0, busy1, zk_pid) -> dict:
    """Where the window's CPU went: the server's processes, the clients, ZooKeeper, the machine
    and everything else on it (what explains a bad tail on a shared machine)."""
    return {
        "server_cpu_pct_of_one_core": {k: round(100 * (cpu1[k] - cpu0[k]) / window, 1) for k in cpu1},
        "clients_cpu_pct_of_one_core": round(100 * (clients1 - clients0) / window, 1),
        "zookeeper_cpu_pct_of_one_core": round(100 * (zk1 - zk0) / window, 1),
        "machine_busy_pct_of_all_cores": round(100 * (busy1 - busy0) / window / os.cpu_count(), 1),
        "other_processes_pct_of_all_cores": others_pct(busy1 - busy0, sum(cpu1.values()) - sum(cpu0.values()),
                                                       clients1 - clients0, zk_pid, zk1 - zk0, window),
    }


def others_pct(busy: float, server: float, clients: float, zk_pid: int | None, zk_s: float, window: float) -> float:
    """Other processes' CPU over the window, in % of all cores: the machine's busy time minus
    the server's, the clients' and our ZooKeeper's."""
    return round(100 * (busy - server - clients - zk_s) / window / os.cpu_count(), 1)


def zk_cpu(zk_pid: int | None) -> float:
    try:
        return cpu_seconds(zk_pid) if zk_pid else 0.0
    except OSError:
        return 0.0


def gc_pauses(files: list[Path], start: float, end: float) -> list[dict]:
    """The server's collections (``backend/runtime/heap.log_pauses``' lines from every worker's
    file) that began between ``start`` and ``end`` (wall clock, s)."""
    pauses = []
    for path in files:
        for line in path.read_text().splitlines():
            pause = json.loads(line)
            if start <= pause["at"] <= end:
                pauses.append(pause)
    return sorted(pauses, key=lambda pause: pause["at"])


def gc_pause_stats(pauses: list[dict], window: float) -> dict[str, Any]:
    """Per generation: how many collections, the longest, and their sum as a share of the window
    (a worker's threads all wait while one runs); and the most CPU one took (``max_cpu_ms``: the
    collector's own work, where the length may include time the host stole), when the tree's log
    has it (since the thirty-eighth round)."""
    out: dict[str, Any] = {}
    for generation in (0, 1, 2):
        chosen = [pause for pause in pauses if pause["gen"] == generation]
        lengths = [pause["ms"] for pause in chosen]
        out[f"gen{generation}"] = {"n": len(lengths), "max_ms": round(max(lengths, default=0.0), 1),
                                   "pct_of_window": round(sum(lengths) / 10 / window, 2)}
        if all("cpu_ms" in pause for pause in chosen):
            out[f"gen{generation}"]["max_cpu_ms"] = round(max((p["cpu_ms"] for p in chosen), default=0.0), 1)
    return out


def during_a_pause(waits: list[tuple[float, float]], pauses: list[dict], at_least_ms: float) -> int:
    """How many of the ``(start, end)`` waits (wall clock, s) overlap a collection of at least
    ``at_least_ms``."""
    long = [(p["at"], p["at"] + p["ms"] / 1000) for p in pauses if p["ms"] >= at_least_ms]
    return sum(1 for start, end in waits if any(b >= start and a <= end for a, b in long))


def by_minute(faults: list[dict], demo_at: list[tuple[float, float]], stolen: list[tuple[float, float]],
              pauses: list[dict], start_ms: float, rss: list[tuple[float, float]] = (),
              load: list[dict] = ()) -> list[dict]:
    """A long window minute by minute: whether the tails hold all through a class or one bad
    stretch makes them, beside the time the machine's host took in that minute (it moves from
    minute to minute on a VM), the longest collection, the server's memory at the minute's end
    (``rss``: (wall ms, MB) samples) — levelling off, or growing for as long as the class goes on —
    and how late the worker's ZooKeeper session loop ran (``load``: ``/healthz`` samples with their
    ``at_ms``). By when a fault or demo fault was sent."""
    def minute(ms: float) -> int:
        return int((ms - start_ms) // 60000)
    slices: dict[int, dict[str, list]] = {}

    def at(ms: float) -> dict[str, list]:
        return slices.setdefault(minute(ms), {"page": [], "demo": [], "answer": []})
    for f in faults:
        if f["latency_ms"] is not None:
            at(f["sent_ms"])["page"].append(f["latency_ms"])
        if f["ok"] and f.get("answer_ms") is not None:
            at(f["sent_ms"])["answer"].append(f["answer_ms"])
    for sent, latency in demo_at:
        at(sent)["demo"].append(latency)
    rows = []
    for m in sorted(slices):
        lo, hi = start_ms + m * 60000, start_ms + (m + 1) * 60000
        inside = [(t, s) for t, s in stolen if lo <= t < hi]
        here = [p for p in pauses if lo <= p["at"] * 1000 < hi]
        rows.append({"minute": m, "faults": len(slices[m]["page"]),
                     "fault_to_page_p99_ms": latency_stats(slices[m]["page"]).get("p99_ms"),
                     "answered_p50_ms": latency_stats(slices[m]["answer"]).get("p50_ms"),
                     "demo_p99_ms": latency_stats(slices[m]["demo"]).get("p99_ms"),
                     "stolen_pct_of_all_cores": round(100 * (inside[-1][1] - inside[0][1])
                                                      / ((inside[-1][0] - inside[0][0]) / 1000) / os.cpu_count(), 1)
                     if len(inside) > 1 and inside[-1][0] > inside[0][0] else None,
                     "longest_gc_pause_ms": round(max((p["ms"] for p in here), default=0.0)),
                     "full_collections": sum(1 for p in here if p["gen"] == 2),
                     "server_rss_mb": next((round(mb) for t, mb in reversed(rss) if t < hi), None),
                     "zk_lag_p50_ms": latency_stats([s["zk_lag_ms"] for s in load
                                                     if lo <= s["at_ms"] < hi and "zk_lag_ms" in s]).get("p50_ms")})
    return rows


def machine() -> dict[str, Any]:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "?")
    mem_kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                  if line.startswith("MemTotal"))
    from importlib.metadata import version
    debian = Path("/etc/debian_version").read_text().strip() if Path("/etc/debian_version").exists() else "?"
    return {"nproc": os.cpu_count(), "cpu": cpu, "ram_gb": round(mem_kb / 1024 / 1024, 1), "debian": debian,
            "python": platform.python_version(), "flask-socketio": version("flask-socketio"),
            "python-socketio": version("python-socketio"), "gunicorn": version("gunicorn")}
