"""A class of 1,000 open tabs is an ordinary load: with 1,000 page sockets open — idle, and
following one class cluster — /healthz and the API answer, and the 1,001st socket is refused
at once instead of taking a thread the API needs (web/socket_cap.py). Latency is measured in
bench/sockets.py, never asserted here."""

from __future__ import annotations

import asyncio
from urllib.parse import urlparse

from tests.hardening.raw_sockets import RawSocket, open_many, run

SOCKETS = 1000


def test_a_thousand_sockets_following_a_class_leave_the_server_responsive(served):
    status, box, _ = served.call("POST", "/api/sandboxes", {"cluster": {"brokers": [0, 1]}})
    assert status == 201, box
    url = urlparse(served.url)
    headers = {"X-Sandbox-Token": box["token"]}

    async def scenario():
        sockets, refused = await open_many(url.hostname, url.port, SOCKETS, join={"sandbox": box["id"],
                                                                                    "token": box["token"]})
        try:
            assert len(sockets) == SOCKETS and refused == 0, f"{len(sockets)} open, {refused} refused"
            extra = RawSocket()
            assert not await extra.connect(url.hostname, url.port), "the socket beyond the cap is refused"
            loop = asyncio.get_running_loop()
            health = await loop.run_in_executor(None, lambda: served.call("GET", "/healthz", timeout=10))
            assert health[0] == 200 and health[1]["sockets"] >= SOCKETS, health[1]
            # A student's action may be refused while the server is behind (web/load_guard.py);
            # the page then says so and the student tries again after Retry-After, as here.
            crash = await loop.run_in_executor(None, lambda: served.call_as_student(
                "POST", f"/api/sandboxes/{box['id']}/faults", {"op": "crash_broker", "broker": 1}, headers, timeout=10))
            assert crash[0] == 200, crash[1]
            for _ in range(300):  # until every follower got the crash's records (or 30 s)
                if all(s.records for s in sockets):
                    break
                await asyncio.sleep(0.1)
            assert all(s.records for s in sockets), f"{sum(1 for s in sockets if s.records)} sockets got records"
            created = await loop.run_in_executor(None, lambda: served.call_as_student(
                "POST", "/api/sandboxes", {"cluster": {"brokers": [0]}}, timeout=30))
            assert created[0] == 201, created[1]
            assert not any(s.closed for s in sockets)
        finally:
            for sock in sockets:
                sock.close()

    run(scenario())
