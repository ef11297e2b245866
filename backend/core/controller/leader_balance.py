"""Preferred replica election and auto leader rebalance (§13).

After a failure, leaders pile up on the surviving brokers, and a restarted broker leads
nothing: the controller never moves a healthy leader on its own initiative, except here.
An admin triggers a *preferred replica election* (``/admin/preferred_replica_election``), or
the controller's timer finds a broker whose preferred partitions are led elsewhere for more
than ``leader.imbalance.per.broker.percentage`` percent (strictly) and moves them back.
"""

from __future__ import annotations

from typing import Iterable

from ..model import NO_LEADER, TopicPartition
from ..records import Record
from ..subjects import partition_subject
from .context import ControllerContext
from .election import OfflinePartitionLeaderElectionStrategy, PreferredReplicaPartitionLeaderElectionStrategy
from .election_algorithms import preferred_replica_partition_leader_election
from .partition_state_machine import handle_state_changes as partition_changes
from .plan import DeletePreferredReplicaElection
from .events import ReplicaLeaderElection
from .program import Done, Program, attempt, emit, put_events
from .states import PartitionState

# Kafka's ApiError names for the outcome of each partition of a triggered election.
ELECTION_NOT_NEEDED = "ELECTION_NOT_NEEDED"
INVALID_TOPIC_EXCEPTION = "INVALID_TOPIC_EXCEPTION"
UNKNOWN_TOPIC_OR_PARTITION = "UNKNOWN_TOPIC_OR_PARTITION"
PREFERRED_LEADER_NOT_AVAILABLE = "PREFERRED_LEADER_NOT_AVAILABLE"
ELIGIBLE_LEADERS_NOT_AVAILABLE = "ELIGIBLE_LEADERS_NOT_AVAILABLE"


def process_replica_leader_election(
    ctx: ControllerContext, partitions: Iterable[TopicPartition], election_type: str = "PREFERRED",
    trigger: str = "ZkTriggered",
) -> Program:
    """``ReplicaLeaderElection``; returns ``(ctx, {tp: new leader id or error name})``."""
    partitions = set(partitions)
    known = set(ctx.partition_assignments)
    unknown = sorted(partitions - known)
    being_deleted = sorted(tp for tp in partitions & known if ctx.is_topic_queued_up_for_deletion(tp.topic))
    live = sorted((partitions & known) - set(being_deleted))
    electable, already_valid = [], []
    for tp in live:
        info = ctx.partition_leadership_info.get(tp)
        leader = info.leader if info else NO_LEADER
        if election_type == "PREFERRED":
            needed = leader != ctx.partition_replica_assignment(tp)[0]
        else:
            needed = leader == NO_LEADER or leader not in ctx.live_broker_ids
        (electable if needed else already_valid).append(tp)
    results: dict = {tp: UNKNOWN_TOPIC_OR_PARTITION for tp in unknown}
    results.update({tp: INVALID_TOPIC_EXCEPTION for tp in being_deleted})
    results.update({tp: ELECTION_NOT_NEEDED for tp in already_valid})
    records = [_skip(ctx, tp, results[tp], election_type) for tp in (*unknown, *being_deleted, *already_valid)]
    yield from emit(records)
    ctx, elected = yield from on_replica_election(ctx, electable, election_type, trigger)
    not_available = PREFERRED_LEADER_NOT_AVAILABLE if election_type == "PREFERRED" else ELIGIBLE_LEADERS_NOT_AVAILABLE
    for tp, result in elected.items():
        results[tp] = result.leader_and_isr.leader if hasattr(result, "leader_and_isr") else not_available
    return Done(ctx, results)


