"""Kafka's ``StateChangeLogger``: one record per state change, election and ISR change.

Kafka writes "Changed partition t-0 from OfflinePartition to OnlinePartition with state
LeaderAndIsr(leader=2, …)" to ``state-change.log``. We write the same facts as records. The
``cause`` and ``cause_seq`` are filled in by the runtime, which knows which event or fault is
being handled; everything else is decided here.
"""

from __future__ import annotations

from ..model import LeaderIsrAndControllerEpoch, PartitionAndReplica, TopicPartition
from ..records import Record
from ..subjects import partition_subject, replica_subject
from .context import ControllerContext
from .election import ElectionResult
from .states import PartitionState, ReplicaState


def _leader_fields(state: LeaderIsrAndControllerEpoch | None) -> dict:
    if state is None:
        return {}
    lai = state.leader_and_isr
    return {"leader": lai.leader, "isr": tuple(lai.isr), "leader_epoch": lai.leader_epoch,
            "zk_version": lai.zk_version}


def partition_change(
    ctx: ControllerContext, tp: TopicPartition, from_state: PartitionState | None, to_state: PartitionState,
    state: LeaderIsrAndControllerEpoch | None = None, outcome: str = "ok", note: str | None = None,
) -> Record:
    """``from_state`` is ``None`` for the initial bookkeeping at failover (not a transition)."""
    return Record(
        kind="partition", subject=partition_subject(tp.topic, tp.partition),
        from_state=from_state.name if from_state else None, to_state=to_state.name,
        controller_id=ctx.controller_id, controller_epoch=ctx.epoch,
        topic=tp.topic, partition=tp.partition, outcome=outcome, note=note,
        detail={"replicas": list(ctx.partition_replica_assignment(tp))},
        **_leader_fields(state if state is not None else ctx.partition_leadership_info.get(tp)),
    )


def invalid_partition_transition(ctx: ControllerContext, tp: TopicPartition, to_state: PartitionState) -> Record:
    current = ctx.partition_state(tp)
    return partition_change(
        ctx, tp, current, to_state, outcome="invalid_transition",
        note=f"{to_state.name} can only be entered from "
             f"{', '.join(sorted(s.name for s in to_state.valid_previous_states))}; the partition stays "
             f"{current.name}.",
    )


def replica_change(
    ctx: ControllerContext, replica: PartitionAndReplica, from_state: ReplicaState, to_state: ReplicaState,
    outcome: str = "ok", note: str | None = None,
) -> Record:
    tp = replica.topic_partition
    return Record(
        kind="replica", subject=replica_subject(tp.topic, tp.partition, replica.replica),
        from_state=from_state.name, to_state=to_state.name,
        controller_id=ctx.controller_id, controller_epoch=ctx.epoch,
        topic=tp.topic, partition=tp.partition, broker_id=replica.replica, outcome=outcome, note=note,
    )


def invalid_replica_transition(ctx: ControllerContext, replica: PartitionAndReplica, to_state: ReplicaState) -> Record:
    current = ctx.replica_state(replica)
    return replica_change(
        ctx, replica, current, to_state, outcome="invalid_transition",
        note=f"{to_state.name} can only be entered from "
             f"{', '.join(sorted(s.name for s in to_state.valid_previous_states))}; the replica stays "
             f"{current.name}.",
    )


def election(
    ctx: ControllerContext, result: ElectionResult, outcome: str, note: str | None = None,
    previous: LeaderIsrAndControllerEpoch | None = None,
) -> Record:
    """``previous`` is the state the election started from (as read from ZooKeeper)."""
    tp = result.topic_partition
    before = previous or ctx.partition_leadership_info.get(tp)
    return Record(
        kind="election", subject=partition_subject(tp.topic, tp.partition),
        to_state="elected" if outcome == "ok" else None,
        controller_id=ctx.controller_id, controller_epoch=ctx.epoch,
        topic=tp.topic, partition=tp.partition, election=result.election, outcome=outcome,
        note=note or result.note,
        detail={"assignment": list(ctx.partition_replica_assignment(tp)),
                "previous_leader": before.leader if before else None,
                "previous_isr": list(before.isr) if before else None,
                "live_brokers": sorted(ctx.live_broker_ids),
                "shutting_down_brokers": sorted(ctx.shutting_down_broker_ids),
                "recipients": list(result.recipients)},
        **_leader_fields(result.leader_and_isr if outcome == "ok" else before),
    )


def isr_change(
    ctx: ControllerContext, tp: TopicPartition, before: LeaderIsrAndControllerEpoch,
    after: LeaderIsrAndControllerEpoch, note: str, outcome: str = "ok",
) -> Record:
    shrunk = len(after.isr) < len(before.isr)
    return Record(
        kind="isr", subject=partition_subject(tp.topic, tp.partition),
        to_state="shrunk" if shrunk else "expanded",
        controller_id=ctx.controller_id, controller_epoch=ctx.epoch,
        topic=tp.topic, partition=tp.partition, outcome=outcome, note=note,
        detail={"previous_isr": list(before.isr), "previous_leader": before.leader,
                "previous_leader_epoch": before.leader_and_isr.leader_epoch},
        **_leader_fields(after),
    )


def failure(ctx: ControllerContext, tp: TopicPartition, kind: str, reason: str, outcome: str = "error") -> Record:
    """A change that could not be made for one partition (the rest of the batch goes on)."""
    return Record(
        kind=kind, subject=partition_subject(tp.topic, tp.partition),
        controller_id=ctx.controller_id, controller_epoch=ctx.epoch,
        topic=tp.topic, partition=tp.partition, outcome=outcome, note=reason,
        **_leader_fields(ctx.partition_leadership_info.get(tp)),
    )
