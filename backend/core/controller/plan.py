"""What a controller handler asks the runtime to do, and what comes back (§3, §10.2, §20).

A handler is a generator (a *sans-I/O program*, ``program.py``). It yields a :class:`Plan`; the runtime

1. emits the plan's ``records``,
2. reads the partition state znodes named in ``reads`` and sends back what ZooKeeper holds
   (Kafka re-reads them before every election and ISR change: the controller's cache may be
   stale, because partition leaders change ISRs in ZooKeeper themselves), or
3. attempts its ``writes`` in ZooKeeper — each one wrapped in a transaction with
   ``check(/controller_epoch, epoch_zk_version)``, so a zombie controller's write is refused by
   ZooKeeper itself — and sends back one :class:`WriteResult` per write, in order,
4. sends its ``requests`` to the brokers (LeaderAndIsr, then UpdateMetadata, then StopReplica).

If any write comes back ``rejected_stale_epoch`` the runtime stops the program: the controller
has moved (Kafka's ``ControllerMovedException``) and must resign. A ``bad_version`` means
someone else changed the znode since it was read: the program reads again and retries that
partition only.

Writes are typed, not paths: which znode each one touches and how it is encoded is the
``backend.zk`` layer's business, exactly as ``KafkaZkClient`` hides it from Kafka's controller.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..model import LeaderIsrAndControllerEpoch, ReplicaAssignment, TopicPartition
from ..records import Record


# -- writes ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class CreatePartitionState:
    """Create ``…/partitions/P`` (and parents, ignoring NODEEXISTS) and then ``…/P/state``."""

    topic_partition: TopicPartition
    state: LeaderIsrAndControllerEpoch


@dataclass(frozen=True)
class UpdatePartitionState:
    """Conditional ``setData`` of ``…/P/state``; the expected version is
    ``state.leader_and_isr.zk_version`` (the version this controller last saw)."""

    topic_partition: TopicPartition
    state: LeaderIsrAndControllerEpoch


@dataclass(frozen=True)
class SetTopicAssignment:
    """``setData /brokers/topics/T`` (any version) — reassignment steps U1 and B6."""

    topic: str
    assignment: Mapping[int, ReplicaAssignment]
    topic_id: str | None = None


@dataclass(frozen=True)
class DeleteTopicZnodes:
    """Topic deletion's last step: ``/brokers/topics/T`` (recursively), ``/config/topics/T``,
    ``/admin/delete_topics/T``."""

    topic: str


@dataclass(frozen=True)
class DeleteTopicDeletionFlags:
    """Delete ``/admin/delete_topics/<name>`` for names that are not topics (or when
    ``delete.topic.enable`` is false)."""

    topics: tuple[str, ...]


@dataclass(frozen=True)
class DeleteIsrChangeNotifications:
    """Delete processed ``/isr_change_notification/isr_change_<seq>`` znodes."""

    sequence_numbers: tuple[str, ...]


@dataclass(frozen=True)
class DeletePreferredReplicaElection:
    """Delete ``/admin/preferred_replica_election`` after handling it (even if elections failed)."""


@dataclass(frozen=True)
class RemoveFromPartitionReassignment:
    """Kafka's ``maybeRemoveFromZkReassignment``: drop these partitions from
    ``/admin/reassign_partitions`` (only where the listed target matches, when one is given)
    and delete the znode once it lists nothing. The znode is read and rewritten at that moment,
    because an operator may have changed it since the controller last read it."""

    partitions: tuple[tuple[TopicPartition, tuple[int, ...] | None], ...]


@dataclass(frozen=True)
class DeleteController:
    """``triggerControllerMove``: delete ``/controller`` so another broker can win."""


ZkWrite = (
    CreatePartitionState | UpdatePartitionState | SetTopicAssignment | DeleteTopicZnodes
    | DeleteTopicDeletionFlags | DeleteIsrChangeNotifications | DeletePreferredReplicaElection
    | RemoveFromPartitionReassignment | DeleteController
)


# -- outcomes --------------------------------------------------------------------------------
@dataclass(frozen=True)
class WriteResult:
    """The outcome of one fenced write.

    ``outcome`` is a record outcome: ``ok`` (``zk_version`` is the znode's new version),
    ``bad_version`` (someone else changed the znode), ``rejected_stale_epoch`` (the check on
    ``/controller_epoch`` failed: this controller is a zombie) or ``error`` (``reason`` says what).
    """

    outcome: str
    zk_version: int | None = None
    reason: str | None = None
    deleted: bool = False
    """``RemoveFromPartitionReassignment`` emptied the znode and deleted it."""

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"



# -- the plan --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Plan:
    writes: tuple[ZkWrite, ...] = ()
    requests: tuple[Any, ...] = ()
    records: tuple[Record, ...] = ()
    reads: tuple[TopicPartition, ...] = ()
    """Partition state znodes to read; a plan reads or writes, never both."""
    events: tuple[Any, ...] = ()
    """Controller events to put on this controller's own queue (Kafka's ``eventManager.put``
    from inside the controller, e.g. to re-arm a watch after deleting the znode it watches)."""
