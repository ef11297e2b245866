"""Open page sockets against a real ``kclab serve`` (gunicorn gthread + the socket cap): how long
/healthz and a sandbox's API take with N sockets open — idle, then following one class cluster
while it changes. Run: ``.venv/bin/python -m bench.sockets [N]``; results in docs/performance.md.

The sockets are raw websockets on one asyncio loop (tests/hardening/raw_sockets.py), so the
client side costs almost nothing next to the server."""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlparse

from tests.hardening.raw_sockets import open_many
from tests.hardening.server import serve


def timed(served, method, path, body=None, headers=None) -> float:
    started = time.perf_counter()
    status, answer, _ = served.call(method, path, body, headers, timeout=30)
    assert status < 400, (status, answer)
    return (time.perf_counter() - started) * 1000


async def run(served, count: int) -> dict:
    url = urlparse(served.url)
    _, box, _ = served.call("POST", "/api/sandboxes", {"cluster": {"brokers": [0, 1, 2]}})
    headers = {"X-Sandbox-Token": box["token"]}
    loop = asyncio.get_running_loop()
    out = {"baseline_healthz_ms": statistics.median([await loop.run_in_executor(None, timed, served, "GET", "/healthz")
                                                     for _ in range(9)])}
    started = time.perf_counter()
    sockets, refused = await open_many(url.hostname, url.port, count, join={"sandbox": box["id"], "token": box["token"]})
    out.update(opened=len(sockets), refused=refused, open_s=round(time.perf_counter() - started, 1))
    out["idle_healthz_ms"] = statistics.median([await loop.run_in_executor(None, timed, served, "GET", "/healthz")
                                                for _ in range(9)])
    following = []
    for n in range(6):  # the class cluster changes: every socket gets each change's records
        op = {"op": "crash_broker", "broker": 2} if n % 2 == 0 else {"op": "start_broker", "broker": 2}
        await loop.run_in_executor(None, served.call, "POST", f"/api/sandboxes/{box['id']}/faults", op, headers)
        following += [await loop.run_in_executor(None, timed, served, "GET", "/healthz") for _ in range(3)]
    out["following_healthz_ms"] = statistics.median(following)
    out["following_healthz_max_ms"] = max(following)
    out["api_snapshot_ms"] = statistics.median([await loop.run_in_executor(
        None, timed, served, "GET", f"/api/sandboxes/{box['id']}/snapshot", None, headers) for _ in range(5)])
    out["worker_rss_mb"] = served.rss_kb(served.worker_pid()) // 1024
    out["sockets_with_records"] = sum(1 for s in sockets if s.records)
    for sock in sockets:
        sock.close()
    return out


def main() -> None:
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    with tempfile.TemporaryDirectory() as tmp:
        served = serve(Path(tmp), MAX_SANDBOXES_PER_CLIENT="40", FAULTS_PER_SECOND="1000")
        try:
            result = asyncio.run(run(served, count))
        finally:
            served.stop()
    print(f"sockets={count} load={os.getloadavg()[0]:.2f} {result}")


if __name__ == "__main__":
    main()
