"""The ZooKeeper tests' clients on the process's session loop, and what their listeners heard."""

from __future__ import annotations

import threading

import pytest
from kazoo.client import KazooClient, KazooState

from backend.zk.cable import Cable
from backend.zk.handler import PollingThreadingHandler
from backend.zk.session_loop import use_session_loop
from tests.support import close_client


class Listened:
    """A client on the loop and the states its listener heard (on the loop's thread)."""

    def __init__(self, hosts: str, cable: Cable | None = None, **kwargs) -> None:
        self.client = use_session_loop(KazooClient(hosts=hosts, handler=PollingThreadingHandler(), **kwargs),
                                       cable=cable)
        self.states: list[KazooState] = []
        self._lock = threading.Lock()
        self.client.add_listener(self._heard)

    def _heard(self, state) -> None:
        with self._lock:
            self.states.append(state)

    def heard(self, state) -> int:
        with self._lock:
            return self.states.count(state)

    def start(self) -> Listened:
        self.client.start(timeout=15)
        return self

    def close(self) -> None:
        close_client(self.client)


@pytest.fixture
def make(zk_hosts, chroot):
    made: list[Listened] = []

    def client(hosts: str | None = None, **kwargs) -> Listened:
        made.append(Listened(hosts or zk_hosts + chroot, **kwargs))
        return made[-1]
    yield client
    for listened in made:
        listened.close()
