"""Controller speed at scale, on a real ZooKeeper: broker failure and controller failover.

Scenarios (see ``bench/README.md`` for the full story and ``docs/performance.md`` for results):

* ``failure`` — a cluster of ``--brokers`` brokers holds ``--partitions`` partitions (RF 3,
  Kafka's assignment with a fixed start index, so every broker is the preferred leader of
  1/n of them). A broker that is not the controller stops (``stop_broker``: its session is closed, so the
  controller hears of it at once; a crash would add the session timeout). Measured:
  crash -> last new leader written to ZooKeeper (the largest ``mtime`` of the moved partitions'
  state znodes), against the *floor*: the same number of conditional setData of the same size,
  pipelined with kazoo's async API, on the same server, in the same run.
* ``failover`` — the first controller comes up over a cluster that already holds every znode
  (it was written directly, as a Kafka cluster would hold it): ``elected`` -> ``active``,
  against the raw read floor (the same znodes async-read by a plain kazoo client). Then the
  controller broker crashes and the next controller's failover is measured the same way.

``--sync-writes`` makes every broker's controller write one transaction at a time (Kafka
before 1.1: the lab setting ``kclab.zk.pipelined.writes: false``). Each run builds a fresh cluster in its own chroot and deletes it afterwards; the
ZooKeeper server is the bench's own (``forceSync=no`` unless ``--force-sync``).

Times: record timestamps (``ts_ms``, the wall clock stamped by the record bus when a record
leaves the controller thread) and ZooKeeper's ``mtime`` (the server's wall clock when it
applied the write) — both the same host clock, both milliseconds. Floors: ``time.perf_counter``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from backend.runtime import heap  # noqa: E402
from backend.zk import codec, paths  # noqa: E402
from backend.zkserver import server as zk_server  # noqa: E402
from bench import threads  # noqa: E402
from bench.controller_cluster import BenchCluster, EventProfiler, wait_for  # noqa: E402
from bench.zk_tools import (delete_tree, floor_failover_reads, floor_reads, floor_writes,  # noqa: E402
                            make_scratch_znodes, pipelined)

MAX_PARTITIONS_PER_TOPIC = 10_000
"""A topic znode lists every partition; at 100,000 it would exceed ZooKeeper's 1 MB request
limit (jute.maxbuffer) — real clusters of that size have many topics."""


# -- scenarios ------------------------------------------------------------------------------------
def run_failure(bc: BenchCluster, jvm_pid: int | None, profiler: EventProfiler | None, timeout: float,
                reps: int = 3) -> dict:
    elected, active = bc.wait_active(bc.release(), timeout)
    heap.settle()  # as Cluster.start does once the cluster is up
    if profiler is not None:
        profiler.install(bc.cluster)
    controller = elected.controller_id
    led = bc.preferred_leaders()
    victim = max((b for b in bc.broker_ids if b != controller), key=lambda b: (len(led[b]), -b))
    moved = led[victim]
    if profiler is not None:
        profiler.armed, profiler.longest = True, None
    with threads.FullCollections() as full_collections:
        cpu_before = threads.snapshot(jvm_pid)
        bc.cluster.brokers[victim].exit()  # closes its session: no session timeout in the measurement
        crashed = bc.seen.first(-1, kind="broker", to_state="stopped", broker_id=victim)
        processed = wait_for(lambda: bc.seen.first(crashed.seq, kind="controller_event", op="BrokerChange",
                                                   to_state="processed", broker_id=controller), timeout,
                             "the controller to process the BrokerChange")
        cpu = threads.diff(cpu_before, threads.snapshot(jvm_pid))
    if profiler is not None:
        profiler.armed = False
    bc.cluster.wait_stable(timeout, quiet_s=0.3)
    queued = bc.seen.first(crashed.seq, kind="controller_event", op="BrokerChange", to_state="queued",
                           broker_id=controller)
    processing = bc.seen.first(crashed.seq, kind="controller_event", op="BrokerChange", to_state="processing",
                               broker_id=controller)
    elections = [(seq, ts) for seq, ts, outcome in bc.seen.elections if seq > crashed.seq and outcome == "ok"]
    shrinks = [ts for seq, ts in bc.seen.isr_changes if seq > crashed.seq]

    # What ZooKeeper holds now: every moved partition has a live leader; when was it written?
    stats = pipelined(lambda tp=tp: bc.client.get_async(paths.partition_state_path(*tp)) for tp in moved)
    states = [codec.decode_partition_state(data, stat.version) for data, stat in stats]
    not_moved = [tp for tp, s in zip(moved, states) if s.leader in (victim, -1)]
    if not_moved:
        raise AssertionError(f"{len(not_moved)} partitions still without a live leader, e.g. {not_moved[:3]}")
    last_leader_mtime = max(stat.mtime for _, stat in stats)
    first_leader_mtime = min(stat.mtime for _, stat in stats)
    sample = stats[0][0]  # one new state znode's JSON: the floor writes the same size

    # The floors, on the same server, while the cluster is idle: each the best of ``reps`` tries
    # (a floor is what the server and kazoo can do at best; one try can catch a busy moment).
    floor_root = "/bench-floor"
    nodes = make_scratch_znodes(bc.client, floor_root, len(moved), sample)
    epoch_version = bc.client.get(paths.CONTROLLER_EPOCH)[1].version
    version = iter(range(1_000_000))
    controller_zk = bc.cluster.brokers[controller].kafka_zk.zk  # the broker session's kazoo client
    tries = {
        "async_setdata_s": lambda: floor_writes(bc.client, nodes, sample, next(version), "async"),
        "async_fenced_s": lambda: floor_writes(bc.client, nodes, sample, next(version), "async",
                                               paths.CONTROLLER_EPOCH, epoch_version),
        "sync_setdata_s": lambda: floor_writes(bc.client, nodes, sample, next(version), "sync"),
        "sync_fenced_s": lambda: floor_writes(bc.client, nodes, sample, next(version), "sync",
                                              paths.CONTROLLER_EPOCH, epoch_version),
        "async_read_s": lambda: floor_reads(bc.client, nodes),
        # The same fenced writes through the controller broker's own session: on the process's
        # session loop, where the other brokers' threads live (not part of the floor).
        "async_fenced_via_controller_session_s": lambda: floor_writes(
            controller_zk, nodes, sample, next(version), "async", paths.CONTROLLER_EPOCH, epoch_version),
        "sync_fenced_via_controller_session_s": lambda: floor_writes(
            controller_zk, nodes, sample, next(version), "sync", paths.CONTROLLER_EPOCH, epoch_version),
    }
    floor_tries = {key: [round(threads.without_collections(measure), 4) for _ in range(reps)]
                   for key, measure in tries.items()}
    floors = {key: min(values) for key, values in floor_tries.items()}
    delete_tree(bc.client, floor_root)
    t0 = crashed.ts_ms
    return {
        "controller": controller, "victim": victim, "leaders_moved": len(moved), "elections_ok": len(elections),
        "isr_shrinks": len(shrinks), "state_znode_bytes": len(sample),
        "first_failover_s": (active.ts_ms - elected.ts_ms) / 1000,
        "crash_to_first_leader_written_s": (first_leader_mtime - t0) / 1000,
        "crash_to_last_leader_written_s": (last_leader_mtime - t0) / 1000,
        "crash_to_last_election_record_s": (max(ts for _, ts in elections) - t0) / 1000,
        "crash_to_broker_change_queued_s": (queued.ts_ms - t0) / 1000,
        "crash_to_broker_change_processing_s": (processing.ts_ms - t0) / 1000,
        "crash_to_broker_change_processed_s": (processed.ts_ms - t0) / 1000,
        "floor": {k: round(v, 4) for k, v in floors.items()},
        "floor_tries": floor_tries,
        "ratio_to_async_floor": round((last_leader_mtime - t0) / 1000 / floors["async_setdata_s"], 2),
        # Kafka's controller reads every state znode before it elects (the cache may be stale):
        "ratio_to_read_plus_write_floor": round(
            (last_leader_mtime - t0) / 1000 / (floors["async_read_s"] + floors["async_setdata_s"]), 2),
        "cpu_s_during_broker_change": cpu,
        "full_gc_during_broker_change": full_collections.summary(),
        "records": dict(bc.seen.counts),
    }


def best_read_floor(bc: BenchCluster, reps: int) -> tuple[float, int, list[float]]:
    tries = [threads.without_collections(lambda: floor_failover_reads(bc.client)) for _ in range(reps)]
    return min(t for t, _ in tries), tries[0][1], [round(t, 3) for t, _ in tries]


def run_failover(bc: BenchCluster, jvm_pid: int | None, profiler: EventProfiler | None, timeout: float,
                 reps: int = 3) -> dict:
    """First failover (all brokers alive) and the one after the controller broker crashes."""
    out: dict[str, Any] = {}
    if profiler is not None:
        profiler.install(bc.cluster)
        profiler.armed, profiler.longest = True, None
    cpu_before = threads.snapshot(jvm_pid)
    elected, active = bc.wait_active(bc.release(), timeout)
    heap.settle()  # as Cluster.start does once the cluster is up
    out["cpu_s_first_failover"] = threads.diff(cpu_before, threads.snapshot(jvm_pid))
    if profiler is not None:
        profiler.armed = False
    loaded = bc.seen.first(elected.seq, kind="controller", to_state="context_loaded")
    out["first"] = {"controller": elected.controller_id, "live_brokers": len(bc.broker_ids),
                    "elected_to_context_loaded_s": (loaded.ts_ms - elected.ts_ms) / 1000,
                    "elected_to_active_s": (active.ts_ms - elected.ts_ms) / 1000}
    floor_s, znodes, floor_tries = best_read_floor(bc, reps)
    out["first"]["floor_read_s"] = round(floor_s, 3)
    out["first"]["floor_read_tries"] = floor_tries
    out["first"]["znodes_read"] = znodes
    out["first"]["ratio"] = round(out["first"]["elected_to_active_s"] / floor_s, 2)

    # The controller broker crashes: the next controller also elects leaders for its partitions.
    crashed_controller = elected.controller_id
    mark = bc.bus.next_seq
    bc.cluster.brokers[crashed_controller].exit()  # its session closed: the election starts at once
    elected2, active2 = bc.wait_active(mark, timeout)
    loaded2 = bc.seen.first(elected2.seq, kind="controller", to_state="context_loaded")
    floor2_s, znodes2, floor2_tries = best_read_floor(bc, reps)
    out["after_controller_crash"] = {
        "crashed": crashed_controller, "controller": elected2.controller_id, "live_brokers": len(bc.broker_ids) - 1,
        "leaders_moved": len(bc.preferred_leaders()[crashed_controller]),
        "elected_to_context_loaded_s": (loaded2.ts_ms - elected2.ts_ms) / 1000,
        "elected_to_active_s": (active2.ts_ms - elected2.ts_ms) / 1000,
        "floor_read_s": round(floor2_s, 3), "floor_read_tries": floor2_tries, "znodes_read": znodes2,
        "ratio": round((active2.ts_ms - elected2.ts_ms) / 1000 / floor2_s, 2),
    }
    out["records"] = dict(bc.seen.counts)
    return out


# -- the driver -----------------------------------------------------------------------------------
def machine(zk: zk_server.ZooKeeperServer | None, force_sync: bool) -> dict:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "?")
    mem_kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                  if line.startswith("MemTotal"))
    java = subprocess.run([zk_server.java_executable(), "-version"], capture_output=True, text=True).stderr
    from importlib.metadata import version
    return {"nproc": os.cpu_count(), "cpu": cpu, "ram_gb": round(mem_kb / 1024 / 1024, 1),
            "python": platform.python_version(), "java": java.splitlines()[0] if java else "?",
            "zookeeper": zk.classpath.version if zk else "external", "zookeeper_jvm": list(zk_server.JVM_OPTIONS),
            "forceSync": "yes" if force_sync else "no", "kazoo": version("kazoo")}


def summarize(values: list[float]) -> dict:
    return {"median": round(statistics.median(values), 3), "min": round(min(values), 3),
            "max": round(max(values), 3), "runs": [round(v, 3) for v in values]}


def dig(run: dict, key: str) -> Any:
    for part in key.split("."):
        run = run[part]
    return run


SUMMARY_KEYS = {
    "failure": ["crash_to_last_leader_written_s", "crash_to_first_leader_written_s", "crash_to_last_election_record_s",
                "crash_to_broker_change_queued_s", "crash_to_broker_change_processed_s",
                "floor.async_setdata_s", "floor.async_fenced_s", "floor.sync_setdata_s", "floor.sync_fenced_s",
                "floor.async_read_s", "floor.async_fenced_via_controller_session_s",
                "floor.sync_fenced_via_controller_session_s", "ratio_to_async_floor",
                "ratio_to_read_plus_write_floor", "first_failover_s", "full_gc_during_broker_change.count",
                "full_gc_during_broker_change.seconds"],
    "failover": ["first.elected_to_context_loaded_s", "first.elected_to_active_s", "first.floor_read_s",
                 "first.ratio", "after_controller_crash.elected_to_context_loaded_s",
                 "after_controller_crash.elected_to_active_s", "after_controller_crash.floor_read_s",
                 "after_controller_crash.ratio"],
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", choices=("failure", "failover"), default="failure")
    parser.add_argument("--partitions", type=int, default=10_000)
    parser.add_argument("--brokers", type=int, default=5)
    parser.add_argument("--topics", type=int, default=None,
                        help=f"default: one topic per {MAX_PARTITIONS_PER_TOPIC:,} partitions")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sync-writes", action="store_true",
                        help="controller writes one transaction at a time (Kafka before 1.1)")
    parser.add_argument("--no-multi-read", action="store_true",
                        help="controller reads znode by znode, as with a ZooKeeper before 3.6 (Kafka 2.8's way)")
    parser.add_argument("--force-sync", action="store_true", help="ZooKeeper fsyncs its log (default: forceSync=no)")
    parser.add_argument("--zk-heap", default="1g",
                        help="ZooKeeper JVM -Xmx (default 1g; the launcher's own 128m thrashes in full GCs at 100k partitions)")
    parser.add_argument("--floor-reps", type=int, default=3, help="each floor is the best of this many tries")
    parser.add_argument("--profile", metavar="FILE", help="write a cProfile of the measured controller event")
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--json", action="store_true", help="print the results as JSON on stdout")
    args = parser.parse_args(argv)
    if args.brokers < 3:
        parser.error("--brokers must be at least 3 (replication factor 3)")
    topics = args.topics or max(1, math.ceil(args.partitions / MAX_PARTITIONS_PER_TOPIC))

    if args.zk_heap:
        zk_server.JVM_OPTIONS = tuple(o for o in zk_server.JVM_OPTIONS if not o.startswith("-Xmx")) + (
            f"-Xmx{args.zk_heap}",)
    zk = zk_server.ZooKeeperServer(force_sync=args.force_sync).start()
    log = sys.stderr
    results: dict[str, Any] = {
        "command": " ".join([".venv/bin/python", "bench/controller_scale.py",
                             *(argv if argv is not None else sys.argv[1:])]),
        "scenario": args.scenario, "partitions": args.partitions, "brokers": args.brokers, "topics": topics,
        "sync_writes": args.sync_writes, "multi_read": not args.no_multi_read, "machine": machine(zk, args.force_sync), "runs": []}
    profiler = EventProfiler() if args.profile else None
    try:
        for i in range(args.runs):
            bc = BenchCluster(zk.hosts, args.brokers, args.partitions, topics, args.sync_writes,
                              multi_read=not args.no_multi_read)
            started, load = time.perf_counter(), os.getloadavg()[0]
            try:
                bc.prepare(args.timeout)
                if args.scenario == "failure":
                    run = run_failure(bc, zk.pid, profiler, args.timeout, args.floor_reps)
                else:
                    run = run_failover(bc, zk.pid, profiler, args.timeout, args.floor_reps)
            finally:
                bc.close()
            run["loadavg_1min_before"] = round(load, 2)
            run["seeded_znodes"] = bc.seeded
            run["seed_s"] = round(bc.seed_s, 2)
            run["wall_s"] = round(time.perf_counter() - started, 1)
            results["runs"].append(run)
            print(f"run {i + 1}/{args.runs}: {json.dumps(_headline(args.scenario, run))}", file=log, flush=True)
    finally:
        zk.stop()
    results["summary"] = {k: summarize([dig(r, k) for r in results["runs"]]) for k in SUMMARY_KEYS[args.scenario]}
    if profiler is not None:
        Path(args.profile).write_text(profiler.report())
        print(f"profile written to {args.profile}", file=log)
    if args.json:
        json.dump(results, sys.stdout, indent=2)
        print()
    else:
        for key, s in results["summary"].items():
            print(f"{key:55s} median {s['median']:>9} min {s['min']:>9} max {s['max']:>9}")
    return 0


def _headline(scenario: str, run: dict) -> dict:
    keys = SUMMARY_KEYS[scenario]
    return {k: dig(run, k) for k in keys}


if __name__ == "__main__":
    raise SystemExit(main())
