"""A class's hand-out of private copies, timed: ``kclab serve --workers 1`` on the bench's own
ZooKeeper, a class of ``--students`` following a default demo with one crash (replayed in every
copy), then ``--rounds`` hand-outs in a row (the second and later close each old copy first).

For each hand-out: how long the fork request took to answer (it only starts the work), how long
until every copy was built (polling ``GET /api/classes/<id>/handout`` as a reloaded instructor
page would), copies a second, failures with their reasons; and — side by side, in the same run —
the round trip of another student's faults on their own sandbox while nothing else runs and
while the hand-out runs (the hand-out's threads must not starve them: issue 14 item 4). With
``--copy-threads 2,4,8`` the server's hand-out pool (``KCLAB_COPY_THREADS``) is compared, one
server after the other in the same run.

    .venv/bin/python bench/handout.py --students 40 --rounds 2 --json > /tmp/handout.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.app_server import AppServer, Refused  # noqa: E402
from bench.measure import latency_stats, log, machine  # noqa: E402

INSTRUCTOR = {"X-Instructor-Token": "bench-instructor-token"}


def call(server: AppServer, method: str, path: str, body=None, expect=(200, 201, 202)):
    response = server.http.request(method, server.url + path.lstrip("/"), json=body, headers=INSTRUCTOR, timeout=120)
    if response.status_code not in expect:
        raise RuntimeError(f"{method} {path} -> {response.status_code}: {response.text[:300]}")
    return response.json()


def probe(server: AppServer, sandbox: dict, stop: threading.Event, out: list[float]) -> None:
    """A student breaking their own cluster: stop and start broker 0 in turn, one at a time (the
    turn is kept in ``sandbox`` from one probe to the next), as ``classroom.py``'s students do. A
    stop, not a crash: a crashed broker cannot start again until its session expires, 0.5 s later.
    A refused fault is counted in ``sandbox["refused"]``, and the turn stays."""
    while not stop.is_set():
        n = sandbox.get("faults", 0)
        op = "stop_broker" if n % 2 == 0 else "start_broker"
        started = time.perf_counter()
        try:
            server.api("POST", f"/api/sandboxes/{sandbox['id']}/faults", {"op": op, "broker": 0},
                       token=sandbox["token"], address=sandbox["address"])
        except Refused as refused:
            sandbox.setdefault("refused", []).append(f"{op}: {refused.status} {refused.body.get('error', '')[:120]}")
        else:
            out.append((time.perf_counter() - started) * 1000)
            sandbox["faults"] = n + 1
        stop.wait(0.5)


def probed(server: AppServer, sandbox: dict, work) -> tuple[object, list[float]]:
    """``work()``'s result, and the probe's round trips while it ran."""
    stop, times = threading.Event(), []
    thread = threading.Thread(target=probe, args=(server, sandbox, stop, times))
    thread.start()
    try:
        return work(), times
    finally:
        stop.set()
        thread.join(60)


def hand_out(server: AppServer, room: dict) -> dict:
    started = time.perf_counter()
    answer = call(server, "POST", f"/api/classes/{room['id']}/fork")
    answered = time.perf_counter() - started
    while True:
        status = call(server, "GET", f"/api/classes/{room['id']}/handout")
        if status["status"] == "done":
            break
        time.sleep(0.2)
    took = time.perf_counter() - started
    return {"answered_ms": round(answered * 1000, 1), "answer_built": answer["handout"]["built"],
            "all_built_s": round(took, 2), "built": status["built"], "failed": len(status["failed"]),
            "copies_per_s": round(status["built"] / took, 2),
            "reasons": sorted({f["error"][:120] for f in status["failed"]})}


def run(args, zk_hosts: str, data: Path, copy_threads: str) -> dict:
    os.environ["KCLAB_COPY_THREADS"] = copy_threads  # the server's hand-out pool (web/handout.py)
    server = AppServer(zk_hosts, data, threads=64, serve_args=(
        "--workers", "1", "--max-sandboxes", str(args.max_sandboxes or args.students + 2)))
    try:
        room = call(server, "POST", "/api/classes", {})
        for n in range(args.students):
            server.http.post(server.url + "api/classes/join", json={"code": room["code"], "name": f"s{n}"},
                             timeout=30).raise_for_status()
        call(server, "POST", f"/api/classes/{room['id']}/session", {})
        call(server, "POST", f"/api/classes/{room['id']}/faults", {"op": "crash_broker", "broker": 1})
        sandbox = server.create_sandbox()  # the probe's: a student who is already breaking their copy
        _, quiet = probed(server, sandbox, lambda: time.sleep(args.quiet_seconds))
        rounds = []
        for n in range(args.rounds):
            result, during = probed(server, sandbox, lambda: hand_out(server, room))
            result["probe_during"] = latency_stats(during)
            rounds.append(result)
            log(f"{copy_threads} copy threads, hand-out {n + 1}: {json.dumps(result)}")
        return {"copy_threads": int(copy_threads), "probe_quiet": latency_stats(quiet), "handouts": rounds,
                "probe_refused": sandbox.get("refused", [])}
    finally:
        server.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=2, help="hand-outs in a row to the same class")
    parser.add_argument("--max-sandboxes", type=int, default=None, help="default: the class, its demo and the probe")
    parser.add_argument("--quiet-seconds", type=float, default=10.0, help="the probe's window before any hand-out")
    parser.add_argument("--copy-threads", default="4", help="variants, side by side: e.g. 2,4,8")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    from backend.zkserver.server import ZooKeeperServer
    load = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="kclab-handout-") as tmp, ZooKeeperServer(force_sync=False) as zk:
        variants = []
        for n, threads in enumerate(args.copy_threads.split(",")):
            data = Path(tmp) / str(n)
            data.mkdir()
            variants.append({"load_at_start": [round(x, 2) for x in os.getloadavg()], **run(args, zk.hosts, data,
                                                                                            threads.strip())})
        result = {"machine": machine(), "students": args.students, "load_before": [round(x, 2) for x in load],
                  "variants": variants}
    result["load_after"] = [round(x, 2) for x in os.getloadavg()]
    print(json.dumps(result, indent=1) if args.json else result)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
