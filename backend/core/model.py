"""Kafka's small value types: a partition, a replica, its leader and ISR, its assignment.

Names follow Kafka (``kafka.api.LeaderAndIsr``, ``kafka.controller.ReplicaAssignment``,
``org.apache.kafka.common.TopicPartition``) so a student can look each one up. All are
immutable; "changing" one returns a new value.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import NamedTuple

NO_LEADER = -1
"""``LeaderAndIsr.NoLeader``: written to ZooKeeper when no replica can lead."""
LEADER_DURING_DELETE = -2
"""``LeaderAndIsr.LeaderDuringDelete``: sent in UpdateMetadata for topics being deleted."""
INITIAL_LEADER_EPOCH = 0
INITIAL_ZK_VERSION = 0


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


class PartitionAndReplica(NamedTuple):
    topic_partition: TopicPartition
    replica: int

    def __str__(self) -> str:
        return f"{self.topic_partition}/{self.replica}"


@dataclass(frozen=True)
class LeaderAndIsr:
    """What ``/brokers/topics/T/partitions/P/state`` says, plus the znode's version.

    ``zk_version`` is the znode's dataVersion: every writer sends it as the expected version,
    so a concurrent writer's change makes the write fail with BADVERSION instead of being lost.
    """

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int = INITIAL_ZK_VERSION

    def new_leader_and_isr(self, leader: int, isr: tuple[int, ...] | list[int]) -> LeaderAndIsr:
        """Kafka's ``newLeaderAndIsr``: every controller-side change bumps the leader epoch."""
        return replace(self, leader=leader, isr=tuple(isr), leader_epoch=self.leader_epoch + 1)

    def new_leader(self, leader: int) -> LeaderAndIsr:
        return self.new_leader_and_isr(leader, self.isr)

    def new_epoch(self) -> LeaderAndIsr:
        """Same leader and ISR, leader epoch + 1 (a reassignment tells every replica the new set)."""
        return self.new_leader_and_isr(self.leader, self.isr)

    def with_zk_version(self, zk_version: int) -> LeaderAndIsr:
        return replace(self, zk_version=zk_version)


@dataclass(frozen=True)
class LeaderIsrAndControllerEpoch:
    """A partition state znode in full: the leader and ISR and the epoch of the controller
    that decided them (a zombie's decision carries an older one)."""

    leader_and_isr: LeaderAndIsr
    controller_epoch: int

    @property
    def leader(self) -> int:
        return self.leader_and_isr.leader

    @property
    def isr(self) -> tuple[int, ...]:
        return self.leader_and_isr.isr


@dataclass(frozen=True)
class ReplicaAssignment:
    """A partition's replicas (head = preferred leader) and, during a reassignment (KIP-455),
    the replicas being added and removed. ``replicas`` is then the full set RS = TRS ∪ ORS."""

    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()

    @property
    def is_being_reassigned(self) -> bool:
        return bool(self.adding_replicas or self.removing_replicas)

    @property
    def target_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.removing_replicas)

    @property
    def origin_replicas(self) -> tuple[int, ...]:
        return tuple(r for r in self.replicas if r not in self.adding_replicas)

    def reassign_to(self, target: tuple[int, ...] | list[int]) -> ReplicaAssignment:
        """Kafka's ``reassignTo``: RS' = distinct(target ++ ORS), target order first."""
        origin = self.origin_replicas
        full = tuple(dict.fromkeys((*target, *origin)))
        return ReplicaAssignment(
            replicas=full,
            adding_replicas=tuple(r for r in full if r not in origin),
            removing_replicas=tuple(r for r in full if r not in target),
        )

    def remove_replica(self, replica: int) -> ReplicaAssignment:
        return ReplicaAssignment(
            tuple(r for r in self.replicas if r != replica),
            tuple(r for r in self.adding_replicas if r != replica),
            tuple(r for r in self.removing_replicas if r != replica),
        )


@dataclass(frozen=True)
class BrokerInfo:
    """A live broker as the controller knows it from ``/brokers/ids/<id>``.

    ``epoch`` is the broker epoch: the czxid of its registration znode, so a broker that
    restarted between two watch events is recognised as *bounced* by its larger epoch.
    """

    id: int
    epoch: int
    host: str = "localhost"
    port: int = 9092
    rack: str | None = None
