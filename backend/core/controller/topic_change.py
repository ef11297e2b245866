"""Topic creation and partition expansion (§9): ``TopicChange``, ``PartitionModifications``,
``onNewPartitionCreation``.

An admin (``kafka-topics.sh``, our ``create_topic`` fault, or ``zkCli.sh``) only writes
``/brokers/topics/<T>`` with the replica assignment. Everything else — choosing leaders,
creating the state znodes, telling the brokers — is the controller's reaction to that znode.
"""

from __future__ import annotations

from typing import Iterable, Mapping

from ..model import ReplicaAssignment, TopicPartition
from ..records import Record
from .context import ControllerContext
from .election import OfflinePartitionLeaderElectionStrategy
from .partition_state_machine import handle_state_changes as partition_changes
from .plan import SetTopicAssignment
from .program import Done, Program, attempt, emit
from .replica_state_machine import handle_state_changes as replica_changes
from .states import PartitionState, ReplicaState


def process_topic_change(
    ctx: ControllerContext, topics: Iterable[str],
    new_topic_assignments: Mapping[str, Mapping[int, ReplicaAssignment]],
    new_topic_configs: Mapping[str, Mapping[str, str]] | None = None,
) -> Program:
    """``topics`` = children of ``/brokers/topics`` now; assignments and configs read for the
    topics this controller did not know (see :func:`topics_to_read`)."""
    topics = set(topics)
    new_topics = sorted(topics - ctx.all_topics)
    deleted = sorted(ctx.all_topics - topics)
    for topic in deleted:
        ctx = ctx.without_topic(topic)
    assignments = {
        TopicPartition(t, p): a for t in new_topics for p, a in new_topic_assignments.get(t, {}).items()
    }
    ctx = ctx.evolve(
        all_topics=ctx.all_topics | set(new_topics),
        topic_configs={**ctx.topic_configs, **{t: dict(c) for t, c in (new_topic_configs or {}).items()}},
    ).with_assignments(assignments)
    if new_topics or deleted:
        yield from emit([Record(
            kind="controller", subject=f"broker:{ctx.controller_id}", to_state="topic_change",
            controller_id=ctx.controller_id, controller_epoch=ctx.epoch,
            note=f"Topics changed — new {new_topics}, gone {deleted}.",
            detail={"new": new_topics, "deleted": deleted})])
    if assignments:
        ctx, _ = yield from on_new_partition_creation(ctx, sorted(assignments))
    return Done(ctx)


def topics_to_read(ctx: ControllerContext, topics: Iterable[str]) -> list[str]:
    """Which topics' assignments the runtime must read for a ``TopicChange``."""
    return sorted(set(topics) - ctx.all_topics)


def process_partition_modifications(
    ctx: ControllerContext, topic: str, assignment: Mapping[int, ReplicaAssignment],
) -> Program:
    """``/brokers/topics/<topic>`` changed: new partition ids are created; if the topic is being
    deleted the old assignment is written back instead."""
    to_add = {TopicPartition(topic, p): a for p, a in assignment.items()
              if TopicPartition(topic, p) not in ctx.partition_assignments}
    if not to_add:
        return Done(ctx)
    if ctx.is_topic_queued_up_for_deletion(topic):
        existing = {tp.partition: ctx.partition_assignments[tp] for tp in ctx.partitions_for_topic(topic)}
        yield from emit([Record(
            kind="controller", subject=f"broker:{ctx.controller_id}", to_state="partitions_refused",
            controller_id=ctx.controller_id, controller_epoch=ctx.epoch, topic=topic, outcome="error",
            note=f"Topic {topic} is being deleted: restoring its assignment instead of adding partitions.")])
        yield from attempt([SetTopicAssignment(topic, existing)])
        return Done(ctx)
    ctx = ctx.with_assignments(to_add)
    return (yield from on_new_partition_creation(ctx, sorted(to_add)))


def on_new_partition_creation(ctx: ControllerContext, partitions: list[TopicPartition]) -> Program:
    ctx, _ = yield from partition_changes(ctx, partitions, PartitionState.NewPartition)
    ctx, _ = yield from replica_changes(ctx, ctx.replicas_for_partition(partitions), ReplicaState.NewReplica)
    ctx, _ = yield from partition_changes(ctx, partitions, PartitionState.OnlinePartition,
                                          OfflinePartitionLeaderElectionStrategy(allow_unclean=False))
    ctx, _ = yield from replica_changes(ctx, ctx.replicas_for_partition(partitions), ReplicaState.OnlineReplica)
    return Done(ctx)
