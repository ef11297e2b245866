"""The controller's events and ``ControllerState`` (§4).

Everything the controller does starts as one of these events in its single queue: ZooKeeper
watch callbacks, broker requests (ControlledShutdown), responses and timers only *enqueue*;
the one controller thread processes them in order. That is the design Kafka adopted in 0.11
(KAFKA-5028) to replace a tangle of locks, and the lab shows the queue as it is.

An event carries only what its enqueuer knew; the handler re-reads ZooKeeper itself, because
a watch only says "something changed", never what it changed to.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar


class ControllerState(Enum):
    """What the controller thread is doing (Kafka 2.8 values; ``Idle`` between events)."""

    Idle = 0
    ControllerChange = 1
    BrokerChange = 2
    TopicChange = 3
    TopicDeletion = 4
    AlterPartitionReassignment = 5
    AutoLeaderBalance = 6
    ManualLeaderBalance = 7
    ControlledShutdown = 8
    IsrChange = 9
    LeaderAndIsrResponseReceived = 10
    LogDirChange = 11
    ControllerShutdown = 12
    UncleanLeaderElectionEnable = 13
    TopicUncleanLeaderElectionEnable = 14
    ListPartitionReassignment = 15
    UpdateMetadataResponseReceived = 16
    UpdateFeatures = 17


@dataclass(frozen=True)
class ControllerEvent:
    state: ClassVar[ControllerState]

    @property
    def name(self) -> str:
        return type(self).__name__


def _event(state: ControllerState):
    def decorate(cls):
        cls.state = state
        return dataclass(frozen=True)(cls)
    return decorate


S = ControllerState


@_event(S.ControllerChange)
class Startup(ControllerEvent):
    """Module startup: watch ``/controller`` and try to become controller."""


@_event(S.ControllerChange)
class ControllerChange(ControllerEvent):
    """``/controller`` was created or changed: learn who the controller is; resign if not me."""


@_event(S.ControllerChange)
class Reelect(ControllerEvent):
    """``/controller`` was deleted: resign if I was controller, then try to win."""


@_event(S.ControllerChange)
class RegisterBrokerAndReelect(ControllerEvent):
    """After a new ZooKeeper session: register ``/brokers/ids/<id>`` again, then re-elect."""


@_event(S.ControllerChange)
class Expire(ControllerEvent):
    """The ZooKeeper session expired. Put with ``clear_and_put``: every queued event is
    preempted, because a controller without a session must not act on anything."""


@_event(S.ControllerShutdown)
class ShutdownEventThread(ControllerEvent):
    pass


@_event(S.BrokerChange)
class BrokerChange(ControllerEvent):
    """Children of ``/brokers/ids`` changed."""


@_event(S.BrokerChange)
class BrokerModifications(ControllerEvent):
    broker_id: int


@_event(S.TopicChange)
class TopicChange(ControllerEvent):
    """Children of ``/brokers/topics`` changed."""


@_event(S.TopicChange)
class PartitionModifications(ControllerEvent):
    """``/brokers/topics/<topic>`` changed (partitions added)."""

    topic: str


@_event(S.TopicDeletion)
class TopicDeletion(ControllerEvent):
    """Children of ``/admin/delete_topics`` changed."""


@_event(S.TopicDeletion)
class TopicDeletionStopReplicaResponseReceived(ControllerEvent):
    replica_id: int
    partition_errors: tuple[tuple[Any, str], ...] = ()  # (TopicPartition, error name), "NONE" = ok


@_event(S.AlterPartitionReassignment)
class ZkPartitionReassignment(ControllerEvent):
    """``/admin/reassign_partitions`` was created."""


@_event(S.IsrChange)
class IsrChangeNotification(ControllerEvent):
    """Children of ``/isr_change_notification`` changed: a leader changed some ISRs
    (inter.broker.protocol.version < 2.7)."""


@_event(S.IsrChange)
class AlterIsrReceived(ControllerEvent):
    """A leader's AlterIsr request (inter.broker.protocol.version ≥ 2.7): ``partitions`` are
    ``(TopicPartition, LeaderAndIsr)`` pairs, the ISR it wants at the version it knows;
    ``callback(error=…, partitions=…)`` answers it."""

    preempt_error: ClassVar[str | None] = None  # Kafka 2.8's preempt does nothing: the broker's request times out
    broker_id: int
    broker_epoch: int
    partitions: tuple[tuple[Any, Any], ...] = ()
    correlation_id: int = 0
    callback: Any = field(default=None, compare=False, repr=False)


@_event(S.AlterPartitionReassignment)
class PartitionReassignmentIsrChange(ControllerEvent):
    """The state znode of a reassigning partition changed (its data watch, registered only
    below inter.broker.protocol.version 2.7, when leaders write ISR changes themselves)."""

    partition: Any


@_event(S.LeaderAndIsrResponseReceived)
class LeaderAndIsrResponseReceived(ControllerEvent):
    broker_id: int
    error: str = "NONE"


@_event(S.UpdateMetadataResponseReceived)
class UpdateMetadataResponseReceived(ControllerEvent):
    broker_id: int
    error: str = "NONE"


@_event(S.ManualLeaderBalance)
class ReplicaLeaderElection(ControllerEvent):
    """A triggered election. ``partitions`` is ``None`` when the event only re-arms the watch
    on ``/admin/preferred_replica_election``."""

    partitions: tuple[Any, ...] | None = None
    election_type: str = "PREFERRED"  # or "UNCLEAN"
    trigger: str = "ZkTriggered"  # or "AdminClientTriggered", "AutoTriggered"


@_event(S.AutoLeaderBalance)
class AutoPreferredReplicaLeaderElection(ControllerEvent):
    """The scheduler's periodic leader-imbalance check."""


@_event(S.ControlledShutdown)
class ControlledShutdown(ControllerEvent):
    preempt_error: ClassVar[str | None] = "STALE_CONTROLLER_EPOCH"
    broker_id: int
    broker_epoch: int
    callback: Any = field(default=None, compare=False, repr=False)


@_event(S.UncleanLeaderElectionEnable)
class UncleanLeaderElectionEnable(ControllerEvent):
    """Broker-wide ``unclean.leader.election.enable`` was turned on."""


@_event(S.TopicUncleanLeaderElectionEnable)
class TopicUncleanLeaderElectionEnable(ControllerEvent):
    topic: str


EVENTS: dict[str, type[ControllerEvent]] = {
    cls.__name__: cls for cls in ControllerEvent.__subclasses__() if cls is not ShutdownEventThread}
"""Every event the controller handles, by name, in the order above: the one list the runtime's
handler table, the fault vocabulary (``pause_broker``'s ``during``) and the page are built from.
(``ShutdownEventThread`` only stops the thread; no handler sees it.)"""
