"""``ControllerContext``: what the active controller believes about the cluster (§5).

Kafka's context is one big mutable object. Ours is immutable: every decision returns a new
context, so a test can hold the context before and after a step and compare them, and an
older controller's context can never be changed by a newer one's decisions.

The mappings are read-only views. Updates go through :meth:`ControllerContext.evolve` and the
``with_…`` helpers, which copy a mapping once per batch — a broker failure that moves 2,000
leaders copies the leadership map once, not 2,000 times.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Iterable, Mapping

from ..config import KafkaConfig, topic_config_value
from ..model import (
    BrokerInfo,
    LeaderIsrAndControllerEpoch,
    PartitionAndReplica,
    ReplicaAssignment,
    TopicPartition,
)
from .states import PartitionState, ReplicaState


def frozen(mapping: Mapping | None = None) -> Mapping:
    """A read-only view of a fresh copy (``MappingProxyType`` costs nothing to read)."""
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class ControllerContext:
    controller_id: int
    """The broker this controller runs on (Kafka's ``config.brokerId``)."""
    epoch: int = 0
    epoch_zk_version: int = 0
    config: KafkaConfig = field(default_factory=KafkaConfig)
    live_brokers: Mapping[int, BrokerInfo] = field(default_factory=frozen)
    """Registered brokers, including those shutting down (``liveOrShuttingDownBrokers``)."""
    shutting_down_broker_ids: frozenset[int] = frozenset()
    all_topics: frozenset[str] = frozenset()
    topic_configs: Mapping[str, Mapping[str, str]] = field(default_factory=frozen)
    partition_assignments: Mapping[TopicPartition, ReplicaAssignment] = field(default_factory=frozen)
    partition_leadership_info: Mapping[TopicPartition, LeaderIsrAndControllerEpoch] = field(default_factory=frozen)
    partition_states: Mapping[TopicPartition, PartitionState] = field(default_factory=frozen)
    replica_states: Mapping[PartitionAndReplica, ReplicaState] = field(default_factory=frozen)
    partitions_being_reassigned: frozenset[TopicPartition] = frozenset()
    topics_to_be_deleted: frozenset[str] = frozenset()
    topics_with_deletion_started: frozenset[str] = frozenset()
    topics_ineligible_for_deletion: frozenset[str] = frozenset()

    def evolve(self, **changes) -> ControllerContext:
        """A copy with ``changes``; mappings are wrapped read-only."""
        for name, value in changes.items():
            if isinstance(value, dict):
                changes[name] = MappingProxyType(value)
        return replace(self, **changes)

    # -- brokers ---------------------------------------------------------------------------
    @property
    def live_or_shutting_down_broker_ids(self) -> frozenset[int]:
        return frozenset(self.live_brokers)

    @property
    def live_broker_ids(self) -> frozenset[int]:
        return frozenset(self.live_brokers) - self.shutting_down_broker_ids

    def is_replica_online(self, broker_id: int, include_shutting_down: bool = False) -> bool:
        """Kafka's ``isReplicaOnline``: by default a broker that asked for controlled shutdown
        is *not* online, which is exactly how it stops being electable."""
        if include_shutting_down:
            return broker_id in self.live_brokers
        return broker_id in self.live_brokers and broker_id not in self.shutting_down_broker_ids

    # -- topics and partitions -------------------------------------------------------------
    def partition_replica_assignment(self, tp: TopicPartition) -> tuple[int, ...]:
        assignment = self.partition_assignments.get(tp)
        return assignment.replicas if assignment else ()

    def partitions_for_topic(self, topic: str) -> list[TopicPartition]:
        return sorted(tp for tp in self.partition_assignments if tp.topic == topic)

    def all_partitions(self) -> list[TopicPartition]:
        return sorted(self.partition_assignments)

    def partitions_on_broker(self, broker_id: int) -> list[TopicPartition]:
        return sorted(tp for tp, a in self.partition_assignments.items() if broker_id in a.replicas)

    def replicas_on_brokers(self, broker_ids: Iterable[int]) -> list[PartitionAndReplica]:
        wanted = set(broker_ids)
        return sorted(PartitionAndReplica(tp, r) for tp, a in self.partition_assignments.items()
                      for r in a.replicas if r in wanted)

    def replicas_for_partition(self, partitions: Iterable[TopicPartition]) -> list[PartitionAndReplica]:
        return [PartitionAndReplica(tp, r) for tp in partitions for r in self.partition_replica_assignment(tp)]

    def partition_state(self, tp: TopicPartition) -> PartitionState:
        return self.partition_states.get(tp, PartitionState.NonExistentPartition)

    def replica_state(self, replica: PartitionAndReplica) -> ReplicaState:
        return self.replica_states.get(replica, ReplicaState.NonExistentReplica)

    def partitions_in_states(self, states: Iterable[PartitionState]) -> list[TopicPartition]:
        wanted = set(states)
        return sorted(tp for tp, s in self.partition_states.items() if s in wanted)

    def replicas_for_topic(self, topic: str) -> list[PartitionAndReplica]:
        return self.replicas_for_partition(self.partitions_for_topic(topic))

    def replicas_in_state(self, topic: str, state: ReplicaState) -> list[PartitionAndReplica]:
        return [r for r in self.replicas_for_topic(topic) if self.replica_state(r) is state]

    def are_all_replicas_in_state(self, topic: str, state: ReplicaState) -> bool:
        return all(self.replica_state(r) is state for r in self.replicas_for_topic(topic))

    def is_any_replica_in_state(self, topic: str, state: ReplicaState) -> bool:
        return any(self.replica_state(r) is state for r in self.replicas_for_topic(topic))

    def is_topic_queued_up_for_deletion(self, topic: str) -> bool:
        return topic in self.topics_to_be_deleted

    def partitions_with_leaders(self) -> list[TopicPartition]:
        """Kafka's ``partitionsWithLeaders``: partitions with leader info, topics queued for
        deletion left out — what a broker that just started is told about."""
        return sorted(tp for tp in self.partition_leadership_info if not self.is_topic_queued_up_for_deletion(tp.topic))

    def partitions_with_offline_leader(self) -> list[TopicPartition]:
        """Partitions whose leader is not online (topics being deleted are not counted)."""
        return sorted(tp for tp, info in self.partition_leadership_info.items()
                      if not self.is_replica_online(info.leader) and not self.is_topic_queued_up_for_deletion(tp.topic))

    def partition_leaders_on_broker(self, broker_id: int) -> list[TopicPartition]:
        """Partitions with RF > 1 led by ``broker_id`` (what a shutting-down broker still leads)."""
        return sorted(tp for tp, info in self.partition_leadership_info.items()
                      if info.leader == broker_id and len(self.partition_replica_assignment(tp)) > 1
                      and not self.is_topic_queued_up_for_deletion(tp.topic))

    def is_unclean_leader_election_enabled(self, topic: str) -> bool:
        """The topic's ``unclean.leader.election.enable`` (``/config/topics/T`` wins)."""
        return bool(topic_config_value(self.config, self.topic_configs.get(topic), "unclean.leader.election.enable"))

    @property
    def offline_partition_count(self) -> int:
        return sum(1 for tp, s in self.partition_states.items()
                   if s is PartitionState.OfflinePartition and tp.topic not in self.topics_with_deletion_started)

    @property
    def preferred_replica_imbalance_count(self) -> int:
        return sum(1 for tp, info in self.partition_leadership_info.items()
                   if tp.topic not in self.topics_to_be_deleted
                   and self.partition_replica_assignment(tp)[:1] != (info.leader,))

    # -- batch updates ---------------------------------------------------------------------
    def with_partition_states(self, changes: Mapping[TopicPartition, PartitionState]) -> ControllerContext:
        if not changes:
            return self
        return self.evolve(partition_states={**self.partition_states, **changes})

    def with_replica_states(
        self, changes: Mapping[PartitionAndReplica, ReplicaState], removed: Iterable[PartitionAndReplica] = ()
    ) -> ControllerContext:
        removed = set(removed)
        if not changes and not removed:
            return self
        states = {**self.replica_states, **changes}
        for replica in removed:
            states.pop(replica, None)
        return self.evolve(replica_states=states)

    def with_leadership(self, changes: Mapping[TopicPartition, LeaderIsrAndControllerEpoch]) -> ControllerContext:
        if not changes:
            return self
        return self.evolve(partition_leadership_info={**self.partition_leadership_info, **changes})

    def with_assignments(self, changes: Mapping[TopicPartition, ReplicaAssignment]) -> ControllerContext:
        if not changes:
            return self
        return self.evolve(partition_assignments={**self.partition_assignments, **changes})

    def without_topic(self, topic: str) -> ControllerContext:
        """Kafka's ``removeTopic``: forget everything about ``topic``."""
        keep = lambda tp: tp.topic != topic  # noqa: E731
        return self.evolve(
            all_topics=self.all_topics - {topic},
            topic_configs={t: c for t, c in self.topic_configs.items() if t != topic},
            partition_assignments={tp: a for tp, a in self.partition_assignments.items() if keep(tp)},
            partition_leadership_info={tp: i for tp, i in self.partition_leadership_info.items() if keep(tp)},
            partition_states={tp: s for tp, s in self.partition_states.items() if keep(tp)},
            replica_states={r: s for r, s in self.replica_states.items() if keep(r.topic_partition)},
            partitions_being_reassigned=frozenset(tp for tp in self.partitions_being_reassigned if keep(tp)),
            topics_to_be_deleted=self.topics_to_be_deleted - {topic},
            topics_with_deletion_started=self.topics_with_deletion_started - {topic},
            topics_ineligible_for_deletion=self.topics_ineligible_for_deletion - {topic},
        )

    def reset(self) -> ControllerContext:
        """What ``onControllerResignation`` leaves: an empty context with epoch 0."""
        return ControllerContext(controller_id=self.controller_id, config=self.config)
