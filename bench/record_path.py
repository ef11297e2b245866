"""What the web server does with each record once the runtime made it, per record, two trees
alternated: the precise measure behind ``sandbox_cpu.py``'s ``record_path``.

``sandbox_cpu.py`` times a sandbox's records in a child that also ran a cluster, one child per
variant and run; its ``record_path`` moved by a third from run to run in parts no variant
changed, so a change of a few microseconds a record did not show (issue 14, twenty-seventh
round). Here the records are made once: a default sandbox (brokers 0, 1, 2; topic ``t`` of 3
partitions, RF 3) on the bench's own ZooKeeper, its brokers stopped and started in turn
``--faults`` times, its replay log read back. Then each variant's child, alternated ``--runs``
times, times its own code on those same records — each step over all of them, best of
``--passes`` passes, µs a record:

* ``stamped``: the record bus's copy with session, seq and time (``Record.stamped``);
* ``kept``: the bus's history — a ``RecordBus`` keeping every record, handed them a few at a time
  (packed one by one into a deque before issue 14's thirty-ninth round, sealed into compressed
  chunks since); beside it, not in the total, ``kept_bytes`` (what the history holds a record)
  and ``read_back`` (µs a record for ``since(0)``: a page's catch-up, a lesson's look back);
* ``sinks``: a web sandbox's record-bus sinks, as ``web/sandboxes.py`` subscribes them — the
  replay log (a real file in a temporary directory; one ``write(2)`` a record) and the page's
  fold and batch queue (``Sandbox.take_and_log`` where the tree has it, else its two sinks,
  ``ReplayWriter`` and ``Sandbox.take_records``);
* ``total`` of the three, and ``per_fault_ms`` = ``total`` × records per fault.

    .venv/bin/python bench/record_path.py --before 58470f9 --runs 5
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STEPS = ("stamped", "kept", "sinks")


def make_records(hosts: str, faults: int, directory: Path) -> tuple[Path, int]:
    """A default sandbox's replay log after ``faults`` stops and starts; returns its path and the
    number of faults (this checkout's runtime: the records are the input, the same for every variant)."""
    from backend.faultscript.cluster_spec import ClusterSpec, TopicSpec
    from backend.runtime.cluster import Cluster
    from backend.runtime.faults import apply_fault
    from backend.runtime.record_bus import RecordBus
    from backend.runtime.replay import ReplayWriter

    bus = RecordBus("record-path")
    cluster = Cluster(hosts, "/kclab-bench-record-path", ClusterSpec((0, 1, 2), {"t": TopicSpec(3, 3, None, {})}, {}),
                      "record-path", bus)
    writer = ReplayWriter(directory, cluster.header("sandbox", "bench"))
    bus.subscribe(writer)
    cluster.start()
    try:
        time.sleep(2)  # the first fetches and ISR settle, as a student's sandbox is before a fault
        for i in range(faults):
            broker, stop = (i // 2) % 3, i % 2 == 0
            apply_fault(cluster, "stop_broker" if stop else "start_broker", {"broker": broker})
            time.sleep(1.0 if stop else 1.5)  # its records come out: failover, ISR, fetches
    finally:
        cluster.close()
        writer.close()
    return writer.path, faults


def _child(records_path: str, passes: int) -> dict:
    """Runs in the variant's tree (``PYTHONPATH``): its own ``Record``, ``ReplayWriter`` and ``Sandbox``."""
    from backend.core.records import Record, SessionHeader
    from backend.runtime.record_bus import RecordBus
    from backend.runtime.replay import ReplayWriter
    from web.sandbox import Sandbox

    lines = Path(records_path).read_text().splitlines()
    header = lines[0]
    records = [Record.from_dict(json.loads(line)) for line in lines[1:]]
    bare = [r.evolve(session_id="", seq=-1, ts_ms=0) for r in records]  # as the runtime hands them to the bus
    stamped = [r.stamped("s", i, 1, None, None) for i, r in enumerate(bare)]

    def sinks(directory: str) -> None:
        writer = ReplayWriter(directory, SessionHeader.from_dict(json.loads(header)))
        sandbox = Sandbox("bench", "token", None, None, "sandbox", replay=writer)
        if hasattr(sandbox, "take_and_log"):
            subscribed = [sandbox.take_and_log]
        else:
            subscribed = [writer, sandbox.take_records]
        for start in range(0, len(stamped), 20):  # the bus hands records over a few at a time
            batch = stamped[start:start + 20]
            for sink in subscribed:
                sink(batch)
        writer.close()

    def kept(_directory: str | None = None) -> RecordBus:
        bus = RecordBus("s", history=len(stamped) + 1)
        for start in range(0, len(stamped), 20):
            batch = stamped[start:start + 20]
            if hasattr(bus, "_keep"):
                bus._keep(batch)
            else:  # before the chunks: each record packed into a deque
                bus._kept.extend([r.packed() for r in batch])
        return bus

    def best(step) -> float:
        times = []
        for _ in range(passes):
            with tempfile.TemporaryDirectory() as directory:
                t0 = time.perf_counter()
                step(directory)
                times.append(time.perf_counter() - t0)
        return round(1e6 * min(times) / len(records), 2)

    result = {
        "stamped": best(lambda _d: [r.stamped("s", i, 1, None, None) for i, r in enumerate(bare)]),
        "kept": best(kept),
        "sinks": best(sinks),
    }
    result["total"] = round(sum(result[s] for s in STEPS), 2)
    bus = kept()
    bus._seq = len(stamped)  # ``_keep`` alone leaves the seqs to ``emit``
    held = [*bus._chunks, *bus._tail] if hasattr(bus, "_chunks") else bus._kept
    result["kept_bytes"] = round(sum(len(k) for k in held if isinstance(k, bytes)) / len(records), 1)
    result["read_back"] = best(lambda _d: bus.since(0))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", metavar="COMMIT", help="also run this commit (git archive), alternating")
    parser.add_argument("--faults", type=int, default=24)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--passes", type=int, default=15)
    parser.add_argument("--json", action="store_true", help="every run on stdout")
    parser.add_argument("--child", metavar="RECORDS", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(_child(args.child, args.passes)))
        return
    sys.path.insert(0, str(ROOT))
    from backend.zkserver.server import ZooKeeperServer
    from measure import archived  # beside this file

    with tempfile.TemporaryDirectory(prefix="kclab-record-path-") as tmp:
        with ZooKeeperServer() as zk:
            path, faults = make_records(zk.hosts, args.faults, Path(tmp))
        records = len(path.read_text().splitlines()) - 1
        print(f"{records} records of {faults} faults", file=sys.stderr, flush=True)
        variants = {"head": ROOT}
        if args.before:
            variants = {f"before {args.before}": archived(args.before, Path(tmp) / "before"), "head": ROOT}
        results: dict[str, list[dict]] = {name: [] for name in variants}
        for run in range(args.runs):
            for name, source in variants.items():
                env = {"PYTHONPATH": str(source), "PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "0"}
                child = subprocess.run([sys.executable, __file__, "--child", str(path), "--passes", str(args.passes)],
                                       cwd=source, env=env, capture_output=True, text=True, check=True)
                result = json.loads(child.stdout)
                result["per_fault_ms"] = round(result["total"] * records / faults / 1000, 2)
                print(f"run {run + 1} {name}: {result}", file=sys.stderr, flush=True)
                results[name].append(result)
    summary = {name: {k: statistics.median(r[k] for r in runs)
                      for k in (*STEPS, "total", "per_fault_ms", "kept_bytes", "read_back")}
               for name, runs in results.items()}
    summary["records_per_fault"] = round(records / faults, 1)
    print(json.dumps({"runs": results, "median": summary} if args.json else summary, indent=1))


if __name__ == "__main__":
    main()
