"""Partition reassignment, Kafka 2.4+ (KIP-455, §15): ``onPartitionReassignment``.

RS is the full replica set written in ``/brokers/topics/T`` while the reassignment runs,
ORS the origin, TRS the target, AR = adding = TRS − ORS, RR = removing = ORS − TRS.

Phase A (target not yet all in the ISR): U — write RS/AR/RR to the topic znode; A1 — bump the
leader epoch and send LeaderAndIsr with the new sets to ORS and (``is_new``) AR; A2 — AR →
NewReplica. Then wait: the leader adds the new replicas to the ISR as they catch up, that ISR
change reaches the controller, and this runs again.

Phase B (TRS ⊆ ISR): B1 AR → OnlineReplica; B2 RS = TRS in memory; B3 move the leader if it
is not in TRS (or is dead), else bump the epoch; B4/B5 RR → Offline → DeletionStarted →
DeletionSuccessful → NonExistent; B6 write RS = TRS to ZooKeeper — last, so the origin survives
a controller crash midway; B7 remove the partition from ``/admin/reassign_partitions``;
B8 UpdateMetadata to every broker.
"""

from __future__ import annotations

from typing import Callable, Mapping

from ..model import LeaderIsrAndControllerEpoch, PartitionAndReplica, ReplicaAssignment, TopicPartition
from ..records import Record
from ..subjects import partition_subject
from . import topic_deletion
from .context import ControllerContext
from .election import ReassignPartitionLeaderElectionStrategy
from .events import ZkPartitionReassignment
from .partition_state_machine import handle_state_changes as partition_changes
from .plan import RemoveFromPartitionReassignment, SetTopicAssignment, UpdatePartitionState
from .program import Done, Program, attempt, emit, put_events, read_partition_states
from .replica_state_machine import handle_state_changes as replica_changes
from .request_batch import RequestBatch, update_metadata
from .states import PartitionState, ReplicaState

R = ReplicaState


def process_zk_partition_reassignment(ctx: ControllerContext, requested: Mapping[TopicPartition, tuple[int, ...]]) -> Program:
    """``/admin/reassign_partitions`` was created (or is found at failover) with ``requested``;
    returns ``Done(ctx, the partitions whose reassignment started)``.

    One deliberate difference from Kafka 2.8: a reassignment that overrides an unfinished one
    and would stop the replica that currently leads is refused (the fix proposed in KAFKA-14808,
    which no Kafka release contains), so a partition is never left without a leader by an
    operator's second thought."""
    failed: list[tuple[TopicPartition, tuple[int, ...] | None]] = []
    reassigned: set[TopicPartition] = set()
    for tp, target in sorted(requested.items()):
        current = ctx.partition_assignments.get(tp)
        if ctx.is_topic_queued_up_for_deletion(tp.topic) or current is None:
            why = "its topic is being deleted" if current is not None else "the partition does not exist"
            yield from emit([_record(ctx, tp, "refused", f"Reassignment of {tp} refused: {why} "
                                                         f"(UNKNOWN_TOPIC_OR_PARTITION).", "error")])
            failed.append((tp, None))
            continue
        new = current.reassign_to(tuple(target))
        leader = (yield from read_partition_states([tp])).get(tp)
        unneeded = [r for r in current.replicas if r not in new.replicas]
        if leader is not None and leader.leader in unneeded:
            yield from emit([_record(ctx, tp, "refused", (
                f"Reassignment of {tp} to {list(target)} refused: it would stop replica {leader.leader}, which an "
                f"earlier, unfinished reassignment added and which now leads the partition. Kafka 2.8 accepts it "
                f"and leaves the partition leaderless (KAFKA-14808; the fix proposed there is in no Kafka release); the lab "
                f"applies it."), "error")])
            failed.append((tp, tuple(target)))
            continue
        ctx, _ = yield from on_partition_reassignment(ctx, tp, new)
        reassigned.add(tp)
    if failed:
        yield from maybe_remove_from_zk_reassignment(tuple(failed))
    return Done(ctx, reassigned)


