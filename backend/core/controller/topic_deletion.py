"""Kafka's ``TopicDeletionManager`` (§14): deleting a topic is a small state machine of its own.

An admin creates ``/admin/delete_topics/<T>``. The controller queues the topic, takes its
partitions Offline → NonExistent, tells every broker (UpdateMetadata with leader -2), and moves
each live replica Offline → ReplicaDeletionStarted (StopReplica with delete). Each broker's
StopReplica response moves its replicas to ReplicaDeletionSuccessful (or Ineligible on error).
When every replica succeeded the znodes go and the topic is forgotten. A dead replica makes
the topic *ineligible*: deletion waits until that broker comes back, then resumes.
"""

from __future__ import annotations

from typing import Iterable

from ..model import PartitionAndReplica
from ..records import Record
from .context import ControllerContext
from .partition_state_machine import handle_state_changes as partition_changes
from .plan import DeleteTopicDeletionFlags, DeleteTopicZnodes
from .program import Done, Program, attempt, emit
from .replica_state_machine import handle_state_changes as replica_changes
from .request_batch import update_metadata
from .states import PartitionState, ReplicaState

R = ReplicaState


def is_delete_topic_enabled(ctx: ControllerContext) -> bool:
    return bool(ctx.config["delete.topic.enable"])


def init(ctx: ControllerContext, topics_to_be_deleted: Iterable[str], ineligible: Iterable[str]) -> Program:
    """At failover: queue the topics found under ``/admin/delete_topics`` (or, when deletion is
    disabled, delete those znodes)."""
    topics_to_be_deleted, ineligible = set(topics_to_be_deleted), set(ineligible)
    if is_delete_topic_enabled(ctx):
        return Done(ctx.evolve(
            topics_to_be_deleted=ctx.topics_to_be_deleted | topics_to_be_deleted,
            topics_ineligible_for_deletion=ctx.topics_ineligible_for_deletion | (ineligible & topics_to_be_deleted),
        ))
    yield from attempt([DeleteTopicDeletionFlags(tuple(sorted(topics_to_be_deleted)))] if topics_to_be_deleted else [])
    return Done(ctx)


def try_topic_deletion(ctx: ControllerContext) -> Program:
    """At the end of failover: carry on with whatever deletions were queued."""
    if not is_delete_topic_enabled(ctx):
        return Done(ctx)
    return (yield from resume_deletions(ctx))


def process_topic_deletion(ctx: ControllerContext, requested: Iterable[str]) -> Program:
    """The ``TopicDeletion`` event, with the children of ``/admin/delete_topics``."""
    requested = set(requested)
    non_existent = requested - ctx.all_topics
    if non_existent:
        yield from emit([_note(ctx, f"Ignoring the request to delete non-existing topic(s) {sorted(non_existent)}.")])
        yield from attempt([DeleteTopicDeletionFlags(tuple(sorted(non_existent)))])
    requested -= non_existent
    if not is_delete_topic_enabled(ctx):
        if requested:
            yield from emit([_note(ctx, f"delete.topic.enable is false: removing the deletion request(s) for "
                                        f"{sorted(requested)}.")])
            yield from attempt([DeleteTopicDeletionFlags(tuple(sorted(requested)))])
        return Done(ctx)
    if requested:
        reassigning = {tp.topic for tp in ctx.partitions_being_reassigned}
        ctx = mark_topic_ineligible_for_deletion(ctx, requested & reassigning)
        ctx, _ = yield from enqueue_topics_for_deletion(ctx, requested)
    return Done(ctx)


def enqueue_topics_for_deletion(ctx: ControllerContext, topics: Iterable[str]) -> Program:
    if not is_delete_topic_enabled(ctx):
        return Done(ctx)
    ctx = ctx.evolve(topics_to_be_deleted=ctx.topics_to_be_deleted | set(topics))
    return (yield from resume_deletions(ctx))


def resume_deletion_for_topics(ctx: ControllerContext, topics: Iterable[str]) -> Program:
    queued = set(topics) & ctx.topics_to_be_deleted
    if not queued:
        return Done(ctx)
    ctx = ctx.evolve(topics_ineligible_for_deletion=ctx.topics_ineligible_for_deletion - queued)
    return (yield from resume_deletions(ctx))


def mark_topic_ineligible_for_deletion(ctx: ControllerContext, topics: Iterable[str]) -> ControllerContext:
    if not is_delete_topic_enabled(ctx):
        return ctx
    halted = set(topics) & ctx.topics_to_be_deleted
    return ctx.evolve(topics_ineligible_for_deletion=ctx.topics_ineligible_for_deletion | halted)


def fail_replica_deletion(ctx: ControllerContext, replicas: Iterable[PartitionAndReplica]) -> Program:
    if not is_delete_topic_enabled(ctx):
        return Done(ctx)
    replicas = [r for r in replicas if ctx.is_topic_queued_up_for_deletion(r.topic_partition.topic)]
    ctx, _ = yield from replica_changes(ctx, replicas, R.ReplicaDeletionIneligible)
    ctx = mark_topic_ineligible_for_deletion(ctx, {r.topic_partition.topic for r in replicas})
    return (yield from resume_deletions(ctx))


