"""Kafka's ``ReplicaStateMachine`` (§12): replicas coming and going, and the ISR shrink.

Edges and their side effects (others are refused and recorded as ``invalid_transition``):

* NonExistentReplica → NewReplica: if the partition has a leader, LeaderAndIsr (``is_new``)
  to this replica — unless it *is* the leader, which is an error. Else mark only.
* NewReplica → OnlineReplica: make sure the assignment lists the replica; no request.
* Online/Offline/Ineligible → OnlineReplica: LeaderAndIsr with the current state to this
  replica (how a restarted follower learns whom to fetch from).
* New/Online/Offline/Ineligible → OfflineReplica: StopReplica (no delete) to the replica;
  remove it from the ISR in ZooKeeper (leader -1 if it led; an ISR of one member is kept: the
  controller never writes an empty ISR); leader epoch + 1; LeaderAndIsr to the other replicas.
* OfflineReplica → ReplicaDeletionStarted: StopReplica (delete).
* → ReplicaDeletionSuccessful / ReplicaDeletionIneligible: mark only.
* ReplicaDeletionSuccessful → NonExistentReplica: drop the replica from the assignment.

Replicas are handled grouped by broker id, in order, as in Kafka: two replicas of one
partition going offline in one call are two ISR writes, each bumping the leader epoch.
"""

from __future__ import annotations

from itertools import groupby
from typing import Iterable

from ..model import NO_LEADER, LeaderIsrAndControllerEpoch, PartitionAndReplica, ReplicaAssignment, TopicPartition
from . import state_change_log as state_changes
from .context import ControllerContext
from .plan import UpdatePartitionState
from .program import Done, Program, attempt, emit, read_partition_states
from .request_batch import RequestBatch
from .states import ReplicaState, is_valid_transition

R = ReplicaState


def handle_state_changes(
    ctx: ControllerContext, replicas: Iterable[PartitionAndReplica], target: ReplicaState,
) -> Program:
    replicas = sorted(set(replicas), key=lambda r: (r.replica, r.topic_partition))
    if not replicas:
        return Done(ctx)
    batch = RequestBatch()
    for replica_id, group in groupby(replicas, key=lambda r: r.replica):
        ctx, _ = yield from _do_handle_state_changes(ctx, replica_id, list(group), target, batch)
    yield from emit(requests=batch.requests(ctx))
    return Done(ctx)


def _do_handle_state_changes(ctx, replica_id: int, replicas, target: ReplicaState, batch: RequestBatch) -> Program:
    """Kafka's ``doHandleStateChanges``: one ``match`` on the target state, as there."""
    valid = [r for r in replicas if is_valid_transition(ctx.replica_state(r), target)]
    valid_set = set(valid)
    records = [state_changes.invalid_replica_transition(ctx, r, target) for r in replicas if r not in valid_set]
    marks: dict[PartitionAndReplica, ReplicaState] = {}
    if target is R.NewReplica:
        marks = _to_new_replica(ctx, replica_id, valid, batch, records)
    elif target is R.OnlineReplica:
        ctx, marks = _to_online_replica(ctx, replica_id, valid, batch)
    elif target is R.OfflineReplica:
        for replica in valid:
            batch.add_stop_replica_request_for_brokers(ctx, [replica_id], replica.topic_partition, False)
        with_leader = [r.topic_partition for r in valid if r.topic_partition in ctx.partition_leadership_info]
        ctx, (updated, isr_records) = yield from remove_replicas_from_isr(ctx, replica_id, with_leader)
        records += isr_records
        marks = _to_offline_replica(ctx, replica_id, valid, updated, batch)
    elif target is R.ReplicaDeletionStarted:
        for replica in valid:
            batch.add_stop_replica_request_for_brokers(ctx, [replica_id], replica.topic_partition, True)
        marks = {replica: target for replica in valid}
    elif target in (R.ReplicaDeletionIneligible, R.ReplicaDeletionSuccessful):
        marks = {replica: target for replica in valid}
    elif target is R.NonExistentReplica:
        assignments = {}
        for replica in valid:
            tp = replica.topic_partition
            current = assignments.get(tp) or ctx.partition_assignments.get(tp)
            if current is not None:
                assignments[tp] = current.remove_replica(replica_id)
        records += [state_changes.replica_change(ctx, r, ctx.replica_state(r), target) for r in valid]
        ctx = ctx.with_assignments(assignments).with_replica_states({}, removed=valid)
    records += [state_changes.replica_change(ctx, r, ctx.replica_state(r), s) for r, s in marks.items()]
    ctx = ctx.with_replica_states(marks)
    yield from emit(records)
    return Done(ctx)


def _to_new_replica(ctx, replica_id, valid, batch, records) -> dict:
    """A new replica is told its partition (LeaderAndIsr, ``is_new``); a leader cannot become new."""
    marks = {}
    for replica in valid:
        tp = replica.topic_partition
        info = ctx.partition_leadership_info.get(tp)
        if info is not None and info.leader == replica_id:
            records.append(state_changes.replica_change(
                ctx, replica, ctx.replica_state(replica), R.NewReplica, outcome="error",
                note=f"Replica {replica_id} of {tp} cannot become NewReplica: it is the partition's leader."))
            continue
        if info is not None:
            batch.add_leader_and_isr_request_for_brokers(ctx, [replica_id], tp, info, is_new=True)
        marks[replica] = R.NewReplica
    return marks