def maybe_remove_from_zk_reassignment(partitions) -> Program:
    """Drop ``partitions`` from ``/admin/reassign_partitions``; when that deletes the znode, put
    ``ZkPartitionReassignment`` so its handler arms the watch for the next one — Kafka's watch
    acts on the znode's *creation* only, and a deletion re-arms nothing by itself."""
    [outcome] = yield from attempt([RemoveFromPartitionReassignment(tuple(partitions))])
    if outcome.deleted:
        yield from put_events(ZkPartitionReassignment())


def maybe_resume_reassignments(ctx: ControllerContext, should_resume: Callable[[TopicPartition, ReplicaAssignment], bool]) -> Program:
    for tp in sorted(ctx.partitions_being_reassigned):
        assignment = ctx.partition_assignments.get(tp)
        if assignment is not None and should_resume(tp, assignment):
            ctx, _ = yield from on_partition_reassignment(ctx, tp, assignment)
    return Done(ctx)


def maybe_complete_reassignment(ctx: ControllerContext, tp: TopicPartition) -> Program:
    assignment = ctx.partition_assignments[tp]
    if (yield from is_reassignment_complete(tp, assignment)):
        ctx, _ = yield from on_partition_reassignment(ctx, tp, assignment)
    return Done(ctx)


def is_reassignment_complete(tp: TopicPartition, assignment: ReplicaAssignment) -> Program:
    """Complete when nothing is being reassigned or every target replica is in the ISR that
    ZooKeeper holds now (the leader adds caught-up replicas there)."""
    if not assignment.is_being_reassigned:
        return True
    info = (yield from read_partition_states([tp])).get(tp)
    return info is not None and set(assignment.target_replicas) <= set(info.isr)


def on_partition_reassignment(ctx: ControllerContext, tp: TopicPartition, reassignment: ReplicaAssignment) -> Program:
    ctx = topic_deletion.mark_topic_ineligible_for_deletion(ctx, {tp.topic})
    ctx, _ = yield from _update_current_reassignment(ctx, tp, reassignment)
    if not (yield from is_reassignment_complete(tp, reassignment)):
        yield from emit([_record(ctx, tp, "reassigning", (
            f"Reassigning {tp} to {list(reassignment.target_replicas)}: replicas {list(reassignment.replicas)}, "
            f"adding {list(reassignment.adding_replicas)}, removing {list(reassignment.removing_replicas)}; "
            f"waiting until every target replica is in the ISR."))])
        ctx, _ = yield from _update_leader_epoch_and_send_request(ctx, tp, reassignment)
        for replica in reassignment.adding_replicas:
            ctx, _ = yield from replica_changes(ctx, [PartitionAndReplica(tp, replica)], R.NewReplica)
        return Done(ctx)
    adding = [PartitionAndReplica(tp, r) for r in reassignment.adding_replicas]
    ctx, _ = yield from replica_changes(ctx, adding, R.OnlineReplica)
    completed = ReplicaAssignment(reassignment.target_replicas)
    ctx = ctx.with_assignments({tp: completed})
    ctx, _ = yield from _move_reassigned_partition_leader_if_required(ctx, tp, completed)
    ctx, _ = yield from _stop_removed_replicas(ctx, tp, reassignment.removing_replicas)
    ctx, _ = yield from _update_replica_assignment_for_partition(ctx, tp, completed)
    yield from maybe_remove_from_zk_reassignment(((tp, completed.replicas),))
    ctx = ctx.evolve(partitions_being_reassigned=ctx.partitions_being_reassigned - {tp})
    yield from emit([_record(ctx, tp, "reassigned", f"Reassignment of {tp} completed: replicas are now "
                                                    f"{list(completed.replicas)}.")],
                    update_metadata(ctx, ctx.live_or_shutting_down_broker_ids, [tp]))
    return (yield from topic_deletion.resume_deletion_for_topics(ctx, {tp.topic}))


def _update_current_reassignment(ctx, tp, reassignment) -> Program:
    current = ctx.partition_assignments[tp]
    if current != reassignment:
        ctx, _ = yield from _update_replica_assignment_for_partition(ctx, tp, reassignment)
        unneeded = [r for r in current.replicas if r not in reassignment.replicas]
        if unneeded:
            ctx, _ = yield from _stop_removed_replicas(ctx, tp, unneeded)
    return Done(ctx.evolve(partitions_being_reassigned=ctx.partitions_being_reassigned | {tp}))


