"""A classroom on one machine: N students, each with a private sandbox and a real Socket.IO client
(websocket transport), acting about once every ``--fault-interval`` s (spread over the interval, or
all within ``--spread`` s of it), while every one of them also follows the instructor's class demo
(a fault every ``--demo-interval`` s on the class's shared cluster).

What a student does is ``--mix``: ``issue`` (the default since issue 14's thirty-fourth round) is
the issue's own list — crash, restart, controlled shutdown, preferred election, produce
(``bench.socket_clients.STUDENT_CYCLE``), with the demo shutting broker 1 down and starting it
again; ``stop-start`` is what the rounds before measured: stop a broker (a clean exit) and start
it again, the demo the same. Only ``issue`` runs on issue 14's start commit, which had no
``stop_broker``.

Variants, measured side by side in one run on the same ZooKeeper (issue 14's table):

* ``today`` — the tree at ``--today`` (default: issue 14's start commit), exported with
  ``git archive`` into a temporary directory: one process, as it was;
* ``head-1w`` — this tree, ``kclab serve --workers 1``;
* ``head-2w`` — this tree, ``kclab serve --workers 2`` (its own child redis-server);
* ``today-1w``, ``today-2w`` — the ``--today`` tree with ``--workers 1`` / ``2``, for a ``--today``
  commit that has the option (issue 14's own later rounds).

For each: how many sandboxes it accepts (``--accept-up-to``: default sandboxes are created until
one is refused) and the server's memory per sandbox (its process tree's RSS), the idle CPU per
sandbox (the server's process tree over ``--idle-seconds`` with every sandbox idle and no page
open), then the class: fault -> that student's page p99 (the time from sending a fault to the
student's client receiving the fault's record, by seq), class demo -> every student p99 (the
instructor's fault to each student's client receiving its record), records lost (a fault whose
record never came) and duplicates, the server's CPU per fault (the window's CPU above the idle
rate, over the faults applied), and the faults a second the server carried out. ZooKeeper is the bench's own (its CPU is not the server's).
With ``--fault-intervals 10,6.7,5,4`` the class runs once at each interval (every variant at each,
their order alternated) and the JSON's ``ramp`` says, for each variant, the most faults a second
it carried with both p99s under ``--aim-ms`` (250), nothing lost and nothing refused by the server for
its own sake (``faults_refused_by_the_server``): the issue's "2
workers vs 1, faults/s at p99 < 250 ms" (``two_workers_over_one``).
How long a fault takes to be answered (``fault_answered_by_op``, ``demo_answered``: the request
returns once the fault is carried out, a start once the broker has registered) is what a page's
button waits for; its socket gives up after 10 s (``static/js/socket.js``).

    .venv/bin/python bench/classroom.py --students 36 --accept-up-to 41 --seconds 60 --json > /tmp/classroom.json
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import server_threads  # noqa: E402
from bench.app_server import AppServer, Refused  # noqa: E402
from bench.load_watch import InstructorPage, LoadWatch  # noqa: E402
from bench.measure import (archived, by_minute, children, during_a_pause, gc_pause_stats,  # noqa: E402
                           gc_pauses, latency_stats, log, machine, machine_busy_seconds, machine_stolen_seconds)
from bench.process_tree import tree_cpu_seconds, tree_rss_mb  # noqa: E402
from bench.ramp import ramp, server_failed  # noqa: E402
from bench.socket_clients import MIXES, ClientPool, Watcher, demo_fault, drive_faults, fault_result  # noqa: E402
from bench.web_delivery import server_api_clone  # noqa: E402

TODAY = "335c21b"
INSTRUCTOR = {"X-Instructor-Token": "bench-instructor-token"}


class ClassWatcher(Watcher):
    """A student's page: its own sandbox, and the class demo it follows (``join_class``)."""

    def __init__(self, url: str, sandbox: dict, count_kinds: bool = False) -> None:
        self.demo: dict[int, float] = {}
        self.demo_duplicates = 0
        super().__init__(url, sandbox, count_kinds)
        self.sio.on("records", self._on_any)
        joined = self.sio.call("join_class", {"class": sandbox["class"], "token": sandbox["student_token"]},
                               timeout=60)
        if not joined or not joined.get("ok"):
            raise RuntimeError(f"join_class refused: {joined}")
        self.session = joined["class"]["session"]

    def _on_any(self, payload) -> None:
        if payload.get("sandbox") == self.sandbox:
            return self._on_records(payload)
        if payload.get("sandbox") == getattr(self, "session", None) and "head" in payload:
            now = time.time() * 1000
            for record in payload["records"]:
                if record["seq"] in self.demo:
                    self.demo_duplicates += 1
                else:
                    self.demo[record["seq"]] = now


