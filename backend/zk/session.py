"""One broker's ZooKeeper session (Kafka's ``ZooKeeperClient``): connect, watch its state, end it.

A broker talks to ZooKeeper through its own cable (``cable.py``), which a fault can pause or
cut. Its session state changes reach the broker as :class:`SessionState` values on the thread
every session of the process shares (``session_loop.py``), where only events may be put; the
session's end (``LOST``) comes on a thread of its own, where the broker may wait for its
controller to take ``Expire``. The session ends in one of two ways:

* :meth:`ZkSession.close` — the process closes its session (a clean stop): ZooKeeper deletes
  its ephemeral znodes at once;
* :meth:`ZkSession.expire` — ZooKeeper expires it while the process lives on: another client
  attaches to the session and closes it (kazoo's own test helper only fakes this on the client
  side). The broker learns it when it next hears from ZooKeeper.

A process that simply stops answering (a pause) or dies (a crash) needs neither: its session
runs out after the session timeout, which is the broker's cable's business (``cable.py``).
"""

from __future__ import annotations

import time
from typing import Callable

from kazoo.client import KazooClient, KazooState
from kazoo.retry import KazooRetry

from backend.zk.cable import Cable
from backend.zk.client import KafkaZkClient
from backend.zk.drop_cause import DropCause
from backend.zk.handler import PollingThreadingHandler
from backend.zk.session_loop import use_session_loop
from backend.zk.teardown import end
from backend.zk.watches import SessionState, session_state

START_TIMEOUT_S = 15


class ZkSession:
    def __init__(self, connect: str, timeout_ms: int, on_state: Callable[[SessionState], None],
                 cable: Cable | None = None) -> None:
        # Retry connecting for ever, and soon: a paused broker must notice at once when it wakes.
        retry = KazooRetry(max_tries=-1, delay=0.05, backoff=1.5, max_delay=0.5, max_jitter=0.1)
        self._client = use_session_loop(KazooClient(hosts=connect, timeout=timeout_ms / 1000, connection_retry=retry,
                                                    handler=PollingThreadingHandler()), cable=cable)
        self._client.add_listener(lambda state: on_state(session_state(state)))

    def start(self, multi_read: bool) -> KafkaZkClient:
        """Connect; returns the broker's ``KafkaZkClient`` on this session."""
        self._client.start(timeout=START_TIMEOUT_S)
        return KafkaZkClient(self._client, multi_read=multi_read)

    @property
    def session_id(self) -> str | None:
        """The session's id as ZooKeeper shows it (``0x1000…``), ``None`` before it has one."""
        client_id = self._client.client_id
        return None if client_id is None else hex(client_id[0])

    @property
    def last_drop(self) -> DropCause:
        """Why this session's connection last dropped (``drop_cause.py``): read while told
        ``SUSPENDED`` or ``LOST``."""
        return self._client._connection.drop

    def wait_connected(self, timeout_s: float, or_until: Callable[[], bool] = lambda: False) -> bool:
        """Poll until kazoo reports the connection back, ``or_until()`` holds (e.g. the session
        was found expired), or ``timeout_s`` passes; whether it is connected."""
        deadline = time.monotonic() + timeout_s
        while self._client.state != KazooState.CONNECTED and not or_until() and time.monotonic() < deadline:
            time.sleep(0.02)
        return self._client.state == KazooState.CONNECTED

    def close(self) -> None:
        try:
            end(self._client)  # its state then dies with this session, not in a full collection
        except Exception:  # noqa: BLE001 - the session may already be gone
            pass

    def expire(self, hosts: str) -> None:
        """ZooKeeper expires this session now. ``hosts`` reaches ZooKeeper directly (with the
        chroot), not through the broker's cable, which may be cut."""
        hijacker = KazooClient(hosts=hosts, client_id=self._client.client_id)
        hijacker.start(timeout=10)
        hijacker.stop()
        hijacker.close()
