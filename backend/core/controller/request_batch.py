"""Kafka's ``ControllerBrokerRequestBatch`` (``ControllerChannelManager.scala``, §17).

A state-machine call collects requests in one batch and sends them at the end, in Kafka's
order: LeaderAndIsr, then UpdateMetadata, then StopReplica, one request of each kind per
broker. Every LeaderAndIsr entry also queues an UpdateMetadata for that partition to every
live-or-shutting-down broker — so all brokers learn each new leader, not only the replicas.
"""

from __future__ import annotations

from typing import Iterable

from ..model import LEADER_DURING_DELETE, LeaderIsrAndControllerEpoch, TopicPartition
from ..requests import (
    EPOCH_DURING_DELETE, NO_EPOCH, ControlRequest, LeaderAndIsrPartitionState, LeaderAndIsrRequest,
    StopReplicaPartitionState, StopReplicaRequest, UpdateMetadataPartitionState, UpdateMetadataRequest,
)
from .context import ControllerContext


class RequestBatch:
    """Kafka's ``ControllerBrokerRequestBatch``: collects one state-machine call's requests.

    A local builder: it is created, filled and turned into requests inside one pure function
    and never escapes it. The ``ctx`` given to each ``add_…`` is the context *after* the change
    being announced, as Kafka reads its context at the moment of adding.
    """

    def __init__(self) -> None:
        self._leader_and_isr: dict[int, dict[TopicPartition, LeaderAndIsrPartitionState]] = {}
        self._update_metadata_brokers: set[int] = set()
        self._update_metadata_partitions: dict[TopicPartition, UpdateMetadataPartitionState] = {}
        self._stop_replica: dict[int, dict[TopicPartition, StopReplicaPartitionState]] = {}

    def add_leader_and_isr_request_for_brokers(
        self, ctx: ControllerContext, broker_ids: Iterable[int], tp: TopicPartition,
        state: LeaderIsrAndControllerEpoch, is_new: bool,
    ) -> None:
        assignment = ctx.partition_assignments.get(tp)
        lai = state.leader_and_isr
        for broker_id in broker_ids:
            if broker_id < 0:
                continue
            per_broker = self._leader_and_isr.setdefault(broker_id, {})
            already_new = per_broker[tp].is_new if tp in per_broker else False
            per_broker[tp] = LeaderAndIsrPartitionState(
                tp.topic, tp.partition, state.controller_epoch, lai.leader, lai.leader_epoch, lai.isr,
                lai.zk_version, assignment.replicas if assignment else (),
                assignment.adding_replicas if assignment else (),
                assignment.removing_replicas if assignment else (),
                is_new or already_new,
            )
        self.add_update_metadata_request_for_brokers(ctx, ctx.live_or_shutting_down_broker_ids, [tp])

    def add_update_metadata_request_for_brokers(
        self, ctx: ControllerContext, broker_ids: Iterable[int], partitions: Iterable[TopicPartition] = (),
    ) -> None:
        """Queue UpdateMetadata for ``partitions`` (none = brokers only) to ``broker_ids``.

        As Kafka's: a replica on a broker in controlled shutdown counts as offline, and a
        partition of a topic queued for deletion goes out as ``LeaderAndIsr.duringDelete(isr)`` —
        leader -2 (LeaderDuringDelete), leader epoch and zkVersion back at their initial 0."""
        self._update_metadata_brokers.update(b for b in broker_ids if b >= 0)
        for tp in partitions:
            info = ctx.partition_leadership_info.get(tp)
            if info is None:
                continue  # partitions without leader info are skipped, as in Kafka
            lai = info.leader_and_isr
            if ctx.is_topic_queued_up_for_deletion(tp.topic):
                leader, leader_epoch, zk_version = LEADER_DURING_DELETE, 0, 0
            else:
                leader, leader_epoch, zk_version = lai.leader, lai.leader_epoch, lai.zk_version
            replicas = ctx.partition_replica_assignment(tp)
            self._update_metadata_partitions[tp] = UpdateMetadataPartitionState(
                tp.topic, tp.partition, info.controller_epoch, leader, leader_epoch, lai.isr, zk_version, replicas,
                tuple(r for r in replicas if not ctx.is_replica_online(r)),
            )

    def add_stop_replica_request_for_brokers(
        self, ctx: ControllerContext, broker_ids: Iterable[int], tp: TopicPartition, delete_partition: bool,
    ) -> None:
        if ctx.is_topic_queued_up_for_deletion(tp.topic):
            leader_epoch = EPOCH_DURING_DELETE
        else:
            info = ctx.partition_leadership_info.get(tp)
            leader_epoch = info.leader_and_isr.leader_epoch if info else NO_EPOCH
        for broker_id in broker_ids:
            if broker_id < 0:
                continue
            per_broker = self._stop_replica.setdefault(broker_id, {})
            already_delete = per_broker[tp].delete_partition if tp in per_broker else False
            per_broker[tp] = StopReplicaPartitionState(
                tp.topic, tp.partition, leader_epoch, delete_partition or already_delete)

    def requests(self, ctx: ControllerContext) -> tuple[ControlRequest, ...]:
        """The batch as requests, in Kafka's send order, only to brokers the controller knows."""
        live = ctx.live_brokers
        out: list[ControlRequest] = []
        for broker_id in sorted(self._leader_and_isr):
            if broker_id in live:
                out.append(LeaderAndIsrRequest(
                    ctx.controller_id, ctx.epoch, broker_id, live[broker_id].epoch,
                    tuple(self._leader_and_isr[broker_id][tp] for tp in sorted(self._leader_and_isr[broker_id])),
                ))
        brokers = tuple(live[b] for b in sorted(live))
        partitions = tuple(self._update_metadata_partitions[tp] for tp in sorted(self._update_metadata_partitions))
        for broker_id in sorted(self._update_metadata_brokers):
            if broker_id in live:
                out.append(UpdateMetadataRequest(
                    ctx.controller_id, ctx.epoch, broker_id, live[broker_id].epoch, brokers, partitions))
        for broker_id in sorted(self._stop_replica):
            if broker_id in live:
                out.append(StopReplicaRequest(
                    ctx.controller_id, ctx.epoch, broker_id, live[broker_id].epoch,
                    tuple(self._stop_replica[broker_id][tp] for tp in sorted(self._stop_replica[broker_id])),
                ))
        return tuple(out)


def update_metadata(ctx: ControllerContext, broker_ids: Iterable[int], partitions: Iterable[TopicPartition] = ()):
    """Kafka's ``sendUpdateMetadataRequest``: a batch of UpdateMetadata only."""
    batch = RequestBatch()
    batch.add_update_metadata_request_for_brokers(ctx, broker_ids, partitions)
    return batch.requests(ctx)
