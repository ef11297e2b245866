"""Becoming controller (§6) and stepping down (§2.4).

The broker that wins ``/controller`` starts with an empty context and the epoch it just
wrote. ``onControllerFailover`` rebuilds the whole context from ZooKeeper (brokers, topics,
assignments, every partition state), tells every broker who is alive, brings every replica and
partition to its proper state — electing leaders for partitions that have none — and resumes
whatever the previous controller left half done: reassignments, topic deletions, preferred
elections. A controller that loses ``/controller`` forgets everything (epoch 0).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from ..model import BrokerInfo, LeaderIsrAndControllerEpoch, PartitionAndReplica, ReplicaAssignment, TopicPartition
from ..records import Record
from . import leader_balance, reassignment, topic_deletion
from .context import ControllerContext
from .partition_state_machine import trigger_online_partition_state_change
from .plan import DeleteIsrChangeNotifications
from .program import Done, Program, attempt, emit
from .replica_state_machine import handle_state_changes as replica_changes
from .request_batch import update_metadata
from .state_change_log import partition_change
from .states import PartitionState, ReplicaState

P, R = PartitionState, ReplicaState


@dataclass(frozen=True)
class ClusterMetadata:
    """Everything ``initializeControllerContext`` and the rest of failover read from ZooKeeper."""

    brokers: Mapping[int, BrokerInfo] = field(default_factory=dict)
    assignments: Mapping[str, Mapping[int, ReplicaAssignment]] = field(default_factory=dict)
    partition_states: Mapping[TopicPartition, LeaderIsrAndControllerEpoch] = field(default_factory=dict)
    topic_configs: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    topics_to_delete: tuple[str, ...] = ()
    zk_reassignment: Mapping[TopicPartition, tuple[int, ...]] | None = None
    preferred_replica_election: tuple[TopicPartition, ...] | None = None
    isr_change_notifications: tuple[str, ...] = ()


def become_controller(ctx: ControllerContext, epoch: int, epoch_zk_version: int) -> tuple[ControllerContext, Record]:
    """The election transaction succeeded with this epoch (``/controller_epoch`` at that version)."""
    ctx = ctx.reset().evolve(epoch=epoch, epoch_zk_version=epoch_zk_version)
    return ctx, Record(
        kind="controller", subject=f"broker:{ctx.controller_id}", to_state="elected",
        controller_id=ctx.controller_id, controller_epoch=epoch, broker_id=ctx.controller_id,
        zk_version=epoch_zk_version,
        note=f"Broker {ctx.controller_id} created /controller and set /controller_epoch to {epoch} in one "
             f"ZooKeeper transaction: it is the controller with epoch {epoch}.")


def on_controller_resignation(ctx: ControllerContext, why: str) -> tuple[ControllerContext, Record]:
    record = Record(
        kind="controller", subject=f"broker:{ctx.controller_id}", to_state="resigned",
        controller_id=ctx.controller_id, controller_epoch=ctx.epoch, broker_id=ctx.controller_id,
        note=f"Broker {ctx.controller_id} stops being controller (epoch {ctx.epoch}): {why} "
             f"It forgets its whole context.")
    return ctx.reset(), record


def on_controller_failover(ctx: ControllerContext, metadata: ClusterMetadata) -> Program:
    if metadata.isr_change_notifications:
        yield from attempt([DeleteIsrChangeNotifications(tuple(metadata.isr_change_notifications))])
    ctx = initialize_controller_context(ctx, metadata)
    yield from emit([_record(ctx, "context_loaded", (
        f"Loaded the cluster from ZooKeeper: {len(ctx.live_brokers)} live broker(s) {sorted(ctx.live_brokers)}, "
        f"{len(ctx.all_topics)} topic(s), {len(ctx.partition_assignments)} partition(s)."))])
    # Every flag is queued, a topic that no longer exists included: its deletion completes at
    # once (no replica is left to stop), which removes the flag (Kafka's resumeDeletions).
    to_delete = set(metadata.topics_to_delete)
    ineligible = {t for t in to_delete if any(not ctx.is_replica_online(r.replica) for r in ctx.replicas_for_topic(t))}
    ineligible |= {tp.topic for tp in ctx.partitions_being_reassigned} & to_delete
    ctx, _ = yield from topic_deletion.init(ctx, to_delete, ineligible)
    yield from emit(requests=update_metadata(ctx, ctx.live_or_shutting_down_broker_ids))
    ctx, _ = yield from replica_state_machine_startup(ctx)
    ctx, _ = yield from partition_state_machine_startup(ctx)
    yield from emit([_record(ctx, "active", f"Ready to serve as the new controller with epoch {ctx.epoch}.")])
    resumed: set[TopicPartition] = set()  # Kafka's initializePartitionReassignments
    if metadata.zk_reassignment:
        ctx, resumed = yield from reassignment.process_zk_partition_reassignment(ctx, metadata.zk_reassignment)
    ctx, _ = yield from reassignment.maybe_resume_reassignments(ctx, lambda tp, _: tp not in resumed)
    ctx, _ = yield from topic_deletion.try_topic_deletion(ctx)
    # Kafka runs this even when nothing is pending: it deletes the znode and re-arms its watch.
    pending = [tp for tp in metadata.preferred_replica_election or ()
               if tp in ctx.partition_assignments and not ctx.is_topic_queued_up_for_deletion(tp.topic)]
    ctx, _ = yield from leader_balance.process_replica_leader_election(ctx, pending, "PREFERRED", "ZkTriggered")
    return Done(ctx)


def initialize_controller_context(ctx: ControllerContext, metadata: ClusterMetadata) -> ControllerContext:
    assignments = {
        TopicPartition(topic, p): a for topic, parts in metadata.assignments.items() for p, a in parts.items()
    }
    return ctx.evolve(
        live_brokers=dict(metadata.brokers),
        shutting_down_broker_ids=frozenset(),
        all_topics=frozenset(metadata.assignments),
        topic_configs={t: dict(c) for t, c in metadata.topic_configs.items()},
        partition_assignments=assignments,
        partition_leadership_info={tp: s for tp, s in metadata.partition_states.items() if tp in assignments},
        partitions_being_reassigned=frozenset(tp for tp, a in assignments.items() if a.is_being_reassigned),
    )


def replica_state_machine_startup(ctx: ControllerContext) -> Program:
    """Initial bookkeeping (online → OnlineReplica, else ReplicaDeletionIneligible, so topic
    deletion treats dead replicas as failed), then the real transitions: online replicas get
    LeaderAndIsr, offline ones leave the ISR (Kafka 2.4+)."""
    online, offline, marks = [], [], {}
    for tp in ctx.all_partitions():
        for r in ctx.partition_replica_assignment(tp):
            replica = PartitionAndReplica(tp, r)
            if ctx.is_replica_online(r):
                online.append(replica)
                marks[replica] = R.OnlineReplica
            else:
                offline.append(replica)
                marks[replica] = R.ReplicaDeletionIneligible
    ctx = ctx.with_replica_states(marks)
    ctx, _ = yield from replica_changes(ctx, online, R.OnlineReplica)
    ctx, _ = yield from replica_changes(ctx, offline, R.OfflineReplica)
    return Done(ctx)


def partition_state_machine_startup(ctx: ControllerContext) -> Program:
    """No state znode → New; leader online → Online; else Offline. Then elect where needed."""
    states = {}
    for tp in ctx.all_partitions():
        info = ctx.partition_leadership_info.get(tp)
        if info is None:
            states[tp] = P.NewPartition
        elif ctx.is_replica_online(info.leader, include_shutting_down=True):
            states[tp] = P.OnlinePartition
        else:
            states[tp] = P.OfflinePartition
    ctx = ctx.with_partition_states(states)
    yield from emit([_initial_partition_record(ctx, tp, s) for tp, s in sorted(states.items())])
    ctx, _ = yield from trigger_online_partition_state_change(ctx)
    return Done(ctx)


def _initial_partition_record(ctx: ControllerContext, tp: TopicPartition, state: PartitionState) -> Record:
    return partition_change(ctx, tp, None, state, note=f"Initial state at failover: {state.name}.")


def _record(ctx: ControllerContext, to_state: str, note: str) -> Record:
    return Record(kind="controller", subject=f"broker:{ctx.controller_id}", to_state=to_state,
                  controller_id=ctx.controller_id, controller_epoch=ctx.epoch, broker_id=ctx.controller_id,
                  note=note)