def _update_replica_assignment_for_partition(ctx, tp, assignment) -> Program:
    ctx = ctx.with_assignments({tp: assignment})
    topic_assignment = {p.partition: ctx.partition_assignments[p] for p in ctx.partitions_for_topic(tp.topic)}
    [outcome] = yield from attempt([SetTopicAssignment(tp.topic, topic_assignment)])
    if not outcome.ok:
        yield from emit([_record(ctx, tp, None, f"Writing the assignment of {tp.topic} failed: "
                                                f"{outcome.reason or outcome.outcome}.", "error")])
    return Done(ctx)


def _update_leader_epoch_and_send_request(ctx, tp, assignment) -> Program:
    ctx, updated = yield from update_leader_epoch(ctx, tp)
    if updated is not None:
        batch = RequestBatch()
        batch.add_leader_and_isr_request_for_brokers(ctx, assignment.origin_replicas, tp, updated, is_new=False)
        batch.add_leader_and_isr_request_for_brokers(ctx, assignment.adding_replicas, tp, updated, is_new=True)
        yield from emit(requests=batch.requests(ctx))
    return Done(ctx)


def update_leader_epoch(ctx: ControllerContext, tp: TopicPartition) -> Program:
    """Same leader and ISR, leader epoch + 1 — so every replica learns the new replica set.
    A BADVERSION is retried until the write lands, as Kafka's loop does."""
    while True:
        info = (yield from read_partition_states([tp])).get(tp)
        if info is None or info.controller_epoch > ctx.epoch:
            why = "it has no state znode" if info is None else "a newer controller wrote its state"
            yield from emit([_record(ctx, tp, None, f"Cannot bump the leader epoch of {tp}: {why}.", "error")])
            break
        new = LeaderIsrAndControllerEpoch(info.leader_and_isr.new_epoch(), ctx.epoch)
        [outcome] = yield from attempt([UpdatePartitionState(tp, new)])
        if outcome.ok:
            new = LeaderIsrAndControllerEpoch(new.leader_and_isr.with_zk_version(outcome.zk_version), ctx.epoch)
            ctx = ctx.with_leadership({tp: new})
            yield from emit([_record(ctx, tp, "epoch_bumped", f"Leader epoch of {tp} bumped to "
                                     f"{new.leader_and_isr.leader_epoch} so every replica learns the new replica set.")])
            return Done(ctx, new)
        if outcome.outcome != "bad_version":
            yield from emit([_record(ctx, tp, None, f"Bumping the leader epoch of {tp} failed: "
                                                    f"{outcome.reason or outcome.outcome}.", "error")])
            break
    return Done(ctx)


def _move_reassigned_partition_leader_if_required(ctx, tp, new_assignment) -> Program:
    info = ctx.partition_leadership_info.get(tp)
    if info is not None and info.leader in new_assignment.replicas and ctx.is_replica_online(info.leader):
        return (yield from _update_leader_epoch_and_send_request(ctx, tp, new_assignment))
    ctx, _ = yield from partition_changes(ctx, [tp], PartitionState.OnlinePartition,
                                          ReassignPartitionLeaderElectionStrategy())
    return Done(ctx)


def _stop_removed_replicas(ctx, tp, removed) -> Program:
    replicas = [PartitionAndReplica(tp, r) for r in removed]
    for target in (R.OfflineReplica, R.ReplicaDeletionStarted, R.ReplicaDeletionSuccessful, R.NonExistentReplica):
        ctx, _ = yield from replica_changes(ctx, replicas, target)
    return Done(ctx)


def _record(ctx, tp, to_state, note, outcome="ok") -> Record:
    info = ctx.partition_leadership_info.get(tp)
    assignment = ctx.partition_assignments.get(tp)
    return Record(
        kind="controller", subject=partition_subject(tp.topic, tp.partition), to_state=to_state,
        controller_id=ctx.controller_id, controller_epoch=ctx.epoch, topic=tp.topic, partition=tp.partition,
        leader=info.leader if info else None, isr=tuple(info.isr) if info else None,
        leader_epoch=info.leader_and_isr.leader_epoch if info else None, outcome=outcome, note=note,
        op="reassign_partitions", detail={"replicas": list(assignment.replicas), "adding_replicas": list(
            assignment.adding_replicas), "removing_replicas": list(assignment.removing_replicas)} if assignment else None)