def on_replica_election(ctx: ControllerContext, partitions, election_type: str, trigger: str) -> Program:
    if election_type == "PREFERRED":
        strategy = PreferredReplicaPartitionLeaderElectionStrategy()
    else:  # only an admin-client UNCLEAN election may really elect uncleanly
        strategy = OfflinePartitionLeaderElectionStrategy(allow_unclean=trigger == "AdminClientTriggered")
    results = {}
    if partitions:
        ctx, results = yield from partition_changes(ctx, partitions, PartitionState.OnlinePartition, strategy)
    if trigger == "ZkTriggered":
        # Deleted even if some elections failed: the request has been handled. Kafka's watch
        # acts on the znode's creation only, so the event is put again to arm it for the next
        # request (removePartitionsFromPreferredReplicaElection).
        [deleted] = yield from attempt([DeletePreferredReplicaElection()])
        if deleted.ok:  # Kafka's delete throws on any other answer, and puts nothing
            yield from put_events(ReplicaLeaderElection())
    return Done(ctx, results)


def check_and_trigger_auto_leader_rebalance(ctx: ControllerContext) -> Program:
    """``AutoPreferredReplicaLeaderElection``: per preferred broker, move leaders back when its
    imbalance ratio is strictly above ``leader.imbalance.per.broker.percentage``."""
    threshold = ctx.config["leader.imbalance.per.broker.percentage"] / 100
    by_preferred: dict[int, list[TopicPartition]] = {}
    for tp in ctx.all_partitions():
        replicas = ctx.partition_replica_assignment(tp)
        if replicas and not ctx.is_topic_queued_up_for_deletion(tp.topic):
            by_preferred.setdefault(replicas[0], []).append(tp)
    for broker, partitions in sorted(by_preferred.items()):
        not_led = [tp for tp in partitions
                   if tp in ctx.partition_leadership_info and ctx.partition_leadership_info[tp].leader != broker]
        ratio = len(not_led) / len(partitions)
        if ratio <= threshold:
            continue
        candidates = [tp for tp in not_led if not ctx.partitions_being_reassigned
                      and not ctx.is_topic_queued_up_for_deletion(tp.topic)
                      and tp.topic in ctx.all_topics and _can_preferred_replica_be_leader(ctx, tp)]
        yield from emit([Record(
            kind="controller", subject=f"broker:{broker}", to_state="imbalanced",
            controller_id=ctx.controller_id, controller_epoch=ctx.epoch, broker_id=broker, op="preferred_election",
            note=f"Broker {broker} is the preferred leader of {len(partitions)} partition(s) but leads only "
                 f"{len(partitions) - len(not_led)}: imbalance {len(not_led)}/{len(partitions)} = {ratio:.1%} > "
                 f"{threshold:.0%}, so the controller "
                 f"moves {len(candidates)} leader(s) back.",
            detail={"candidates": [str(tp) for tp in candidates]})])
        ctx, _ = yield from on_replica_election(ctx, candidates, "PREFERRED", "AutoTriggered")
    return Done(ctx)


def _can_preferred_replica_be_leader(ctx: ControllerContext, tp: TopicPartition) -> bool:
    assignment = ctx.partition_replica_assignment(tp)
    live = [r for r in assignment if ctx.is_replica_online(r)]
    return preferred_replica_partition_leader_election(assignment, ctx.partition_leadership_info[tp].isr, live) is not None


def _skip(ctx: ControllerContext, tp: TopicPartition, error: str, election_type: str) -> Record:
    why = {UNKNOWN_TOPIC_OR_PARTITION: "the partition does not exist",
           INVALID_TOPIC_EXCEPTION: "its topic is being deleted",
           ELECTION_NOT_NEEDED: "the preferred replica already leads it" if election_type == "PREFERRED"
           else "its leader is alive"}[error]
    return Record(kind="election", subject=partition_subject(tp.topic, tp.partition),
                  controller_id=ctx.controller_id, controller_epoch=ctx.epoch, topic=tp.topic,
                  partition=tp.partition, election="preferred" if election_type == "PREFERRED" else "offline_unclean",
                  outcome="ok" if error == ELECTION_NOT_NEEDED else "error",
                  note=f"No {election_type.lower()} election for {tp}: {why} ({error}).")
