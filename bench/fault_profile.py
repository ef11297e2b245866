"""Where a fault's CPU goes, runtime alone: per thread kind and per ZooKeeper request.

``sandbox_cpu.py`` says how much a fault costs; this says where. N default sandboxes (3 brokers,
topic ``t`` of 3×3) run in this process against a ZooKeeper the bench starts; ``--rate`` faults a
second for ``--seconds``, round-robin over the sandboxes, each acting as ``classroom.py``'s students
do in ``--mix`` (``bench.socket_clients.student_fault``: issue 14's crash, produce, restart,
controlled shutdown, restart, preferred election on broker 0, 1, 2 in turn, each sandbox from its
own place of that cycle; or ``stop-start``, the default until the thirty-fourth round). A crash's
session expires after 4 s and its restart is two turns later, so in the ``issue`` mix give each
sandbox a turn every 2 s or more (``--sandboxes`` ≥ 2 × ``--rate``); a restart refused because
the session had not expired yet (counted in ``refused_by_op``, and as a fault) is made again at
the sandbox's next turn, as a student does. Reported:

* ``cpu_ms_per_fault``: the process's CPU over the window, less the idle rate measured before it;
* ``by_thread_kind``: ms per fault of each kind of thread (its target's name), from
  ``/proc/self/task/<tid>/schedstat`` at the window's ends — a thread that ends inside the window
  (a stopped broker's) counts up to its end (``Thread.run`` is wrapped to note it) — so threads
  asleep are never counted as busy, which a sampling profiler with thousands of threads does;
* ``zk_requests_per_fault``, and by request type and the function that made it
  (``KazooClient._call`` wrapped);
* ``faults_by_op`` (and ``refused_by_op``): what the window's faults were.

(It had a ``--pair-with COMMIT`` mode that gave half the sandboxes an older kazoo handler and
compared their connection threads; since ``backend/zk/session_loop.py`` the lab's sessions have
no connection thread of their own, and the mode was removed.)

A sampling profiler was not used on purpose: with 2,000+ threads py-spy fell a minute behind and
counted threads asleep in ``Condition.wait`` as busy (docs/performance.md, issue 14).

    .venv/bin/python bench/fault_profile.py --sandboxes 40 --rate 20 --seconds 60
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import random
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import server_threads  # noqa: E402
from bench.socket_clients import MIXES, first_step, student_fault, try_again  # noqa: E402

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


def _by_kind(before: dict[int, int], after: dict[int, int], ended: set[int]) -> collections.Counter:
    """CPU nanoseconds per kind of thread between two snapshots; ``ended``: threads that ended
    between them, counted up to their end."""
    by_kind: collections.Counter = collections.Counter()
    for tid in set(after) | ended:
        end = after[tid] if tid in after else _ENDED[tid]
        by_kind[_KIND.get(tid, "main and other threads")] += end - before.get(tid, 0)
    return by_kind


_CALLER_NAMES: dict = {}
"""Each calling code object's ``module.function``, made once: a ``Path`` per request was a tenth
of the controllers' profiled time (measured after: their 7.8 → 7.5 ms a fault, thirty-second round)."""


def _caller_outside_kazoo() -> str:
    """``module.function`` of the nearest frame outside kazoo that made a ZooKeeper call. A walk
    up the frames, not ``traceback.extract_stack``: that reads each frame's source line (an
    ``os.stat`` per frame), and its cost landed on the calling thread — a controller's own
    figure was inflated by the bench's counting."""
    frame = sys._getframe(2)
    while frame is not None and "/kazoo/" in frame.f_code.co_filename:
        frame = frame.f_back
    if frame is None:
        return "?"
    code = frame.f_code
    name = _CALLER_NAMES.get(code)
    if name is None:
        name = _CALLER_NAMES[code] = f"{Path(code.co_filename).stem}.{code.co_name}"
    return name


