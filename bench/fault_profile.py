"""Where a fault's CPU goes, runtime alone: per thread kind and per ZooKeeper request.

``sandbox_cpu.py`` says how much a fault costs; this says where. N default sandboxes (3 brokers,
topic ``t`` of 3×3) run in this process against a ZooKeeper the bench starts; a broker of one of
them is stopped or started (``stop_broker`` / ``start_broker`` in turn, round-robin over the
sandboxes and brokers, as ``classroom.py``'s students do) ``--rate`` times a second for
``--seconds``. Reported:

* ``cpu_ms_per_fault``: the process's CPU over the window, less the idle rate measured before it;
* ``by_thread_kind``: ms per fault of each kind of thread (its target's name), from
  ``/proc/self/task/<tid>/schedstat`` at the window's ends — a thread that ends inside the window
  (a stopped broker's) counts up to its end (``Thread.run`` is wrapped to note it) — so threads
  asleep are never counted as busy, which a sampling profiler with thousands of threads does;
* ``zk_requests_per_fault``, and by request type and the function that made it
  (``KazooClient._call`` wrapped).

``--pair-with COMMIT`` gives half the sandboxes (``--paired-on`` odd or even) that commit's kazoo
handler (``backend/zk/handler.py``, loaded beside this tree's as ``zk_round_trip.py`` does) and
reports each handler's connection threads' CPU per fault of its own sandboxes: both handlers
under the same load at the same moments, where two runs one after the other on a shared machine
differ by more than a handler does.

A sampling profiler was not used on purpose: with 2,000+ threads py-spy fell a minute behind and
counted threads asleep in ``Condition.wait`` as busy (docs/performance.md, issue 14).

    .venv/bin/python bench/fault_profile.py --sandboxes 10 --rate 10 --seconds 30
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import server_threads  # noqa: E402

_KIND: dict[int, str] = {}
_ENDED: dict[int, int] = {}
_original_run = threading.Thread.run


def _run_noting_the_end(self) -> None:
    target = getattr(self, "_target", None)
    kind = (f"{target.__module__}.{target.__qualname__}" if target is not None and hasattr(target, "__qualname__")
            else f"{type(self).__module__}.{type(self).__qualname__}")
    _KIND[threading.get_native_id()] = kind
    try:
        _original_run(self)
    finally:
        _ENDED[threading.get_native_id()] = time.thread_time_ns()


def _cpu_s() -> float:
    t = os.times()
    return t.user + t.system


class _PairedHandlers:
    """Every sandbox's kazoo clients (brokers' sessions, the observer's) get the handler of
    :attr:`variant` — set before a sandbox is made or faulted, which makes its sessions there and
    then — and each connection thread is noted with the handler that started it."""

    def __init__(self, commit: str, into: Path) -> None:
        from zk_round_trip import handler_of

        from backend.zk import handler, operator, session
        self.modules = {"head": handler, "paired": handler_of(commit, into)}
        self.variant = "head"
        self.threads: dict[int, str] = {}
        self._patched = (session, operator)
        for module in self._patched:
            module.PollingThreadingHandler = self.make

    def make(self):
        variant, threads = self.variant, self.threads

        class Noting(self.modules[variant].PollingThreadingHandler):
            def spawn(self, func, *args, **kwargs):
                thread = super().spawn(func, *args, **kwargs)
                if getattr(func, "__name__", "") == "zk_loop":
                    threads[thread.native_id] = variant
                return thread
        return Noting()

    def restore(self) -> None:
        for module in self._patched:
            module.PollingThreadingHandler = self.modules["head"].PollingThreadingHandler


def measure(hosts: str, sandboxes: int, rate: float, seconds: float, pair_with: str | None = None,
            paired_on: int = 1) -> dict:
    from kazoo.client import KazooClient

    from backend.faultscript.cluster_spec import ClusterSpec, TopicSpec
    from backend.runtime.cluster import Cluster
    from backend.runtime.faults import apply_fault
    from backend.runtime.record_bus import RecordBus

    requests: collections.Counter = collections.Counter()
    counting = threading.Event()
    original_call = KazooClient._call

    def counted_call(client, request, async_object):
        if counting.is_set():
            caller = next((f"{Path(f.filename).stem}.{f.name}" for f in reversed(traceback.extract_stack(limit=8)[:-1])
                           if "/kazoo/" not in f.filename), "?")
            requests[f"{type(request).__name__} {caller}"] += 1
        return original_call(client, request, async_object)

    KazooClient._call = counted_call
    threading.Thread.run = _run_noting_the_end
    clusters = []
    old_tree = tempfile.TemporaryDirectory()
    pairs = _PairedHandlers(pair_with, Path(old_tree.name)) if pair_with else None
    variant_of = lambda sandbox: "paired" if sandbox % 2 == paired_on else "head"  # noqa: E731
    faults_of = collections.Counter()
    try:
        for i in range(sandboxes):
            if pairs:
                pairs.variant = variant_of(i)
            cluster = Cluster(hosts, f"/kclab-bench-profile/{os.getpid()}-{i}",
                              ClusterSpec((0, 1, 2), {"t": TopicSpec(3, 3, None, {})}, {}), f"p-{i}", RecordBus(f"p-{i}"))
            cluster.start()
            clusters.append(cluster)
        time.sleep(3)  # the last start's watches and first fetches settle
        c0, t0 = _cpu_s(), time.monotonic()
        time.sleep(5)
        idle_rate = (_cpu_s() - c0) / (time.monotonic() - t0)
        running: dict[tuple[int, int], bool] = {}
        before, _ENDED_AT_START = server_threads.snapshot(), set(_ENDED)
        counting.set()
        faults, c0, t0 = 0, _cpu_s(), time.monotonic()
        while time.monotonic() < t0 + seconds:
            sandbox, broker = faults % sandboxes, (faults // sandboxes) % 3
            up = running.get((sandbox, broker), True)
            if pairs:
                pairs.variant = variant_of(sandbox)
            faults_of[variant_of(sandbox)] += 1
            apply_fault(clusters[sandbox], "stop_broker" if up else "start_broker", {"broker": broker})
            running[(sandbox, broker)] = not up
            faults += 1
            time.sleep(max(0.0, t0 + faults / rate - time.monotonic()))
        counting.clear()
        after, window = server_threads.snapshot(), time.monotonic() - t0
        spent = _cpu_s() - c0 - idle_rate * window
        by_kind: collections.Counter = collections.Counter()
        by_handler: collections.Counter = collections.Counter()
        for tid in set(after) | (set(_ENDED) - _ENDED_AT_START):
            end = after[tid] if tid in after else _ENDED[tid]
            by_kind[_KIND.get(tid, "main and other threads")] += end - before.get(tid, 0)
            if pairs and tid in pairs.threads:
                by_handler[pairs.threads[tid]] += end - before.get(tid, 0)
        paired = {} if not pairs else {"paired_handlers": {
            "commit": pair_with, "paired_on": "odd" if paired_on else "even",
            **{f"{v}_conn_ms_per_fault": round(by_handler[v] / 1e6 / faults_of[v], 2) for v in ("head", "paired")},
            "head/paired": round((by_handler["head"] / faults_of["head"]) / (by_handler["paired"] / faults_of["paired"]), 3),
        }}
        return {**paired,
            "sandboxes": sandboxes, "faults": faults, "cpu_ms_per_fault": round(1000 * spent / faults, 1),
            "idle_cpu_pct_of_core_per_sandbox": round(100 * idle_rate / sandboxes, 3),
            "by_thread_kind_ms_per_fault": {k: round(v / 1e6 / faults, 2) for k, v in by_kind.most_common()},
            "zk_requests_per_fault": round(sum(requests.values()) / faults, 1),
            "zk_requests_by_kind_per_fault": {k: round(v / faults, 2) for k, v in requests.most_common(25)},
        }
    finally:
        threading.Thread.run = _original_run
        KazooClient._call = original_call
        if pairs:
            pairs.restore()
        old_tree.cleanup()
        for cluster in clusters:
            cluster.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sandboxes", type=int, default=10)
    parser.add_argument("--rate", type=float, default=10.0, help="faults a second")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--zk", help="an existing ZooKeeper (default: one started for the bench)")
    parser.add_argument("--pair-with", metavar="COMMIT", help="half the sandboxes get this commit's kazoo handler")
    parser.add_argument("--paired-on", choices=("odd", "even"), default="odd", help="which half (default: odd)")
    args = parser.parse_args()
    run = lambda hosts: measure(hosts, args.sandboxes, args.rate, args.seconds,  # noqa: E731
                                args.pair_with, 1 if args.paired_on == "odd" else 0)
    if args.zk:
        print(json.dumps(run(args.zk), indent=1))
        return
    from backend.zkserver.server import ZooKeeperServer

    with ZooKeeperServer() as zk:
        print(json.dumps(run(zk.hosts), indent=1))


if __name__ == "__main__":
    main()
