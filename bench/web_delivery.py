"""Record delivery latency through the real web app: runtime emits a record -> a Socket.IO client has it.

Scenarios (see ``bench/README.md`` for the story and ``docs/performance.md`` for results):

* ``delivery`` — one sandbox (the app's default: 3 brokers, topic ``t`` of 3 partitions, RF 3)
  with a background ``produce`` fault at ``--produce-rate`` messages/s; ``--clients`` Socket.IO
  clients all join its room. Latency of every record a client receives = its receive time
  (wall clock, when the ``records`` handler runs) minus the record's ``ts_ms`` (wall clock when
  the record bus stamped it; same host, same clock). Also reported: the record rate the runtime
  actually emitted and the clients received (the target is 1,000 records/s).
* ``sandboxes`` — ``--sandboxes`` sandboxes of 3 brokers, one client each; every client crashes
  and restarts its brokers in turn (one fault every ``--fault-interval`` s, through the socket's
  ``fault`` event as the page sends it, or ``--fault-via http``). Latency of a fault = the time
  its client receives the record whose ``seq`` the fault's answer names (the fault record)
  minus the time the request was sent.

The app is the real one: ``kclab serve --zk <the bench's own ZooKeeper> --port <free>`` as a
child process (gunicorn, one gthread worker, records broadcast 15 times a second). Clients are
python-socketio clients (websocket transport) in ``--client-procs`` child processes. The server,
its sandboxes' chroots, the client processes and the ZooKeeper JVM are stopped/deleted at the
end, also when a run fails.

    .venv/bin/python bench/web_delivery.py --scenario delivery --clients 1 --runs 3
    .venv/bin/python bench/web_delivery.py --scenario delivery --clients 50 --runs 3
    .venv/bin/python bench/web_delivery.py --scenario sandboxes --sandboxes 30 --runs 3
"""

from __future__ import annotations

import argparse
import collections
import json
import math
import os
import signal
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.app_server import AppServer, ServerProfile  # noqa: E402
from bench.measure import (cpu_fields, latency_stats, log, machine, machine_busy_seconds, percentile,  # noqa: E402
                           zk_cpu)
from bench.quiet import wait_quiet  # noqa: E402
from bench.socket_clients import ClientPool  # noqa: E402


# -- scenarios ----------------------------------------------------------------------------------------------
def run_delivery(server: AppServer, args) -> dict:
    sandbox = server.create_sandbox()
    pool = None
    try:
        pool = ClientPool(server.url, [sandbox] * args.clients, args.client_procs, count_kinds=True)
        joined = pool.wait_ready()
        count = int(args.produce_rate * (args.warmup + args.seconds + 5))
        server.api("POST", f"/api/sandboxes/{sandbox['id']}/faults",
                   {"op": "produce", "topic": "t", "partition": 0, "count": count, "rate": args.produce_rate},
                   token=sandbox["token"], address=sandbox["address"])
        time.sleep(args.warmup)
        load = os.getloadavg()
        s0, t0, cpu0, busy0 = server.next_seq(sandbox), time.monotonic(), server.cpu(), machine_busy_seconds()
        clients_cpu0, zk0 = pool.cpu(), zk_cpu(args.zk_pid)
        profile = ServerProfile(args.py_spy, args.profile, server.worker, args.seconds) if args.first_run else None
        time.sleep(args.seconds)
        s1, t1, cpu1, busy1 = server.next_seq(sandbox), time.monotonic(), server.cpu(), machine_busy_seconds()
        clients_cpu1, zk1 = pool.cpu(), zk_cpu(args.zk_pid)
        time.sleep(1.5)  # the window's last records are on their way
        results = pool.command("stop", s0, s1)
        profiled = profile.summary() if profile is not None else None
    finally:
        if pool is not None:
            pool.close()
        server.delete_sandbox(sandbox)
    clients = [c for r in results for c in r["clients"]]
    latencies = [v for c in clients for v in c["latencies"]]
    window = t1 - t0
    emitted = s1 - s0
    kinds = next((c["kinds"] for c in clients if c["kinds"]), {})
    return {
        "clients": joined, "produce_rate": args.produce_rate, "window_s": round(window, 2),
        "records_emitted": emitted, "emitted_per_s": round(emitted / window, 1),
        "received_per_client_per_s": round(statistics.median(c["received"] for c in clients) / window, 1),
        "clients_missing_records": sum(1 for c in clients if c["received"] < emitted),
        "duplicates": sum(c["duplicates"] for c in clients),
        "latency": latency_stats(latencies),
        "per_client_p99_ms": {"median": round(statistics.median(percentile(sorted(c["latencies"]), 99) or 0
                                                                 for c in clients), 1),
                              "max": round(max(percentile(sorted(c["latencies"]), 99) or 0 for c in clients), 1)},
        "newest_record_in_batch": latency_stats([v for c in clients for v in c["newest_in_batch"]]),
        "gap_between_batches": latency_stats([v for c in clients for v in c["batch_gaps"]]),
        "records_per_batch_median": statistics.median([n for c in clients for n in c["batch_sizes"]] or [0]),
        "record_kinds_whole_run_client_0": dict(sorted(kinds.items(), key=lambda kv: -kv[1])),
        **cpu_fields(window, cpu0, cpu1, clients_cpu0, clients_cpu1, zk0, zk1, busy0, busy1, args.zk_pid),
        "loadavg_at_start": [round(x, 2) for x in load],
        **({"server_profile": profiled} if profiled else {}),
    }