def measure(hosts: str, sandboxes: int, rate: float, seconds: float, idle_seconds: float = 5.0,
            mix: str = "issue") -> dict:
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
            requests[f"{type(request).__name__} {_caller_outside_kazoo()}"] += 1
        return original_call(client, request, async_object)

    KazooClient._call = counted_call
    threading.Thread.run = _run_noting_the_end
    clusters = []
    try:
        for i in range(sandboxes):
            cluster = Cluster(hosts, f"/kclab-bench-profile/{os.getpid()}-{i}",
                              ClusterSpec((0, 1, 2), {"t": TopicSpec(3, 3, None, {})}, {}), f"p-{i}", RecordBus(f"p-{i}"))
            cluster.start()
            clusters.append(cluster)
        time.sleep(3)  # the last start's watches and first fetches settle
        idle_before, c0, t0 = server_threads.snapshot(), _cpu_s(), time.monotonic()
        time.sleep(idle_seconds)
        idle_rate = (_cpu_s() - c0) / (time.monotonic() - t0)
        idle_by_kind = _by_kind(idle_before, server_threads.snapshot(), set())
        before, _ENDED_AT_START = server_threads.snapshot(), set(_ENDED)
        counting.set()
        faults, c0, t0 = 0, _cpu_s(), time.monotonic()
        steps = [first_step(mix, random.Random(i)) for i in range(sandboxes)]
        by_op: collections.Counter = collections.Counter()
        refused: collections.Counter = collections.Counter()
        while time.monotonic() < t0 + seconds:
            # Each sandbox's own turn, as a classroom student's (until issue 14's thirtieth round
            # the turns went stop 0, stop 1, stop 2, start 0, …: a third of the time a cluster with
            # no broker left).
            sandbox = faults % sandboxes
            body = student_fault(mix, steps[sandbox])
            result = apply_fault(clusters[sandbox], body["op"], body)
            by_op[body["op"]] += 1
            if not result.ok:
                refused[body["op"]] += 1
            if not try_again({"ok": result.ok, "error": result.message}):
                steps[sandbox] += 1
            faults += 1
            time.sleep(max(0.0, t0 + faults / rate - time.monotonic()))
        counting.clear()
        after, window = server_threads.snapshot(), time.monotonic() - t0
        spent = _cpu_s() - c0 - idle_rate * window
        by_kind = _by_kind(before, after, set(_ENDED) - _ENDED_AT_START)
        return {
            "mix": mix, "sandboxes": sandboxes, "faults": faults, "cpu_ms_per_fault": round(1000 * spent / faults, 1),
            "faults_by_op": dict(by_op), "refused_by_op": dict(refused),
            "idle_cpu_pct_of_core_per_sandbox": round(100 * idle_rate / sandboxes, 3),
            "idle_by_thread_kind_pct_of_core_per_sandbox": {
                k: round(100 * v / 1e9 / idle_seconds / sandboxes, 4) for k, v in idle_by_kind.most_common()},
            "by_thread_kind_ms_per_fault": {k: round(v / 1e6 / faults, 2) for k, v in by_kind.most_common()},
            "zk_requests_per_fault": round(sum(requests.values()) / faults, 1),
            "zk_requests_by_kind_per_fault": {k: round(v / faults, 2) for k, v in requests.most_common(25)},
        }
    finally:
        threading.Thread.run = _original_run
        KazooClient._call = original_call
        for cluster in clusters:
            cluster.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sandboxes", type=int, default=10)
    parser.add_argument("--rate", type=float, default=10.0, help="faults a second")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--idle-seconds", type=float, default=5.0, help="the idle window before the faults")
    parser.add_argument("--mix", choices=MIXES, default="issue", help="what each sandbox's turns are")
    parser.add_argument("--zk", help="an existing ZooKeeper (default: one started for the bench)")
    args = parser.parse_args()
    run = lambda hosts: measure(hosts, args.sandboxes, args.rate, args.seconds, args.idle_seconds,  # noqa: E731
                                args.mix)
    if args.zk:
        print(json.dumps(run(args.zk), indent=1))
        return
    from backend.zkserver.server import ZooKeeperServer

    with ZooKeeperServer() as zk:
        print(json.dumps(run(zk.hosts), indent=1))


if __name__ == "__main__":
    main()
