"""Is ZooKeeper there? The app's own answer, for ``/healthz``, the page's banner and every
request that needs ZooKeeper.

One kazoo client at the root of the app's ZooKeeper, with a short session, reports its
connection state — ``connected``, ``suspended`` (the connection dropped; the session may still
be alive: a server restarted within the session timeout keeps it) or ``lost`` (the session
expired: every broker's ephemeral znodes are gone) — and keeps reconnecting for ever, at most a
second apart. While it is not connected, requests that need ZooKeeper fail at once with a 503
that says since when, instead of hanging for 40 s or ending in a 500, and every page is told
(``zookeeper`` socket event). The clusters themselves need no help to come back: their brokers
retry for ever too, and re-register after a lost session as Kafka's brokers do.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timezone
from typing import Callable

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import ConnectionClosedError, ConnectionLoss, OperationTimeoutError, SessionExpiredError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.retry import KazooRetry

from web.service import ApiError

log = logging.getLogger(__name__)
SESSION_TIMEOUT_S = 4.0
ZK_ERRORS = (ConnectionLoss, ConnectionClosedError, SessionExpiredError, OperationTimeoutError, KazooTimeoutError)
"""kazoo's ways of saying ZooKeeper did not answer."""
_STATES = {KazooState.CONNECTED: "connected", KazooState.SUSPENDED: "suspended", KazooState.LOST: "lost"}


class ZkHealth:
    def __init__(self, hosts: str, on_change: Callable[[dict], None] = lambda status: None) -> None:
        self.hosts = hosts
        self.on_change = on_change
        self.state = "connecting"
        self.since = time.time()
        """When ``state`` began (seconds since the epoch)."""
        self.outages = 0
        self._lock = threading.Lock()
        retry = KazooRetry(max_tries=-1, delay=0.1, backoff=2, max_delay=1.0)
        self._client = KazooClient(hosts=hosts, timeout=SESSION_TIMEOUT_S, connection_retry=retry)
        self._client.add_listener(self._on_state)

    def start(self) -> None:
        """Connect in the background: an app whose ZooKeeper is down at start still serves its
        pages, and says so."""
        self._client.start_async()

    def wait_connected(self, timeout: float) -> bool:
        """Wait (at most ``timeout`` s) for the first connection, so an app that has just been
        created with a working ZooKeeper does not refuse its first requests."""
        deadline = time.monotonic() + timeout
        while not self.ok and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.ok

    def stop(self) -> None:
        self._client.remove_listener(self._on_state)
        threading.Thread(target=self._close, name="zk-health-close", daemon=True).start()

    def _close(self) -> None:
        try:
            self._client.stop()
            self._client.close()
        except Exception:  # noqa: BLE001 - shutting down
            log.debug("closing the health client", exc_info=True)

    def _on_state(self, state) -> None:  # kazoo's thread: note it, tell the pages, return
        name = _STATES.get(state, str(state).lower())
        with self._lock:
            if name == self.state or (name == "suspended" and self.state == "lost"):
                return
            if self.state == "connected":
                self.outages += 1
            self.state, self.since = name, time.time()
            status = self.describe()
        log.warning("ZooKeeper %s is %s", self.hosts, name)
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
            raise unreachable(self.state, self.since)


def unreachable(state: str, since: float) -> ApiError:
    at = datetime.fromtimestamp(since, timezone.utc).strftime("%H:%M:%S UTC")
    what = "ZooKeeper is not connected yet" if state == "connecting" else f"ZooKeeper unreachable since {at}"
    return ApiError(503, f"{what} ({state}): nothing can change until it is back; the app reconnects by itself",
                    headers={"Retry-After": "5"}, zookeeper=state)


def as_api_error(error: BaseException) -> ApiError | None:
    """A kazoo error that means ZooKeeper did not answer, as the 503 a client should see."""
    if isinstance(error, ZK_ERRORS):
        return ApiError(503, f"ZooKeeper did not answer ({type(error).__name__}): try again when it is back",
                        headers={"Retry-After": "5"}, zookeeper="unreachable")
    return None
