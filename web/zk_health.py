"""Is ZooKeeper there? The app's own answer, for ``/healthz``, the page's banner and every
request that needs ZooKeeper.

The app's session (``backend/zk/app_session.py``) reports its connection state — ``connected``,
``suspended`` (the connection dropped; the session may still be alive: a server restarted within
the session timeout keeps it) or ``lost`` (the session expired: every broker's ephemeral znodes
are gone) — and reconnects by itself. While it is not connected, requests that need ZooKeeper
fail at once with a 503 that says since when, instead of hanging for 40 s or ending in a 500,
and every page is told (``zookeeper`` socket event). The clusters need no help to come back:
their brokers retry for ever too, and re-register after a lost session as Kafka's brokers do.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timezone
from typing import Callable

from backend.zk.app_session import ZK_ERRORS, AppSession
from web.service import ApiError

log = logging.getLogger(__name__)


class ZkHealth:
    def __init__(self, hosts: str, on_change: Callable[[dict], None] = lambda status: None) -> None:
        self.hosts = hosts
        self.on_change = on_change
        self.state = "connecting"
        self.since = time.time()
        """When ``state`` began (seconds since the epoch)."""
        self.outages = 0
        self._lock = threading.Lock()
        self.session = AppSession(hosts, on_state=self._on_state)

    def start(self) -> None:
        """Connect in the background: an app whose ZooKeeper is down at start still serves its
        pages, and says so."""
        self.session.start()

    def wait_connected(self, timeout: float) -> bool:
        """Wait (at most ``timeout`` s) for the first connection, so an app that has just been
        created with a working ZooKeeper does not refuse its first requests."""
        deadline = time.monotonic() + timeout
        while not self.ok and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.ok

    def stop(self) -> None:
        threading.Thread(target=self.session.stop, name="zk-health-close", daemon=True).start()

    def _on_state(self, name: str) -> None:  # kazoo's thread: note it, tell the pages, return
        with self._lock:
            if name == self.state or (name == "suspended" and self.state == "lost"):
                return
            if self.state == "connected":
                self.outages += 1
            self.state, self.since = name, time.time()
            status = self.describe()
        log.log(logging.INFO if name == "connected" else logging.WARNING, "ZooKeeper %s is %s", self.hosts, name)
        try:
            self.on_change(status)
        except Exception:  # noqa: BLE001 - a listener must never stop kazoo's thread
            log.exception("telling the pages about ZooKeeper failed")

    @property
    def ok(self) -> bool:
        return self.state == "connected"

    def describe(self) -> dict:
        return {"state": self.state, "ok": self.ok, "since_ms": int(self.since * 1000), "hosts": self.hosts,
                "outages": self.outages}

    def require(self) -> None:
        """A 503 now, rather than a request that waits for ZooKeeper and fails later."""
        if not self.ok:
            at = datetime.fromtimestamp(self.since, timezone.utc).strftime("%H:%M:%S UTC")
            what = "ZooKeeper is not connected yet" if self.state == "connecting" else \
                f"ZooKeeper unreachable since {at}"
            raise ApiError(503, f"{what} ({self.state}): nothing can change until it is back; the app reconnects "
                                f"by itself", headers={"Retry-After": "5"}, zookeeper=self.state)


def as_api_error(error: BaseException) -> ApiError | None:
    """A kazoo error that means ZooKeeper did not answer, as the 503 a client should see."""
    if isinstance(error, ZK_ERRORS):
        return ApiError(503, f"ZooKeeper did not answer ({type(error).__name__}): try again when it is back",
                        headers={"Retry-After": "5"}, zookeeper="unreachable")
    return None