def complete_replica_deletion(ctx: ControllerContext, replicas: Iterable[PartitionAndReplica]) -> Program:
    ctx, _ = yield from replica_changes(ctx, replicas, R.ReplicaDeletionSuccessful)
    return (yield from resume_deletions(ctx))


def process_stop_replica_response(ctx: ControllerContext, replica_id: int, partition_errors) -> Program:
    """``TopicDeletionStopReplicaResponseReceived``: per-partition errors fail, the rest succeed."""
    failed = [PartitionAndReplica(tp, replica_id) for tp, error in partition_errors if error != "NONE"]
    done = [PartitionAndReplica(tp, replica_id) for tp, error in partition_errors if error == "NONE"]
    if failed:
        ctx, _ = yield from fail_replica_deletion(ctx, failed)
    if done:
        ctx, _ = yield from complete_replica_deletion(ctx, done)
    return Done(ctx)


def is_topic_eligible_for_deletion(ctx: ControllerContext, topic: str) -> bool:
    return (topic in ctx.topics_to_be_deleted
            and not ctx.is_any_replica_in_state(topic, R.ReplicaDeletionStarted)
            and topic not in ctx.topics_ineligible_for_deletion)


def resume_deletions(ctx: ControllerContext) -> Program:
    retry, eligible = [], []
    for topic in sorted(ctx.topics_to_be_deleted):
        if ctx.are_all_replicas_in_state(topic, R.ReplicaDeletionSuccessful):
            ctx, _ = yield from complete_delete_topic(ctx, topic)
        elif not ctx.is_any_replica_in_state(topic, R.ReplicaDeletionStarted):
            if ctx.is_any_replica_in_state(topic, R.ReplicaDeletionIneligible):
                retry.append(topic)
        if is_topic_eligible_for_deletion(ctx, topic):
            eligible.append(topic)
    if retry:
        failed = [r for t in retry for r in ctx.replicas_in_state(t, R.ReplicaDeletionIneligible)]
        ctx, _ = yield from replica_changes(ctx, failed, R.OfflineReplica)
    if eligible:
        ctx, _ = yield from on_topic_deletion(ctx, eligible)
    return Done(ctx)


def on_topic_deletion(ctx: ControllerContext, topics) -> Program:
    unseen = [t for t in topics if t not in ctx.topics_with_deletion_started]
    if unseen:
        partitions = [tp for t in unseen for tp in ctx.partitions_for_topic(t)]
        ctx, _ = yield from partition_changes(ctx, partitions, PartitionState.OfflinePartition)
        ctx, _ = yield from partition_changes(ctx, partitions, PartitionState.NonExistentPartition)
        ctx = ctx.evolve(topics_with_deletion_started=ctx.topics_with_deletion_started | set(unseen))
    yield from emit([_note(ctx, f"Deletion of topic(s) {sorted(topics)} (re)started: brokers are told the "
                                f"leader is -2 and live replicas are stopped and deleted.")])
    partitions = [tp for t in topics for tp in ctx.partitions_for_topic(t)]
    yield from emit(requests=update_metadata(ctx, ctx.live_or_shutting_down_broker_ids, partitions))
    return (yield from on_partition_deletion(ctx, topics))


def on_partition_deletion(ctx: ControllerContext, topics) -> Program:
    dead, retry, ineligible = [], [], set()
    for topic in topics:
        replicas = ctx.replicas_for_topic(topic)
        alive = [r for r in replicas if ctx.is_replica_online(r.replica)]
        dead_here = [r for r in replicas if not ctx.is_replica_online(r.replica)]
        succeeded = set(ctx.replicas_in_state(topic, R.ReplicaDeletionSuccessful))
        dead += dead_here
        retry += [r for r in alive if r not in succeeded]
        if dead_here:
            ineligible.add(topic)
    ctx, _ = yield from replica_changes(ctx, dead, R.ReplicaDeletionIneligible)
    ctx, _ = yield from replica_changes(ctx, retry, R.OfflineReplica)
    ctx, _ = yield from replica_changes(ctx, retry, R.ReplicaDeletionStarted)
    if ineligible:
        ctx = mark_topic_ineligible_for_deletion(ctx, ineligible)
        yield from emit([_note(ctx, f"Deletion of {sorted(ineligible)} waits: some replicas are on dead brokers.")])
    return Done(ctx)


def complete_delete_topic(ctx: ControllerContext, topic: str) -> Program:
    ctx, _ = yield from replica_changes(ctx, ctx.replicas_in_state(topic, R.ReplicaDeletionSuccessful),
                                     R.NonExistentReplica)
    yield from attempt([DeleteTopicZnodes(topic)])
    yield from emit([_note(ctx, f"Deletion of topic {topic} completed: its znodes are gone.", topic)])
    return Done(ctx.without_topic(topic))


def _note(ctx: ControllerContext, note: str, topic: str | None = None) -> Record:
    return Record(kind="controller", subject=f"broker:{ctx.controller_id}", to_state="topic_deletion",
                  controller_id=ctx.controller_id, controller_epoch=ctx.epoch, topic=topic, note=note)
