"""The simulated data plane's speed: produce throughput (acks=1, acks=all) and the CPU a steady
background producer costs, on a 3-broker cluster (RF 3) against the bench's own ZooKeeper.

Per run, one fresh cluster (brokers 1, 2, 3; topic ``t`` with ``--partitions`` partitions, RF 3;
the lab's default settings — followers fetch when their leader appends, at most every 50 ms, and
every ``replica.fetch.wait.max.ms`` = 500 ms when idle, at most 500 messages a fetch) in its own chroot, with the sinks every session has: the replay log
(``ReplayWriter``) and, for the ``+view`` windows, what a web sandbox adds (``Sandbox.take_records``:
each record as a dict folded into the live view, batches drained 15 times a second and
JSON-encoded as the broadcaster's ``emit`` does). Measured:

* **CPU of a background producer** — the whole process's CPU time (``time.process_time``: every
  thread — brokers, controller, kazoo, replay log) over ``--cpu-window`` seconds, idle and while
  ``produce {rate: --background-rate}`` (the fault the page and lessons use: single-message
  requests, acks=1) runs. Target (issue 4): < 10 % of one core.
* **Throughput** — an open-loop producer (``Producer.send``, answers not awaited, at most
  ``--in-flight`` messages outstanding) sends batches of ``--batch`` messages to partition 0 as
  fast as the brokers answer; messages acknowledged per second over ``--seconds``.

    .venv/bin/python bench/data_plane.py --runs 3
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import signal
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from backend.core.model import TopicPartition  # noqa: E402
from backend.zkserver import server as zk_server  # noqa: E402
from backend.runtime.cluster import Cluster  # noqa: E402
from backend.runtime.faults import apply_fault  # noqa: E402
from backend.runtime.record_bus import RecordBus  # noqa: E402
from backend.runtime.replay import ReplayWriter  # noqa: E402
from backend.runtime.runner import APP_VERSION  # noqa: E402
from backend.faultscript.cluster_spec import ClusterSpec, TopicSpec  # noqa: E402
from bench import threads  # noqa: E402
from bench.quiet import wait_quiet  # noqa: E402
from bench.zk_tools import BENCH_ROOT, remove_bench_chroot  # noqa: E402


def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class WebSink:
    """What a web sandbox does with each record (``web.sandbox.Sandbox.take_records``) plus the
    broadcaster's part: drain 15 times a second and JSON-encode the batch (socket.io's emit)."""

    def __init__(self, cluster: Cluster, bus: RecordBus) -> None:
        from web.sandbox import Sandbox
        self.sandbox = Sandbox("bench", "token", cluster, bus, "sandbox")
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._drain, name="bench-broadcast", daemon=True)
        self._thread.start()

    def __call__(self, records) -> None:
        self.sandbox.take_records(records)

    def _drain(self) -> None:
        while not self._stop.wait(1 / 15):
            records = self.sandbox.drain()
            if records:
                json.dumps({"sandbox": "bench", "records": records, "head": records[-1]["seq"]})

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)


class BenchCluster:
    def __init__(self, zk_hosts: str, partitions: int, replay_dir: Path, config: dict | None = None) -> None:
        self.session_id = f"bench-dp-{uuid.uuid4().hex[:8]}"
        self.chroot = f"{BENCH_ROOT}/{self.session_id}"
        self.zk_hosts = zk_hosts
        self.bus = RecordBus(self.session_id)
        spec = ClusterSpec(brokers=(1, 2, 3), topics={"t": TopicSpec(partitions=partitions, replication_factor=3)},
                           config=dict(config or {}))
        self.cluster = Cluster(zk_hosts, self.chroot, spec, self.session_id, self.bus)
        self.replay = ReplayWriter(replay_dir, self.cluster.header("bench", APP_VERSION))
        self.bus.subscribe(self.replay)
        self.kinds: collections.Counter = collections.Counter()
        self.bus.subscribe(lambda records: self.kinds.update(r.kind for r in records))
        self.web: WebSink | None = None
        self._unsubscribe_web = None

    def start(self) -> None:
        self.cluster.start()

    def web_sinks(self, on: bool) -> None:
        if on and self.web is None:
            self.web = WebSink(self.cluster, self.bus)
            self._unsubscribe_web = self.bus.subscribe(self.web)
        elif not on and self.web is not None:
            self._unsubscribe_web()
            self.web.close()
            self.web = None

    def close(self) -> None:
        try:
            self.web_sinks(False)
            self.cluster.close()
        finally:
            self.replay.close()
            remove_bench_chroot(self.zk_hosts, self.chroot)


# -- measurements ---------------------------------------------------------------------------------
def cpu_window(bc: BenchCluster, seconds: float, jvm_pid: int | None) -> dict:
    """The process's CPU over ``seconds`` of whatever runs now."""
    seq0, load = bc.bus.next_seq, os.getloadavg()[0]
    snap0, cpu0, t0 = threads.snapshot(jvm_pid), time.process_time(), time.monotonic()
    time.sleep(seconds)
    cpu1, t1, snap1 = time.process_time(), time.monotonic(), threads.snapshot(jvm_pid)
    wall = t1 - t0
    return {"pct_of_one_core": round(100 * (cpu1 - cpu0) / wall, 2), "window_s": round(wall, 2),
            "records_per_s": round((bc.bus.next_seq - seq0) / wall, 1),
            "cpu_s_by_thread_group": threads.diff(snap0, snap1), "loadavg_1min": round(load, 2)}