def run_sandboxes(server: AppServer, args) -> dict:
    created: list[dict] = []
    lock = threading.Lock()
    errors: list[str] = []
    started = time.monotonic()

    def create(n: int) -> None:
        for _ in range(n):
            try:
                sandbox = server_api_clone(server).create_sandbox()
            except Exception as exc:  # noqa: BLE001
                errors.append(str(exc))
                return
            with lock:
                created.append(sandbox)
            log(f"  sandbox {len(created)}/{args.sandboxes} up")

    per_thread = [args.sandboxes // args.create_threads + (1 if i < args.sandboxes % args.create_threads else 0)
                  for i in range(args.create_threads)]
    threads = [threading.Thread(target=create, args=(n,)) for n in per_thread]
    pool = None
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise RuntimeError(f"creating sandboxes failed: {errors[0]}")
        create_s = time.monotonic() - started
        pool = ClientPool(server.url, created, args.client_procs)
        joined = pool.wait_ready()
        time.sleep(2.0)  # settle after joins
        load = os.getloadavg()
        t0, cpu0, busy0, clients_cpu0 = time.monotonic(), server.cpu(), machine_busy_seconds(), pool.cpu()
        zk0 = zk_cpu(args.zk_pid)
        profile = ServerProfile(args.py_spy, args.profile, server.worker, args.seconds) if args.first_run else None
        results = pool.command("faults", args.seconds, args.fault_interval, args.fault_via, args.seed, None,
                               timeout=args.seconds + 400)
        t1, cpu1, busy1, clients_cpu1 = time.monotonic(), server.cpu(), machine_busy_seconds(), pool.cpu()
        zk1 = zk_cpu(args.zk_pid)
        profiled = profile.summary() if profile is not None else None
    finally:
        if pool is not None:
            pool.close()
        for sandbox in created:
            server.delete_sandbox(sandbox)
    faults = [f for r in results for f in r["faults"]]
    latencies = [f["latency_ms"] for f in faults if f["latency_ms"] is not None]
    by_op = {op: latency_stats([f["latency_ms"] for f in faults if f["op"] == op and f["latency_ms"] is not None])
             for op in ("stop_broker", "start_broker")}
    window = t1 - t0
    return {
        "sandboxes": len(created), "clients": joined, "create_all_s": round(create_s, 1),
        "fault_interval_s": args.fault_interval, "fault_via": args.fault_via, "window_s": round(window, 1),
        "faults": len(faults), "faults_refused": sum(1 for f in faults if not f["ok"]),
        "faults_without_record_received": sum(1 for f in faults if f["latency_ms"] is None),
        "refusals": collections.Counter(f["error"] for f in faults if not f["ok"]).most_common(3),
        "fault_latency": latency_stats(latencies), "fault_latency_by_op": by_op,
        "fault_answer": latency_stats([f["answer_ms"] for f in faults]),
        "records_received": sum(r["records"] for r in results),
        "delivery_latency_all_records": latency_stats([v for r in results for v in r["delivery_latencies"]]),
        **cpu_fields(window, cpu0, cpu1, clients_cpu0, clients_cpu1, zk0, zk1, busy0, busy1, args.zk_pid),
        "server_cpu_ms_per_fault": round(1000 * (cpu1.get("worker", 0) - cpu0.get("worker", 0)) / max(1, len(faults))),
        "loadavg_at_start": [round(x, 2) for x in load],
        **({"server_profile": profiled} if profiled else {}),
    }


def server_api_clone(server: AppServer) -> AppServer:
    """``requests.Session`` is not thread-safe: a shallow copy with its own session per thread."""
    import copy
    import requests
    clone = copy.copy(server)
    clone.http = requests.Session()
    return clone


# -- the driver ------------------------------------------------------------------------------------------------
SUMMARY = {
    "delivery": ["emitted_per_s", "received_per_client_per_s", "latency.p50_ms", "latency.p95_ms", "latency.p99_ms",
                 "latency.max_ms", "newest_record_in_batch.p99_ms", "gap_between_batches.p99_ms",
                 "server_cpu_pct_of_one_core.worker", "clients_cpu_pct_of_one_core", "other_processes_pct_of_all_cores"],
    "sandboxes": ["fault_latency.p50_ms", "fault_latency.p95_ms", "fault_latency.p99_ms", "fault_latency.max_ms",
                  "fault_answer.p50_ms", "fault_answer.p99_ms", "delivery_latency_all_records.p99_ms",
                  "server_cpu_pct_of_one_core.worker", "clients_cpu_pct_of_one_core", "other_processes_pct_of_all_cores",
                  "create_all_s"],
}


def dig(run: dict, key: str) -> Any:
    for part in key.split("."):
        run = run.get(part) if isinstance(run, dict) else None
    return run


