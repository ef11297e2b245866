"""The broker side of the controller's requests (§3 items 3–5, §17): Kafka's ``ReplicaManager``
and ``MetadataCache`` epoch rules.

A broker believes whichever controller has the highest epoch it has seen. A request from an
older controller (a zombie that has not noticed it lost ``/controller``) is rejected whole with
``STALE_CONTROLLER_EPOCH``. A request meant for an earlier incarnation of this broker (older
broker epoch) is rejected with ``STALE_BROKER_EPOCH``. Within a LeaderAndIsr, a partition state
is applied only if its leader epoch is newer than the one the broker has.

Each handler returns the broker's new state, the response, and one record saying what
happened, so a bounced request is as visible as an applied one.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Mapping

from ..model import TopicPartition
from ..records import Record
from ..requests import (
    EPOCH_DURING_DELETE,
    NO_EPOCH,
    LeaderAndIsrRequest,
    StopReplicaRequest,
    UpdateMetadataPartitionState,
    UpdateMetadataRequest,
)
from ..subjects import request_subject

NONE = "NONE"
STALE_CONTROLLER_EPOCH = "STALE_CONTROLLER_EPOCH"
STALE_BROKER_EPOCH = "STALE_BROKER_EPOCH"
UNKNOWN_TOPIC_OR_PARTITION = "UNKNOWN_TOPIC_OR_PARTITION"
FENCED_LEADER_EPOCH = "FENCED_LEADER_EPOCH"


@dataclass(frozen=True)
class HostedPartition:
    """What a broker knows about a partition it hosts (Kafka's ``Partition``)."""

    topic_partition: TopicPartition
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    zk_version: int
    controller_epoch: int

    def is_leader(self, broker_id: int) -> bool:
        return self.leader == broker_id


@dataclass(frozen=True)
class BrokerState:
    broker_id: int
    broker_epoch: int = -1
    controller_epoch: int = 0
    """The highest controller epoch this broker has seen (Kafka: ``ReplicaManager.controllerEpoch``)."""
    controller_id: int = -1
    partitions: Mapping[TopicPartition, HostedPartition] = field(default_factory=lambda: MappingProxyType({}))
    metadata_brokers: tuple[int, ...] = ()
    metadata_partitions: Mapping[TopicPartition, UpdateMetadataPartitionState] = field(
        default_factory=lambda: MappingProxyType({}))

    def led_partitions(self) -> list[TopicPartition]:
        return sorted(tp for tp, p in self.partitions.items() if p.leader == self.broker_id)


@dataclass(frozen=True)
class Response:
    error: str
    partition_errors: tuple[tuple[TopicPartition, str], ...] = ()


def _stale_broker_epoch(state: BrokerState, request) -> bool:
    return request.broker_epoch != -1 and request.broker_epoch < state.broker_epoch


def _record(state: BrokerState, request, correlation_id: int, outcome: str, note: str, detail=None) -> Record:
    return Record(
        kind="request", subject=request_subject(request.name, correlation_id),
        to_state="rejected" if outcome != "ok" else "applied", op=request.name,
        controller_id=request.controller_id, controller_epoch=request.controller_epoch,
        broker_id=state.broker_id, outcome=outcome, note=note, detail=detail,
    )


def _rejected(state, request, correlation_id):
    """The request-level checks every control request goes through, or ``None`` if it passes."""
    if _stale_broker_epoch(state, request):
        return state, Response(STALE_BROKER_EPOCH), _record(
            state, request, correlation_id, "rejected_stale_epoch",
            f"Broker {state.broker_id} rejected {request.name}: it was meant for an earlier incarnation "
            f"(broker epoch {request.broker_epoch} < {state.broker_epoch}) — STALE_BROKER_EPOCH.")
    if request.controller_epoch < state.controller_epoch:
        return state, Response(STALE_CONTROLLER_EPOCH), _record(
            state, request, correlation_id, "rejected_stale_epoch",
            f"Broker {state.broker_id} rejected {request.name} from controller {request.controller_id}: its "
            f"epoch {request.controller_epoch} is older than the epoch {state.controller_epoch} it already "
            f"knows — STALE_CONTROLLER_EPOCH.")
    return None


def handle_leader_and_isr(state: BrokerState, request: LeaderAndIsrRequest, correlation_id: int):
    """Kafka's ``becomeLeaderOrFollower``. Returns ``(state, response, record)``."""
    rejected = _rejected(state, request, correlation_id)
    if rejected:
        return rejected
    partitions = dict(state.partitions)
    errors, applied = [], {}
    for ps in request.partition_states:
        tp = ps.topic_partition
        current = partitions.get(tp)
        current_epoch = current.leader_epoch if current else -1
        if ps.leader_epoch > current_epoch:
            if state.broker_id not in ps.replicas:
                errors.append((tp, UNKNOWN_TOPIC_OR_PARTITION))
                continue
            partitions[tp] = HostedPartition(tp, ps.leader, ps.leader_epoch, ps.isr, ps.replicas,
                                             ps.zk_version, ps.controller_epoch)
            applied[str(tp)] = "leader" if ps.leader == state.broker_id else f"follower of {ps.leader}"
            errors.append((tp, NONE))
        else:
            errors.append((tp, STALE_CONTROLLER_EPOCH))  # Kafka answers a stale *leader* epoch this way too
    new_state = replace(state, controller_epoch=request.controller_epoch, controller_id=request.controller_id,
                        partitions=MappingProxyType(partitions))
    ignored = {str(tp): e for tp, e in errors if e != NONE}
    note = f"Broker {state.broker_id} applied LeaderAndIsr for {len(applied)} partition(s)"
    if ignored:
        note += f" and ignored {len(ignored)} whose leader epoch was not newer"
    return new_state, Response(NONE, tuple(errors)), _record(
        new_state, request, correlation_id, "ok", note + ".", {"applied": applied, "ignored": ignored})


def handle_update_metadata(state: BrokerState, request: UpdateMetadataRequest, correlation_id: int):
    rejected = _rejected(state, request, correlation_id)
    if rejected:
        return rejected
    metadata = dict(state.metadata_partitions)
    for ps in request.partition_states:
        if ps.leader == -2:  # LeaderDuringDelete: the topic is going away
            metadata.pop(ps.topic_partition, None)
        else:
            metadata[ps.topic_partition] = ps
    new_state = replace(state, controller_epoch=request.controller_epoch, controller_id=request.controller_id,
                        metadata_brokers=tuple(b.id for b in request.live_brokers),
                        metadata_partitions=MappingProxyType(metadata))
    return new_state, Response(NONE), _record(
        new_state, request, correlation_id, "ok",
        f"Broker {state.broker_id} updated its metadata cache: live brokers "
        f"{[b.id for b in request.live_brokers]}, {len(request.partition_states)} partition(s).")


def handle_stop_replica(state: BrokerState, request: StopReplicaRequest, correlation_id: int):
    rejected = _rejected(state, request, correlation_id)
    if rejected:
        return rejected
    partitions = dict(state.partitions)
    errors, stopped = [], {}
    for ps in request.partition_states:
        tp = ps.topic_partition
        current = partitions.get(tp)
        if current is None or ps.leader_epoch in (EPOCH_DURING_DELETE, NO_EPOCH) or ps.leader_epoch > current.leader_epoch:
            partitions.pop(tp, None)
            stopped[str(tp)] = "deleted" if ps.delete_partition else "stopped"
            errors.append((tp, NONE))
        else:
            errors.append((tp, FENCED_LEADER_EPOCH))
    new_state = replace(state, controller_epoch=request.controller_epoch, controller_id=request.controller_id,
                        partitions=MappingProxyType(partitions))
    fenced = {str(tp): e for tp, e in errors if e != NONE}
    note = f"Broker {state.broker_id} stopped {len(stopped)} replica(s)"
    if fenced:
        note += (f"; {len(fenced)} carried a leader epoch that is not newer than its own, so it kept them "
                 f"(FENCED_LEADER_EPOCH)")
    return new_state, Response(NONE, tuple(errors)), _record(
        new_state, request, correlation_id, "ok", note + ".", {"stopped": stopped, "fenced": fenced})