def classroom_process(url: str, students: list[dict], conn, _count_kinds: bool) -> None:
    """ClientPool's child: one ClassWatcher per student; ("faults", ...) -> ("result", ...)."""
    watchers: list[ClassWatcher] = []
    try:
        for student in students:
            watchers.append(ClassWatcher(url, student))
        conn.send(("ready", len(watchers)))
        faults = drive_faults(url, watchers, *conn.recv()[1:])
        time.sleep(3.0)  # the last records are on their way
        for watcher in watchers:  # no record may arrive while the results are read
            watcher.close()
        result = fault_result(watchers, faults)
        result["demo"] = [dict(w.demo) for w in watchers]
        result["demo_duplicates"] = sum(w.demo_duplicates for w in watchers)
        result["duplicates"] = sum(w.duplicates for w in watchers)
        result["unasked"] = dict(sum((w.unasked for w in watchers), Counter()))
        conn.send(("result", result))
    except Exception as exc:  # noqa: BLE001 - the bench reports it and cleans up
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        for watcher in watchers:
            watcher.close()


def accept(server: AppServer, up_to: int, overloaded: list[str]) -> tuple[list[dict], str | None]:
    """Default sandboxes until one is refused (its message returned) or ``up_to`` run, three at a time.
    A refusal because the worker is behind is no cap: that creation is tried again after the
    refusal's ``retry_after``, as its student would, and noted in ``overloaded``."""
    made: list[dict] = []
    refusal: list[str] = []
    lock = threading.Lock()

    def create() -> None:
        api = server_api_clone(server)
        while not refusal:
            with lock:
                if len(made) >= up_to:
                    return
                made.append({})  # a place, filled below
                slot = len(made) - 1
            while True:
                try:
                    made[slot] = api.create_sandbox()
                    break
                except RuntimeError as exc:
                    if not (isinstance(exc, Refused) and isinstance(exc.body, dict) and exc.body.get("overloaded")):
                        refusal.append(str(exc))
                        return
                    with lock:  # a worker behind (web/load_guard.py): a student would click again
                        overloaded.append(str(exc))
                    time.sleep(exc.body["retry_after"])
    threads = [threading.Thread(target=create) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [m for m in made if m], (refusal[0] if refusal else None)


def demo_driver(server: AppServer, class_id: str, seconds: float, interval: float, out: list,
                mix: str) -> threading.Thread:
    """The instructor: a fault every ``interval`` s on the class cluster (``demo_fault``).

    Each fault on a connection of its own (``Connection: close``): gunicorn closes a keep-alive
    connection idle for 2 s, and the demo acts every 3 s, so a reused one was now and then reset
    under the POST and the demo fault lost (a browser would resend it; ``requests`` does not)."""
    api = server_api_clone(server)
    headers = {**INSTRUCTOR, "Connection": "close"}

    def run() -> None:
        end, step = time.monotonic() + seconds, 0
        while time.monotonic() < end:
            sent = time.time() * 1000
            try:
                response = api.http.post(f"{server.url}api/classes/{class_id}/faults", json=demo_fault(mix, step),
                                         headers=headers, timeout=60)
                out.append((sent, response.json().get("seq"), time.time() * 1000 - sent))
            except Exception as exc:  # noqa: BLE001
                log(f"  demo fault failed: {exc}")
            step += 1
            time.sleep(max(0.0, interval - (time.time() * 1000 - sent) / 1000))
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def run_variant(name: str, source: Path, serve_args: tuple[str, ...], hosts: str, args, tmp: Path) -> dict:
    data = Path(tempfile.mkdtemp(prefix=f"data-{name}-", dir=tmp))  # a variant may be listed twice, to alternate
    server = AppServer(hosts, data, args.threads, source=source, serve_args=serve_args,
                       env={"KCLAB_GC_PAUSES": str(data / "gc-pauses")})
    created: list[dict] = []
    pool = None
    try:
        log(f"[{name}] serving at {server.url}; creating up to {args.accept_up_to} sandboxes")
        rss0 = tree_rss_mb(server.proc.pid)
        overloaded: list[str] = []
        c0, t0 = tree_cpu_seconds(server.proc.pid), time.monotonic()
        created, refusal = accept(server, args.accept_up_to, overloaded)
        accepted = len(created)
        creation = {"s": round(time.monotonic() - t0, 1),  # the class start: every student opens a page
                    "server_cpu_ms_each": round(1000 * (tree_cpu_seconds(server.proc.pid) - c0) / max(1, accepted), 1)}
        time.sleep(5)
        rss_per_sandbox = (tree_rss_mb(server.proc.pid) - rss0) / max(1, accepted)
        log(f"[{name}] accepted {accepted}; refusal: {refusal}")
        for sandbox in created[args.students:]:  # the class needs ``students`` of them
            server.delete_sandbox(sandbox)
        created = created[:args.students]
        time.sleep(5)
        load = os.getloadavg()
        c0, t0 = tree_cpu_seconds(server.proc.pid), time.monotonic()
        time.sleep(args.idle_seconds)
        idle_rate = (tree_cpu_seconds(server.proc.pid) - c0) / (time.monotonic() - t0)
        room = server.http.post(f"{server.url}api/classes", json={}, headers=INSTRUCTOR).json()
        session = server.http.post(f"{server.url}api/classes/{room['id']}/session", json={}, headers=INSTRUCTOR)
        if not session.ok:  # e.g. the cap is full: the demo needs a place of its own (--max-sandboxes N+1)
            raise RuntimeError(f"the class demo did not start: {session.status_code} {session.text[:200]}")
        for sandbox in created:
            joined = server.http.post(f"{server.url}api/classes/join", json={"code": room["code"], "name": "s"},
                                      headers={"X-Forwarded-For": sandbox["address"]}).json()
            sandbox.update({"class": room["id"], "student_token": joined["token"]})
        pool = ClientPool(server.url, created, args.client_procs, target=classroom_process)
        joined = pool.wait_ready()
        demo: list = []
        threads0 = server_threads.workers_snapshot(children(server.proc.pid)) \
            if args.thread_account else {}
        rss1 = tree_rss_mb(server.proc.pid)
        c1, t1, k1, w1 = tree_cpu_seconds(server.proc.pid), time.monotonic(), pool.cpu(), time.time()
        busy1, stolen1 = machine_busy_seconds(), machine_stolen_seconds()
        driver = demo_driver(server, room["id"], args.seconds, args.demo_interval, demo, args.mix)
        lateness = LoadWatch(server, args.seconds)
        instructor = InstructorPage(server, room["id"], INSTRUCTOR, args.seconds)
        results = pool.command("faults", args.seconds, args.fault_interval, "http", args.seed, args.spread,
                               args.mix, timeout=args.seconds + 400)
        driver.join(60)
        lateness.join(10)
        instructor.join(35)
        c2, t2, k2, w2 = tree_cpu_seconds(server.proc.pid), time.monotonic(), pool.cpu(), time.time()
        busy2, stolen2 = machine_busy_seconds(), machine_stolen_seconds()
        rss2 = tree_rss_mb(server.proc.pid)
        threads = server_threads.workers_account(args.thread_account, threads0, t2 - t1)
    finally:
        if pool is not None:
            pool.close()
        for sandbox in created:
            server.delete_sandbox(sandbox)
        server.stop()
    faults = [f for r in results for f in r["faults"]]
    failed = sum(1 for f in faults if server_failed(f))
    kept_log = _keep_server_log(server.log_path, name) if failed else None
    pauses = gc_pauses(sorted(data.glob("gc-pauses.*")), w1, w2)
    applied = sum(1 for f in faults if f["ok"]) + len(demo)
    window = t2 - t1
    demo_latency_at = [(sent, got[seq] - sent) for sent, seq, _ in demo if seq is not None for r in results
                       for got in r["demo"] if seq in got]
    demo_latency = [latency for _, latency in demo_latency_at]
    demo_missing = sum(1 for sent, seq, _ in demo if seq is not None for r in results for got in r["demo"]
                       if seq not in got)
    return {
        "variant": name, "mix": args.mix, "serve_args": list(serve_args), "loadavg_at_start": [round(x, 2) for x in load],
        "accepted": accepted, "refused_with": refusal, "students": joined,
        "creations_refused_as_overloaded": len(overloaded), "creating_them": creation,
        "server_rss_mb_per_sandbox": round(rss_per_sandbox, 2),
        # A long class: does the server grow while the students act (a 30-60 min lab)?
        "server_rss_mb_class_start_end": [round(rss1), round(rss2)],
        "idle_cpu_pct_of_core_per_sandbox": round(100 * idle_rate / max(1, len(created)), 3),
        "server_cpu_ms_per_fault": round(1000 * max(0.0, (c2 - c1) - idle_rate * window) / max(1, applied), 1),
        "server_cpu_pct_of_one_core": round(100 * (c2 - c1) / window, 1),
        # The students' clients, ZooKeeper and the bench share the server's machine: when it is
        # busy near 100 % of every core, the latencies are the machine's as much as the server's.
        "clients_cpu_pct_of_one_core": round(100 * (k2 - k1) / window, 1),
        "machine_busy_pct_of_all_cores": round(100 * (busy2 - busy1) / window / os.cpu_count(), 1),
        "machine_stolen_pct_of_all_cores": round(100 * (stolen2 - stolen1) / window / os.cpu_count(), 1),
        "faults_per_s": round(applied / window, 2), "faults": len(faults),
        "faults_refused": sum(1 for f in faults if not f["ok"]),
        "faults_resent": sum(1 for f in faults if f.get("resent")),
        # Refused for the server's own sake (its load, or a 500), not as Kafka would (a produce to a
        # crashed leader whose session has not expired times out in Kafka too).
        "faults_refused_by_the_server": sum(1 for f in faults if f.get("refused_for_load") or server_failed(f)),
        # A 500 is a bug, whatever the load: its traceback is in the server's log, kept here.
        "server_failed": failed, **({"server_log_kept": str(kept_log)} if kept_log else {}),
        "refusals": dict(Counter(str(f["error"])[:120] for f in faults if not f["ok"]).most_common(5)),
        "fault_records_lost": sum(1 for f in faults if f["ok"] and f["latency_ms"] is None),
        # The broadcaster's batches to students' own pages (each a socket message, JSON and a writer
        # thread's wake-up), per fault a student made: what a batch spacing costs.
        "student_batches_per_fault": round(sum(r.get("batches", 0) for r in results)
                                           / max(1, sum(1 for f in faults if f["ok"])), 1),
        "duplicates": sum(r["duplicates"] for r in results),
        # Brokers' connections dropped and sessions lost that no student asked for, as the students'
        # pages told them, by the cause each record named (``lab_server_late``, ``zookeeper_...``).
        "unasked_on_pages": dict(sum((Counter(r.get("unasked", {})) for r in results), Counter())),
        "fault_to_page": latency_stats([f["latency_ms"] for f in faults if f["latency_ms"] is not None]),
        "fault_to_record_made": latency_stats([f["made_ms"] for f in faults if f.get("made_ms") is not None]),
        "fault_to_record_made_by_op": {op: latency_stats([f["made_ms"] for f in faults
                                                          if f["op"] == op and f.get("made_ms") is not None])
                                       for op in sorted({f["op"] for f in faults})},
        "fault_answered_by_op": {op: latency_stats([f["answer_ms"] for f in faults if f["op"] == op and f["ok"]])
                                 for op in sorted({f["op"] for f in faults})},
        "record_made_to_page": latency_stats([f["brought_ms"] for f in faults if f.get("brought_ms") is not None]),
        "demo_faults": len(demo), "demo_records_lost": demo_missing,
        "demo_duplicates": sum(r["demo_duplicates"] for r in results),
        "demo_to_every_student": latency_stats(demo_latency),
        "demo_answered": latency_stats([took for _, _, took in demo]),
        # What the slowest faults waited for: the share of the slowest 1 % whose way to their first
        # record overlapped a collection of 20 ms or more (every thread of the worker waits it out).
        "gc_pauses": gc_pause_stats(pauses, window),
        "worker_lateness": lateness.summary(),
        # What the instructor's page said of the server every 5 s (``static/js/views/server-load.js``).
        "instructor_page": instructor.summary(),
        "slowest_1pct_made_during_a_gc_pause": _slowest_during_pause(faults, pauses),
        **({"by_minute": by_minute(faults, demo_latency_at, lateness.stolen, pauses, w1 * 1000,
                                           lateness.rss, lateness.samples)}
           if window >= 120 else {}),
        **({"threads_pct_of_core": threads} if threads else {}),
    }


def _keep_server_log(log_path: Path, variant: str) -> Path:
    """Copy a run's server log out of the bench's temporary directory (which goes at the end)."""
    kept = Path(tempfile.gettempdir()) / f"kclab-classroom-{variant}-{time.strftime('%Y%m%d-%H%M%S')}-server.log"
    kept.write_bytes(log_path.read_bytes())
    log(f"[{variant}] the server answered 500: its log is kept at {kept}")
    return kept


def _slowest_during_pause(faults: list[dict], pauses: list[dict]) -> str:
    made = sorted((f for f in faults if f.get("made_ms") is not None), key=lambda f: -f["made_ms"])
    slowest = made[:max(1, len(made) // 100)]
    waits = [(f["sent_ms"] / 1000, (f["sent_ms"] + f["made_ms"]) / 1000) for f in slowest]
    return f"{during_a_pause(waits, pauses, 20.0)} of {len(slowest)}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--accept-up-to", type=int, default=None, help="sandboxes to try (default: --students)")
    parser.add_argument("--seconds", type=float, default=60.0, help="the class's measured window")
    parser.add_argument("--idle-seconds", type=float, default=20.0)
    parser.add_argument("--fault-interval", type=float, default=10.0, help="seconds between a student's faults")
    parser.add_argument("--fault-intervals", type=lambda text: [float(x) for x in text.split(",")], default=None,
                        metavar="S,S,...", help="a ramp: the class once at each of these intervals (e.g. 10,6.7,5,4), "
                                                "every variant at each, and the fastest rate each held inside --aim-ms")
    parser.add_argument("--aim-ms", type=float, default=250.0, help="the ramp's aim for both p99s (issue 14: 250)")
    parser.add_argument("--spread", type=float, default=None,
                        help="the students' faults fall within this many seconds of each interval (default: the "
                             "whole interval, spread out; 2: the class all acting at once, when told to)")
    parser.add_argument("--demo-interval", type=float, default=3.0, help="seconds between the demo's faults")
    parser.add_argument("--mix", choices=MIXES, default="issue",
                        help="what students do: issue 14's crash, restart, controlled shutdown, preferred election "
                             "and produce (default), or stop-start, the rounds before the thirty-fourth")
    parser.add_argument("--variants", default="today,head-1w,head-2w")
    parser.add_argument("--today", default=TODAY, help="the commit measured as today")
    parser.add_argument("--threads", type=int, default=64)
    parser.add_argument("--client-procs", type=int, default=None, help="default: one per 20 students, at most 5")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--serve-arg", action="append", default=[], metavar="ARG",
                        help="one more argument to this tree's kclab serve (head variants only), e.g. "
                             "--serve-arg=--shed-zk-after-ms=0")
    parser.add_argument("--max-sandboxes", type=int, default=None,
                        help="the head variants' cap (default: what the machine holds, web/capacity.py)")
    parser.add_argument("--thread-account", metavar="PY_SPY",
                        help="py-spy's path: add the workers' CPU by kind of thread over the class")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    args.accept_up_to = max(args.accept_up_to or args.students, args.students)
    args.client_procs = args.client_procs or max(1, min(5, -(-args.students // 20)))
    from backend.zkserver.server import ZooKeeperServer
    results: dict[str, Any] = {"command": " ".join(["bench/classroom.py", *(argv or sys.argv[1:])]),
                               "machine": machine(), "variants": []}
    with tempfile.TemporaryDirectory(prefix="kclab-classroom-") as tmp, ZooKeeperServer(force_sync=False) as zk:
        today = archived(args.today, Path(tmp) / "today") if "today" in args.variants else None
        # ``today``: that tree's own defaults; ``today-1w`` / ``today-2w``: a tree that has --workers.
        sources = {"today": (today, ()), "today-1w": (today, ("--workers", "1")),
                   "today-2w": (today, ("--workers", "2")), "head-1w": (ROOT, ("--workers", "1")),
                   "head-2w": (ROOT, ("--workers", "2"))}
        variants = args.variants.split(",")
        for step, interval in enumerate(args.fault_intervals or [args.fault_interval]):
            args.fault_interval = interval
            # A ramp alternates the variants' order from one rate to the next, so that neither
            # always runs first on a machine whose host steals more at some minutes than others.
            for name in (variants if step % 2 == 0 else variants[::-1]):
                source, serve_args = sources[name]
                if args.max_sandboxes and name != "today":  # issue 14's start had no --max-sandboxes
                    serve_args = (*serve_args, "--max-sandboxes", str(args.max_sandboxes))
                if name.startswith("head"):  # flags the --today tree may not know
                    serve_args = (*serve_args, *args.serve_arg)
                random.seed(args.seed)
                result = run_variant(name, source, serve_args, zk.hosts, args, Path(tmp))
                result["fault_interval_s"] = interval
                log(json.dumps(result))
                results["variants"].append(result)
    if args.fault_intervals:
        results["ramp"] = ramp(results["variants"], args.aim_ms)
    if args.json:
        json.dump(results, sys.stdout, indent=2)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
