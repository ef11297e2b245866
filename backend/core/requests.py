"""The controller → broker requests (§17): LeaderAndIsr, UpdateMetadata, StopReplica.

Kafka's request messages (``org.apache.kafka.common.requests``): the controller builds them
(``backend.core.controller.request_batch``), the brokers apply them
(``backend.core.broker.replica_manager``). Every request carries the controller's epoch
(brokers reject an older one) and the target broker's epoch (a bounced broker rejects a
request meant for its previous incarnation).
"""

from __future__ import annotations

from dataclasses import dataclass

from .model import BrokerInfo, TopicPartition

NO_EPOCH = -1
"""StopReplica's leader epoch when the controller knows none."""
EPOCH_DURING_DELETE = -2
"""StopReplica's leader epoch for a topic being deleted: the broker deletes whatever it has."""


@dataclass(frozen=True)
class LeaderAndIsrPartitionState:
    topic: str
    partition: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int
    replicas: tuple[int, ...]
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()
    is_new: bool = False

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True)
class UpdateMetadataPartitionState:
    topic: str
    partition: int
    controller_epoch: int
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int
    replicas: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True)
class StopReplicaPartitionState:
    topic: str
    partition: int
    leader_epoch: int
    delete_partition: bool

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True)
class LeaderAndIsrRequest:
    controller_id: int
    controller_epoch: int
    broker_id: int
    broker_epoch: int
    partition_states: tuple[LeaderAndIsrPartitionState, ...]
    name = "LeaderAndIsr"


@dataclass(frozen=True)
class UpdateMetadataRequest:
    controller_id: int
    controller_epoch: int
    broker_id: int
    broker_epoch: int
    live_brokers: tuple[BrokerInfo, ...]
    partition_states: tuple[UpdateMetadataPartitionState, ...]
    name = "UpdateMetadata"


@dataclass(frozen=True)
class StopReplicaRequest:
    controller_id: int
    controller_epoch: int
    broker_id: int
    broker_epoch: int
    partition_states: tuple[StopReplicaPartitionState, ...]
    name = "StopReplica"


ControlRequest = LeaderAndIsrRequest | UpdateMetadataRequest | StopReplicaRequest
