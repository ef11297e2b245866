"""What one default sandbox costs the process that hosts it: CPU while idle, CPU per fault.

``bench/classroom.py`` measures the same two numbers through the whole web server (HTTP,
Socket.IO, the broadcaster); this bench isolates the runtime under them, so a change to the
brokers' threads can be compared with the code before it, side by side, in a few minutes.

Each variant runs in its own child process against one ZooKeeper the bench starts: N default
sandboxes (3 brokers, topic ``t`` of 3 partitions, RF 3, the lab's defaults, as
``POST /api/sandboxes`` makes them) are started and left alone for ``--idle-seconds``; then a broker
of the first sandbox is crashed and started again in turn ``--faults`` times (a crash and a start
are one fault each, as in ``classroom.py``), twice (see below). Reported per variant:

* ``idle_cpu_pct_of_core_per_sandbox``: the process's CPU over the idle window / N;
* ``cpu_ms_per_fault``: the process's CPU over the faults, minus what the measuring thread used
  (it polls ``wait_stable``) and minus the idle rate over the same time, / faults — brokers 1 and
  2 in turn (followers: no controller moves, the first round's measure);
* ``cpu_ms_per_fault_all_brokers``: the same with brokers 0, 1, 2 in turn, as ``classroom.py``'s
  students do: a third of the crashes hit the controller, so a failover follows;
* ``record_path_ms_per_fault``: what the web server does with those faults' records after the
  runtime emitted them, timed on this thread over the collected records (median of 5): each record
  turned into a dict (once for the replay log and the page batch since issue 14's twenty-seventh
  round; a tree before it makes the log's own again, counted in ``replay_log``), folded into the
  page's view with the rules
  (``backend.view.page``), written to a replay log (a line and a flush each), and encoded as the
  broadcaster's Socket.IO ``records`` messages (records grouped by 1/15 s of ``ts_ms``, as it
  batches them) with the app's packet class (``web.sockets.JsonPacket``; until issue 14's
  thirty-third round the bench used python-socketio's stock one, which walks every value for
  ``bytes`` first, and reported ~4× the app's encoding) — with ``records_per_fault``;
* ``threads_per_sandbox`` once all are up, and the load average at the variant's start.

A variant is a source tree: ``head`` is this checkout; ``--before COMMIT`` adds ``git archive`` of
that commit (exported to a temporary directory and run with this checkout's venv). ``--gevent DIR``
adds ``head+gevent``: this checkout with ``gevent.monkey.patch_all()`` first, gevent taken from
``DIR`` (``pip install --target DIR gevent``; it is no dependency of the app), so every thread of
the runtime is a greenlet on one OS thread (docs/performance.md, issue 14's thirteenth round).
There ``time.thread_time()`` is the whole process's, so with ``--gevent`` no variant subtracts
the measuring thread's CPU from a fault's (its polling of ``wait_stable`` then counts in every
variant alike). Variants alternate run by run (``--runs``); the medians are printed last.

    .venv/bin/python bench/sandbox_cpu.py --before 5142e46 --sandboxes 10 --runs 3 --json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _cpu_s() -> float:
    """This process's CPU seconds so far (``threads.py`` beside this file: it imports no backend,
    so the child's ``backend`` stays the variant's)."""
    from threads import stat_cpu_seconds
    return stat_cpu_seconds("/proc/self/stat")


def measure(zk_hosts: str, sandboxes: int, idle_s: float, faults: int) -> dict:
    """One variant's run, in the child process whose ``sys.path`` starts at its source tree."""
    from backend.faultscript.cluster_spec import ClusterSpec, TopicSpec
    from backend.runtime.cluster import Cluster
    from backend.runtime.record_bus import RecordBus

    clusters = []
    tag = f"{os.getpid()}-{int(time.time())}"
    try:
        for i in range(sandboxes):
            cluster = Cluster(zk_hosts, f"/kclab-bench-cpu/{tag}-{i}", ClusterSpec((0, 1, 2), {"t": TopicSpec(3, 3, None, {})}, {}),
                              f"bench-{i}", RecordBus(f"bench-{i}"))
            clusters.append(cluster)
            cluster.start()
        time.sleep(3)  # the last start's watches and first fetches settle
        threads = threading.active_count() - 1
        cpu0, t0 = _cpu_s(), time.monotonic()
        time.sleep(idle_s)
        idle_rate = (_cpu_s() - cpu0) / (time.monotonic() - t0)  # CPU s per s, all sandboxes
        first = clusters[0]
        emitted: list[list] = []
        first.bus.subscribe(emitted.append)
        followers = _cpu_ms_per_fault(first, faults, lambda k: 1 + (k // 2) % 2, idle_rate)
        all_brokers = _cpu_ms_per_fault(first, faults, lambda k: (k // 2) % 3, idle_rate)
        return {"idle_cpu_pct_of_core_per_sandbox": round(100 * idle_rate / sandboxes, 3),
                "cpu_ms_per_fault": followers, "cpu_ms_per_fault_all_brokers": all_brokers,
                **record_path(emitted, first.header("sandbox", "bench"), 2 * faults),
                "threads_per_sandbox": round(threads / sandboxes, 1)}
    finally:
        for cluster in clusters:
            cluster.close()


def _own_cpu_s() -> float:
    """The measuring thread's CPU, subtracted from the faults' (0 with ``--gevent``: see above)."""
    return 0.0 if os.environ.get("KCLAB_BENCH_KEEP_OWN_CPU") else time.thread_time()


def _cpu_ms_per_fault(cluster, faults: int, broker_of, idle_rate: float) -> float:
    """Crash and start ``broker_of(k)`` in turn (a crash and a start are a fault each), each waited
    out; the process's CPU above the idle rate, without the measuring thread's, per fault. A crash
    (kill -9) leaves its session for ZooKeeper to expire, and the broker cannot start again before
    that (``NodeExistsException``, as Kafka's): a crash is waited out until the expiry is seen, so
    it includes the controller's handling of the broker's failure."""
    cpu0, own0, t0 = _cpu_s(), _own_cpu_s(), time.monotonic()
    for k in range(faults):
        broker = cluster.brokers[broker_of(k)]
        if k % 2:
            broker.start()
        else:
            after = cluster.bus.next_seq
            cluster.crash_broker(broker.id)
            if not cluster.bus.wait_for(lambda r: r.to_state == "session_expired" and r.broker_id == broker.id,
                                        after, 30):
                raise RuntimeError("the crashed broker's session did not expire")
        if not cluster.wait_stable(30):
            raise RuntimeError("the sandbox did not settle after a fault")
    spent = _cpu_s() - cpu0 - (_own_cpu_s() - own0) - idle_rate * (time.monotonic() - t0)
    return round(1000 * spent / max(1, faults), 1)


def record_path(emitted: list[list], header, faults: int) -> dict:
    """The web server's work on the records ``faults`` faults emitted (``emitted``: the record
    bus's calls), step by step as ``web/sandboxes.py`` and ``web/broadcast.py`` do it, in ms per
    fault (median of 5 passes, this thread's CPU)."""
    from socketio.packet import EVENT, Packet

    try:  # the packet class the app's Socket.IO server encodes with (issue 14, eighth round)
        from web.sockets import JsonPacket as Packet  # noqa: F811
    except ImportError:  # a tree from before it: the stock packet, as that app sent
        pass

    from backend.runtime.replay import ReplayWriter
    from backend.view import page

    records = [r for call in emitted for r in call]
    dicts = [r.to_dict() for r in records]
    batches: dict[int, list] = {}
    for d in dicts:  # the broadcaster's rounds: 15 a second
        batches.setdefault(d["ts_ms"] * 15 // 1000, []).append(d)

    shared = hasattr(ReplayWriter, "write_dicts")  # the log takes the page's dicts (twenty-seventh round)

    def to_dicts():
        [r.to_dict() for r in records]

    def fold():
        view = page.empty_view()
        for d in dicts:
            page.apply(view, d)

    def replay():
        with tempfile.TemporaryDirectory() as tmp:
            writer = ReplayWriter(tmp, header)
            at = 0
            for call in emitted:
                if shared:
                    writer.write_dicts(dicts[at:at + len(call)])
                    at += len(call)
                else:
                    writer(call)
            writer.close()

    def encode():
        for batch in batches.values():
            Packet(EVENT, data=["records", {"sandbox": "s", "records": batch, "head": batch[-1]["seq"]}]).encode()

    def ms(step) -> float:
        times = []
        for _ in range(5):
            t0 = time.thread_time()
            step()
            times.append(time.thread_time() - t0)
        return round(1000 * statistics.median(times) / max(1, faults), 2)

    parts = {"to_dict": ms(to_dicts), "fold": ms(fold), "replay_log": ms(replay), "socketio_encode": ms(encode)}
    return {"record_path_ms_per_fault": round(sum(parts.values()), 2), "record_path_parts": parts,
            "records_per_fault": round(len(records) / max(1, faults), 1)}


def _child(args) -> None:
    if args.gevent:
        sys.path.insert(0, args.gevent)
        from gevent import monkey
        monkey.patch_all()
    print(json.dumps(measure(args.zk, args.sandboxes, args.idle_seconds, args.faults)))


def _run_variant(source: Path, args, zk_hosts: str, gevent: str | None = None) -> dict:
    load = [round(x, 2) for x in os.getloadavg()]
    env = {**os.environ, "PYTHONPATH": str(source), **({"KCLAB_BENCH_KEEP_OWN_CPU": "1"} if args.gevent else {})}
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--child", "--zk", zk_hosts,
                          "--sandboxes", str(args.sandboxes), "--idle-seconds", str(args.idle_seconds),
                          "--faults", str(args.faults), *(["--gevent", gevent] if gevent else [])],
                         cwd=source, env=env, capture_output=True,
                         text=True, timeout=900, check=True)
    return {**json.loads(out.stdout.strip().splitlines()[-1]), "loadavg_at_start": load}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sandboxes", type=int, default=10)
    parser.add_argument("--idle-seconds", type=float, default=30.0)
    parser.add_argument("--faults", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--before", metavar="COMMIT", help="also run this commit (git archive), alternating")
    parser.add_argument("--gevent", metavar="DIR", help="also run this checkout monkey-patched by the gevent in DIR")
    parser.add_argument("--json", action="store_true", help="every run on stdout")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--zk", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        return _child(args)
    from backend.zkserver.server import ZooKeeperServer
    from measure import archived  # beside this file, as threads.py: it imports no backend

    with tempfile.TemporaryDirectory(prefix="kclab-cpu-") as tmp, ZooKeeperServer() as zk:
        variants = {"head": ROOT}
        if args.before:
            variants = {f"before {args.before}": archived(args.before, Path(tmp) / "before"), "head": ROOT}
        if args.gevent:
            variants["head+gevent"] = ROOT
        results: dict[str, list[dict]] = {name: [] for name in variants}
        for run in range(args.runs):
            for name, source in variants.items():
                result = _run_variant(source, args, zk.hosts, args.gevent if name == "head+gevent" else None)
                print(f"run {run + 1} {name}: {result}", file=sys.stderr, flush=True)
                results[name].append(result)
    keys = ("idle_cpu_pct_of_core_per_sandbox", "cpu_ms_per_fault", "cpu_ms_per_fault_all_brokers",
            "record_path_ms_per_fault", "records_per_fault", "threads_per_sandbox")
    summary = {name: {k: statistics.median(r[k] for r in runs) for k in keys} for name, runs in results.items()}
    print(json.dumps({"runs": results, "median": summary} if args.json else summary, indent=1))


if __name__ == "__main__":
    main()