def summarize(values: list) -> dict:
    values = [v for v in values if v is not None]
    if not values:
        return {}
    return {"median": round(statistics.median(values), 1), "min": round(min(values), 1),
            "max": round(max(values), 1), "runs": values}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", choices=("delivery", "sandboxes"), default="delivery")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--clients", type=int, default=1, help="delivery: clients watching the one sandbox")
    parser.add_argument("--produce-rate", type=int, default=950,
                        help="delivery: background produce, messages/s (each acknowledged message is one record; "
                             "follower fetches and HW moves add ~20 records/s)")
    parser.add_argument("--seconds", type=float, default=None,
                        help="measured window (default: delivery 10 s, sandboxes 60 s)")
    parser.add_argument("--warmup", type=float, default=3.0, help="delivery: seconds of producing before measuring")
    parser.add_argument("--sandboxes", type=int, default=30)
    parser.add_argument("--fault-interval", type=float, default=2.0, help="sandboxes: seconds between faults per sandbox")
    parser.add_argument("--fault-via", choices=("socket", "http"), default="socket")
    parser.add_argument("--create-threads", type=int, default=3, help="sandboxes: parallel sandbox creation")
    parser.add_argument("--client-procs", type=int, default=None,
                        help="processes hosting the clients (default: 1 per 10 clients, at most 5)")
    parser.add_argument("--threads", type=int, default=200, help="gunicorn worker threads (kclab serve's default)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--zk", metavar="HOST:PORT", help="use this ZooKeeper instead of starting the bench's own")
    parser.add_argument("--wait-quiet", type=float, metavar="PCT",
                        help="before each run, wait (up to --wait-max s) until the machine is at most PCT %% busy")
    parser.add_argument("--wait-max", type=float, default=300, metavar="S", help="see --wait-quiet (default 300)")
    parser.add_argument("--py-spy", metavar="PATH", help="py-spy executable: profile the server worker in run 1")
    parser.add_argument("--profile", type=Path, metavar="FILE",
                        help="with --py-spy: write run 1's collapsed stacks here (top functions go into the JSON)")
    parser.add_argument("--json", action="store_true", help="print every number of every run as JSON on stdout")
    args = parser.parse_args(argv)
    # SIGTERM (and SIGINT, which a background job may have ignored) unwind through the
    # ``finally`` blocks, so the server, the browser and ZooKeeper are stopped and chroots deleted.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if args.seconds is None:
        args.seconds = 10.0 if args.scenario == "delivery" else 60.0
    n_clients = args.clients if args.scenario == "delivery" else args.sandboxes
    if args.client_procs is None:
        args.client_procs = max(1, min(5, math.ceil(n_clients / 10)))

    import logging
    logging.getLogger("kazoo").setLevel(logging.ERROR)
    from backend.zkserver import server as zk_server

    results: dict[str, Any] = {
        "command": " ".join([".venv/bin/python", "bench/web_delivery.py", *(argv if argv is not None else sys.argv[1:])]),
        "scenario": args.scenario, "machine": machine(), "runs": []}
    zk = None
    server = None
    with tempfile.TemporaryDirectory(prefix="kclab-web-bench-") as tmp:
        try:
            if args.zk:
                hosts = args.zk
            else:
                zk = zk_server.ZooKeeperServer(force_sync=False).start()
                hosts = zk.hosts
            args.zk_pid = zk.pid if zk is not None else None
            log(f"ZooKeeper at {hosts}; starting kclab serve ...")
            server = AppServer(hosts, Path(tmp), args.threads)
            log(f"serving at {server.url} (gunicorn worker pid {server.worker})")
            for i in range(args.runs):
                args.first_run = i == 0
                quiet = wait_quiet(args.wait_quiet, args.wait_max)
                run = run_delivery(server, args) if args.scenario == "delivery" else run_sandboxes(server, args)
                run["machine_before_run"] = quiet
                results["runs"].append(run)
                log(f"run {i + 1}/{args.runs}: " + json.dumps({k: dig(run, k) for k in SUMMARY[args.scenario]}))
        finally:
            if server is not None:
                server.stop()
                leftovers = _delete_leftover_chroots(hosts, server.chroots)
                if leftovers:
                    log(f"the server left {len(leftovers)} sandbox chroot(s) behind; deleted them")
            if zk is not None:
                zk.stop()
    results["summary"] = {k: summarize([dig(r, k) for r in results["runs"]]) for k in SUMMARY[args.scenario]}
    if args.json:
        json.dump(results, sys.stdout, indent=2)
        print()
    else:
        for key, s in results["summary"].items():
            print(f"{key:45s} median {s.get('median')!s:>8} min {s.get('min')!s:>8} max {s.get('max')!s:>8}")
    return 0


def _delete_leftover_chroots(hosts: str, chroots: list[str]) -> list[str]:
    """The sandboxes' chroots that are still there (a clean stop deletes them all): delete them."""
    from bench.zk_tools import close, delete_tree, started_client
    client = started_client(hosts)
    try:
        return [chroot for chroot in chroots if delete_tree(client, chroot)]
    finally:
        close(client)


if __name__ == "__main__":
    raise SystemExit(main())
