"""What a broker may use of the cluster it runs in: narrow, typed, and never the cluster itself.

Every broker of a lab cluster lives in this one process, so any object could reach any other.
The runtime is kept a tree instead, with Kafka's ownership — the cluster owns its brokers, a
broker owns its ZooKeeper session, controller, request handler and data plane, the controller
owns its channel manager — and each child gets only what it may call:

* :class:`ClusterServices` — what the cluster hands each broker at birth: ZooKeeper's address,
  the record stream, the id counters, the lab's clock, the stage directions, the ledger of
  acknowledged messages, topic settings, and the other brokers;
* :class:`BrokerDirectory` — the other brokers as the "network" reaches them: a broker's
  request queues (the controller's requests), a leader's log (a follower's fetch), the
  controller's event queue (a controlled shutdown request). Each answers ``None`` when that
  broker could not be reached now, as a real network would fail to connect. A leader that
  appends wakes the partition's followers through it (what completes their parked fetches).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping, Protocol

from backend.core.records import Record

if TYPE_CHECKING:
    from backend.runtime.broker.broker import SimulatedBroker
    from backend.runtime.lab_clock import LabClock
    from backend.runtime.producer import AckLedger
    from backend.runtime.stage import StageDirections

Emit = Callable[[Iterable[Record]], list[Record]]
"""Hand records to the cluster's stream; returns them stamped (with their ``seq``)."""


class RequestEndpoint(Protocol):
    """A broker's request queues, as a controller's channel manager reaches them."""

    def enqueue_control_request(self, request, correlation_id: int, sent_seq: int | None, callback,
                                control_plane: bool = False) -> None: ...


class FetchEndpoint(Protocol):
    """A leader's replica side, as a follower's fetcher reaches it."""

    def offsets_for_leader_epoch(self, tp, requested_epoch: int, leader_epoch: int): ...

    def handle_fetch(self, tp, follower: int, fetch_offset: int, leader_epoch: int, now: float): ...


class ControllerEndpoint(Protocol):
    """A controller's event queue, as a broker asking for a controlled shutdown reaches it."""

    def put(self, event) -> Any: ...


class BrokerDirectory:
    def __init__(self, brokers: Mapping[int, SimulatedBroker]) -> None:
        self._brokers = brokers

    def is_running(self, broker_id: int) -> bool:
        broker = self._brokers.get(broker_id)
        return broker is not None and broker.status == "running"

    def request_endpoint(self, broker_id: int) -> RequestEndpoint | None:
        """A live broker's request queues (a paused one's fill up until it wakes)."""
        broker = self._brokers.get(broker_id)
        return broker.requests if broker is not None and broker.alive else None

    def fetch_endpoint(self, broker_id: int) -> FetchEndpoint | None:
        """A running broker's data plane: a paused or stopped leader answers no fetch."""
        return self._brokers[broker_id].data if self.is_running(broker_id) else None

    def wake_followers(self, replicas: Iterable[int], leader: int) -> None:
        """Leader ``leader`` appended to a partition of ``replicas``: each follower's parked fetch
        would complete now (Kafka's ``DelayedFetch``), so each follower's replica thread runs now."""
        for replica in replicas:
            broker = self._brokers.get(replica)
            if replica != leader and broker is not None:
                broker.data.wake(fetch=True)

    def controller_endpoint(self, broker_id: int) -> ControllerEndpoint | None:
        broker = self._brokers.get(broker_id)
        if broker is None or broker.controller is None or not broker.alive:
            return None
        return broker.controller.events


@dataclass(frozen=True)
class ClusterServices:
    zk_hosts: str
    """The ensemble (``HOST:PORT,…``), no chroot."""
    chroot: str
    multi_read: Callable[[], bool]
    """Whether every ZooKeeper server answers ``multiRead`` (``backend/zk/multi_read.py``)."""
    emit: Emit
    event_ids: Iterator[int]
    correlation_ids: Iterator[int]
    clock: LabClock
    stage: StageDirections
    ledger: AckLedger
    topic_setting: Callable[[str, str], Any]
    """A topic-level setting as the brokers see it: the topic's override, else the broker's."""
    peers: BrokerDirectory
