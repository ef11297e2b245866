"""Open page sockets against a real ``kclab serve``: how long /healthz and a sandbox's API take
with N sockets open — idle, then following one class cluster while it changes — for each
variant of the server, side by side in one run:

- ``capped``: the default, gunicorn gthread with 1,000 socket threads + 64 for HTTP and the cap;
- ``uncapped200``: the server before issue 11, 200 threads and no cap;
- ``gevent``: the same app under gunicorn's gevent worker (every thread a greenlet), when gevent
  is importable from ``GEVENT_PATH`` (``pip install --target /tmp/gevent-pkgs gevent==26.9.0``;
  gevent is no dependency of the app).

Besides /healthz with the sockets idle and following, it measures /healthz while the controller
does a burst of CPU work (a topic of 100 partitions is created, then deleted): a gevent hub is
blocked by such work, threads are not.

Run: ``.venv/bin/python bench/sockets.py [N] [runs]``; results in docs/performance.md.

The sockets are raw websockets on one asyncio loop (tests/hardening/raw_sockets.py), so the
client side costs almost nothing next to the server."""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from urllib.parse import urlparse

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.hardening.raw_sockets import open_many  # noqa: E402
from tests.hardening.server import serve  # noqa: E402


VARIANTS = {"capped": ((), {}), "uncapped200": (("--max-sockets", "0", "--threads", "200"), {}),
            # gevent's pool is gunicorn's worker_connections, which kclab serve derives from --threads
            "gevent": (("--max-sockets", "0", "--threads", "1100"), {"GUNICORN_WORKER": "gevent"})}
GEVENT_PATH = os.environ.get("GEVENT_PATH", "/tmp/gevent-pkgs")
UNCAPPED_SOCKETS = 260
"""The uncapped server is asked for only this many: past its 200 threads it answers nothing more."""
TIMEOUT_S = 10.0


def timed(served, method, path, body=None, headers=None) -> float:
    """Milliseconds, or ``inf`` when no answer came within TIMEOUT_S (a frozen server)."""
    started = time.perf_counter()
    try:
        status, answer, _ = served.call(method, path, body, headers, timeout=TIMEOUT_S)
    except OSError:
        return float("inf")
    return (time.perf_counter() - started) * 1000 if status < 400 else float("inf")


def healthz_while_busy(served, box, headers) -> float:
    """The slowest /healthz while the controller creates and deletes a topic of 100 partitions."""
    latencies, done = [], threading.Event()

    def poll():
        while not done.is_set():
            latencies.append(timed(served, "GET", "/healthz"))
            time.sleep(0.02)
    poller = threading.Thread(target=poll)
    poller.start()
    try:
        for op in ({"op": "create_topic", "topic": "busy", "partitions": 100, "replication_factor": 3},
                   {"op": "delete_topic", "topic": "busy"}):
            served.call("POST", f"/api/sandboxes/{box['id']}/faults", op, headers, timeout=60)
            time.sleep(1.0)  # the controller's work follows the znode write
    finally:
        done.set()
        poller.join()
    return max(latencies)


async def run(served, count: int) -> dict:
    url = urlparse(served.url)
    _, box, _ = served.call("POST", "/api/sandboxes", {"cluster": {"brokers": [0, 1, 2]}})
    headers = {"X-Sandbox-Token": box["token"]}
    loop = asyncio.get_running_loop()
    out = {"baseline_healthz_ms": statistics.median([await loop.run_in_executor(None, timed, served, "GET", "/healthz")
                                                     for _ in range(9)])}
    started = time.perf_counter()
    sockets, refused = await open_many(url.hostname, url.port, count, timeout=30,
                                       join={"sandbox": box["id"], "token": box["token"]})
    out.update(opened=len(sockets), refused=refused, open_s=round(time.perf_counter() - started, 1))
    out["idle_healthz_ms"] = statistics.median([await loop.run_in_executor(None, timed, served, "GET", "/healthz")
                                                for _ in range(3 if not sockets else 9)])
    out["worker_rss_mb"] = served.rss_kb(served.worker_pid()) // 1024
    if out["idle_healthz_ms"] == float("inf"):  # frozen: nothing more to measure
        for sock in sockets:
            sock.close()
        return out
    following = []
    for n in range(6):  # the class cluster changes: every socket gets each change's records
        op = {"op": "stop_broker", "broker": 2} if n % 2 == 0 else {"op": "start_broker", "broker": 2}
        await loop.run_in_executor(None, served.call, "POST", f"/api/sandboxes/{box['id']}/faults", op, headers)
        following += [await loop.run_in_executor(None, timed, served, "GET", "/healthz") for _ in range(3)]
    out["following_healthz_ms"] = statistics.median(following)
    out["following_healthz_max_ms"] = max(following)
    out["busy_healthz_max_ms"] = await loop.run_in_executor(None, healthz_while_busy, served, box, headers)
    out["api_snapshot_ms"] = statistics.median([await loop.run_in_executor(
        None, timed, served, "GET", f"/api/sandboxes/{box['id']}/snapshot", None, headers) for _ in range(5)])
    out["sockets_with_records"] = sum(1 for s in sockets if s.records)
    for sock in sockets:
        sock.close()
    return out


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    for n in range(runs):
        for name, (args, env) in VARIANTS.items():  # alternated, so all see the same machine
            if env and not Path(GEVENT_PATH, "gevent").is_dir():
                continue
            os.environ["PYTHONPATH"] = GEVENT_PATH if env else ""
            with tempfile.TemporaryDirectory() as tmp:
                served = serve(Path(tmp), *args, MAX_SANDBOXES_PER_CLIENT="40", FAULTS_PER_SECOND="1000", **env)
                try:
                    result = asyncio.run(run(served, UNCAPPED_SOCKETS if name == "uncapped200" else count))
                except (AssertionError, asyncio.TimeoutError) as error:
                    result = {"failed": repr(error)[:200]}
                finally:
                    served.stop()
            print(f"run={n} variant={name} sockets={count} load={os.getloadavg()[0]:.2f} {result}", flush=True)


if __name__ == "__main__":
    main()