def background(bc: BenchCluster, rate: int, seconds: float, warmup: float, jvm_pid: int | None) -> dict:
    """``produce {rate}`` as the page/lessons start it; CPU measured after ``warmup``."""
    count = int(rate * (warmup + seconds + 1))
    result = apply_fault(bc.cluster, "produce", {"topic": "t", "partition": 0, "count": count, "rate": rate},
                         source="script")
    if not result.ok:
        raise RuntimeError(f"produce refused: {result.message}")
    time.sleep(warmup)
    acked0 = _acked(bc)
    out = cpu_window(bc, seconds, jvm_pid)
    out["acked_per_s"] = round((_acked(bc) - acked0) / out["window_s"], 1)
    for thread in list(bc.cluster.producer._background):
        thread.join(60)
    bc.cluster.producer._background.clear()
    bc.cluster.wait_stable(30)
    return out


def _acked(bc: BenchCluster) -> int:
    return sum(len(bc.cluster.ledger.acked_messages(TopicPartition("t", p))) for p in range(1))


def throughput(bc: BenchCluster, acks: str, batch: int, seconds: float, warmup: float, in_flight: int) -> dict:
    """Open loop: keep ``in_flight`` messages outstanding, count what is acknowledged in the window."""
    tp = TopicPartition("t", 0)
    permits = threading.Semaphore(max(1, in_flight // batch))
    lock = threading.Lock()
    acked = collections.Counter()
    errors: collections.Counter = collections.Counter()
    start = time.monotonic()
    window = (start + warmup, start + warmup + seconds)

    def finished(result) -> None:
        now = time.monotonic()
        with lock:
            if result.error == "NONE":
                acked["all"] += result.count
                if window[0] <= now < window[1]:
                    acked["window"] += result.count
            else:
                errors[result.error] += 1
        permits.release()

    cpu = {}
    sent = 0
    isr0 = bc.kinds["isr"]
    while True:
        now = time.monotonic()
        if now >= window[1]:
            break
        if not cpu and now >= window[0]:
            cpu = {"cpu": time.process_time(), "t": now, "seq": bc.bus.next_seq}
        if permits.acquire(timeout=0.5):
            bc.cluster.producer.send(tp, batch, acks, finished)
            sent += batch
    cpu_s = time.process_time() - cpu["cpu"]
    wall = time.monotonic() - cpu["t"]
    records = bc.bus.next_seq - cpu["seq"]
    isr_changes = bc.kinds["isr"] - isr0
    isr_at_end = list(bc.cluster.inspect()["partitions"]["t-0"]["isr"])
    for _ in range(max(1, in_flight // batch)):  # every answer back
        if not permits.acquire(timeout=30):
            break
    bc.cluster.wait_stable(30)
    msgs = acked["window"] / seconds
    return {"acks": acks, "batch": batch, "messages_per_s": round(msgs), "requests_per_s": round(msgs / batch, 1),
            "errors": dict(errors), "cpu_pct_of_one_core": round(100 * cpu_s / wall, 1),
            "cpu_us_per_message": round(1e6 * cpu_s / max(1, acked["window"]), 1),
            "records_per_s": round(records / wall, 1), "isr_changes": isr_changes, "isr_at_end": isr_at_end,
            "loadavg_1min": round(os.getloadavg()[0], 2)}


# -- the driver -------------------------------------------------------------------------------------
def machine(zk) -> dict:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "?")
    mem_kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                  if line.startswith("MemTotal"))
    return {"nproc": os.cpu_count(), "cpu": cpu, "ram_gb": round(mem_kb / 1024 / 1024, 1),
            "python": platform.python_version(), "zookeeper": zk.classpath.version if zk else "external"}


def one_run(zk_hosts: str, jvm_pid: int | None, args, replay_dir: Path) -> dict:
    """CPU windows on one cluster; then each throughput measurement on a fresh cluster (a
    flood leaves followers far behind — and out of the ISR — which would flatter the next one)."""
    out: dict[str, Any] = {}
    bc = BenchCluster(zk_hosts, args.partitions, replay_dir)
    try:
        bc.start()
        time.sleep(1.0)
        log("  idle ...")
        out["idle"] = cpu_window(bc, args.cpu_window, jvm_pid)
        log(f"  background produce {args.background_rate}/s ...")
        out["background"] = background(bc, args.background_rate, args.cpu_window, 2.0, jvm_pid)
        bc.web_sinks(True)
        log("  idle, with the web sandbox's sinks ...")
        out["idle+view"] = cpu_window(bc, args.cpu_window, jvm_pid)
        log(f"  background produce {args.background_rate}/s, with the web sandbox's sinks ...")
        out["background+view"] = background(bc, args.background_rate, args.cpu_window, 2.0, jvm_pid)
        out["records_by_kind"] = dict(bc.kinds)
    finally:
        bc.close()
    out["throughput"] = []
    for acks in args.acks:
        for batch in args.batch:
            log(f"  throughput acks={acks} batch={batch} (fresh cluster) ...")
            bc = BenchCluster(zk_hosts, args.partitions, replay_dir,
                              {"replica.lag.time.max.ms": args.lag_max_ms} if args.lag_max_ms else None)
            try:
                bc.start()
                time.sleep(1.0)
                out["throughput"].append(throughput(bc, acks, batch, args.seconds, 1.0, args.in_flight))
            finally:
                bc.close()
    return out


def summarize(values: list) -> dict:
    values = [v for v in values if v is not None]
    return {"median": round(statistics.median(values), 2), "min": min(values), "max": max(values), "runs": values}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--partitions", type=int, default=1, help="partitions of topic t (producing goes to t-0)")
    parser.add_argument("--background-rate", type=int, default=200)
    parser.add_argument("--cpu-window", type=float, default=10.0, help="seconds per CPU window")
    parser.add_argument("--seconds", type=float, default=5.0, help="seconds per throughput window")
    parser.add_argument("--acks", type=lambda s: s.split(","), default=["1", "all"])
    parser.add_argument("--batch", type=lambda s: [int(x) for x in s.split(",")], default=[1, 100],
                        help="messages per produce request (comma-separated list)")
    parser.add_argument("--in-flight", type=int, default=1000, help="throughput: messages outstanding at most")
    parser.add_argument("--lag-max-ms", type=int, default=600_000,
                        help="throughput clusters' replica.lag.time.max.ms (default 600000: followers that fall behind "
                             "stay in the ISR, so acks=all really waits for all three; 0: the lab's 5000)")
    parser.add_argument("--zk", metavar="HOST:PORT", help="use this ZooKeeper instead of starting the bench's own")
    parser.add_argument("--wait-quiet", type=float, metavar="PCT",
                        help="before each run, wait (up to --wait-max s) until the machine is at most PCT %% busy")
    parser.add_argument("--wait-max", type=float, default=300, metavar="S", help="see --wait-quiet (default 300)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    # SIGTERM (and SIGINT, which a background job may have ignored) unwind through the
    # ``finally`` blocks, so the server, the browser and ZooKeeper are stopped and chroots deleted.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, signal.default_int_handler)

    import logging
    logging.getLogger("kazoo").setLevel(logging.ERROR)
    zk = None if args.zk else zk_server.ZooKeeperServer(force_sync=False).start()
    hosts = args.zk or zk.hosts
    results: dict[str, Any] = {
        "command": " ".join([".venv/bin/python", "bench/data_plane.py", *(argv if argv is not None else sys.argv[1:])]),
        "machine": machine(zk), "runs": []}
    try:
        with tempfile.TemporaryDirectory(prefix="kclab-dp-bench-") as tmp:
            for i in range(args.runs):
                quiet = wait_quiet(args.wait_quiet, args.wait_max)
                run = one_run(hosts, zk.pid if zk else None, args, Path(tmp))
                run["machine_before_run"] = quiet
                results["runs"].append(run)
                log(f"run {i + 1}/{args.runs}: " + json.dumps(_headline(run)))
    finally:
        if zk is not None:
            zk.stop()
    keys = list(_headline(results["runs"][0]))
    results["summary"] = {k: summarize([_headline(r)[k] for r in results["runs"]]) for k in keys}
    if args.json:
        json.dump(results, sys.stdout, indent=2)
        print()
    else:
        for key, s in results["summary"].items():
            print(f"{key:50s} median {s['median']:>10} min {s['min']:>10} max {s['max']:>10}")
    return 0


def _headline(run: dict) -> dict:
    out = {f"{k}.cpu_pct_of_one_core": run[k]["pct_of_one_core"]
           for k in ("idle", "background", "idle+view", "background+view")}
    out["background.acked_per_s"] = run["background"]["acked_per_s"]
    for t in run["throughput"]:
        out[f"throughput.acks={t['acks']}.batch={t['batch']}.messages_per_s"] = t["messages_per_s"]
        out[f"throughput.acks={t['acks']}.batch={t['batch']}.cpu_us_per_message"] = t["cpu_us_per_message"]
    return out


if __name__ == "__main__":
    raise SystemExit(main())