def _to_online_replica(ctx, replica_id, valid, batch) -> tuple:
    """A new replica joins its partition's assignment; any other is told its partition again."""
    assignments, marks = {}, {}
    for replica in valid:
        tp = replica.topic_partition
        if ctx.replica_state(replica) is R.NewReplica:
            current = ctx.partition_assignments.get(tp)
            if current is not None and replica_id not in current.replicas:
                assignments[tp] = ReplicaAssignment((*current.replicas, replica_id),
                                                    current.adding_replicas, current.removing_replicas)
        else:
            info = ctx.partition_leadership_info.get(tp)
            if info is not None:
                batch.add_leader_and_isr_request_for_brokers(ctx, [replica_id], tp, info, is_new=False)
        marks[replica] = R.OnlineReplica
    return ctx.with_assignments(assignments), marks


def _to_offline_replica(ctx, replica_id, valid, updated, batch) -> dict:
    """After the ISR removal: the other replicas learn the new ISR; a partition without leader
    information only needs UpdateMetadata. A replica whose ISR removal failed stays as it was."""
    marks = {}
    for replica in valid:
        tp = replica.topic_partition
        if tp in updated:
            if not ctx.is_topic_queued_up_for_deletion(tp.topic):
                others = [r for r in ctx.partition_replica_assignment(tp) if r != replica_id]
                batch.add_leader_and_isr_request_for_brokers(ctx, others, tp, updated[tp], is_new=False)
            marks[replica] = R.OfflineReplica
        elif tp not in ctx.partition_leadership_info:
            batch.add_update_metadata_request_for_brokers(ctx, ctx.live_or_shutting_down_broker_ids, [tp])
            marks[replica] = R.OfflineReplica
    return marks


def remove_replicas_from_isr(ctx: ControllerContext, replica_id: int, partitions) -> Program:
    """Take ``replica_id`` out of each partition's ISR in ZooKeeper (Kafka's
    ``removeReplicasFromIsr``): read the states, write conditionally where the replica is in the
    ISR, retry conflicts. Returns ``(ctx, {tp: state after}, records)``; partitions where the
    replica was not in the ISR come back as read, unwritten."""
    updated: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
    records: list = []
    remaining = list(partitions)
    while remaining:  # as Kafka's: a BADVERSION is retried until the write lands, with no cap
        states = yield from read_partition_states(remaining)
        writes, planned, unchanged = [], [], {}
        for tp in remaining:
            info = states.get(tp)
            if info is None:
                if not ctx.is_topic_queued_up_for_deletion(tp.topic):
                    records.append(state_changes.failure(
                        ctx, tp, "isr", f"Cannot remove {replica_id} from the ISR of {tp}: its state znode is missing."))
                continue
            lai = info.leader_and_isr
            if info.controller_epoch > ctx.epoch:
                records.append(state_changes.failure(
                    ctx, tp, "isr", f"Not removing {replica_id} from the ISR of {tp}: the state was written by a "
                    f"newer controller (epoch {info.controller_epoch} > mine {ctx.epoch}).",
                    outcome="rejected_stale_epoch"))
            elif replica_id not in lai.isr:
                unchanged[tp] = LeaderIsrAndControllerEpoch(lai, ctx.epoch)
            else:
                new_leader = NO_LEADER if lai.leader == replica_id else lai.leader
                new_isr = lai.isr if len(lai.isr) == 1 else tuple(r for r in lai.isr if r != replica_id)
                new = LeaderIsrAndControllerEpoch(lai.new_leader_and_isr(new_leader, new_isr), ctx.epoch)
                writes.append(UpdatePartitionState(tp, new))
                planned.append((tp, info, new))
        outcomes = yield from attempt(writes)
        done, remaining = {}, []
        for (tp, before, new), outcome in zip(planned, outcomes):
            if outcome.ok:
                done[tp] = LeaderIsrAndControllerEpoch(new.leader_and_isr.with_zk_version(outcome.zk_version), ctx.epoch)
                note = _shrink_note(replica_id, before, done[tp])
                records.append(state_changes.isr_change(ctx, tp, before, done[tp], note))
            elif outcome.outcome == "bad_version":
                remaining.append(tp)
            else:
                records.append(state_changes.failure(ctx, tp, "isr", f"Removing {replica_id} from the ISR of {tp} "
                                                                    f"failed: {outcome.reason or outcome.outcome}."))
        updated.update(unchanged)
        updated.update(done)
        ctx = ctx.with_leadership({**unchanged, **done})
    return Done(ctx, (updated, records))


def _shrink_note(replica_id: int, before: LeaderIsrAndControllerEpoch, after: LeaderIsrAndControllerEpoch) -> str:
    epochs = f"leader epoch {before.leader_and_isr.leader_epoch} → {after.leader_and_isr.leader_epoch}"
    if before.isr == after.isr:
        return (f"Replica {replica_id} went offline while it was the last ISR member: the ISR stays "
                f"{list(after.isr)} (the controller never writes an empty ISR) and the partition has no leader; {epochs}.")
    if after.leader == NO_LEADER:
        return f"Leader {replica_id} went offline: leader -1, ISR {list(before.isr)} → {list(after.isr)}; {epochs}."
    return (f"Replica {replica_id} went offline, so the controller removed it from the ISR: "
            f"{list(before.isr)} → {list(after.isr)}, leader stays {after.leader}; {epochs}.")
