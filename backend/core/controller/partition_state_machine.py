"""Kafka's ``PartitionStateMachine`` (§10): where partition leaders are chosen.

Edges and their side effects (each one recorded; an edge not listed is refused and recorded
with ``outcome="invalid_transition"``, the partition keeping its state):

* NonExistentPartition → NewPartition: the assignment is already known; mark only.
* NewPartition → OnlinePartition: *initialise* — leader = first live replica in assignment
  order, ISR = all live replicas, leader epoch 0; create the state znode; LeaderAndIsr
  (``is_new``) to the ISR and UpdateMetadata to every broker. No live replica: stays New.
* OfflinePartition/OnlinePartition → OnlinePartition: *elect* — read the state znodes (a
  leader may have changed the ISR since the controller last looked), run the strategy (§11),
  write each new state conditionally at the version read; LeaderAndIsr to the strategy's
  recipients. BADVERSION: read again and retry that partition only. No leader possible: the
  state stays.
* New/Online/Offline → OfflinePartition, OfflinePartition → NonExistentPartition: mark only.

Each function is a program (see ``plan.py``) returning ``(ctx, results)`` where ``results``
maps a partition to its :class:`ElectionResult` or to the reason it failed.
"""

from __future__ import annotations

from typing import Iterable

from ..model import LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition
from . import state_change_log as state_changes
from .context import ControllerContext
from .election import (
    ElectionResult,
    OfflinePartitionLeaderElectionStrategy,
    PartitionLeaderElectionStrategy,
    elect_leaders,
)
from .plan import CreatePartitionState, UpdatePartitionState
from .program import Done, Program, attempt, emit, read_partition_states
from .request_batch import RequestBatch
from .states import PartitionState, is_valid_transition

P = PartitionState


def handle_state_changes(
    ctx: ControllerContext, partitions: Iterable[TopicPartition], target: PartitionState,
    strategy: PartitionLeaderElectionStrategy | None = None,
) -> Program:
    partitions = sorted(set(partitions))
    if not partitions:
        return Done(ctx, {})
    batch = RequestBatch()
    valid = [tp for tp in partitions if is_valid_transition(ctx.partition_state(tp), target)]
    valid_set = set(valid)
    invalid = [state_changes.invalid_partition_transition(ctx, tp, target) for tp in partitions if tp not in valid_set]
    yield from emit(invalid)
    results: dict = {}
    if target is P.OnlinePartition:
        uninitialized = [tp for tp in valid if ctx.partition_state(tp) is P.NewPartition]
        to_elect = [tp for tp in valid if ctx.partition_state(tp) is not P.NewPartition]
        if uninitialized:
            ctx, initialized = yield from _initialize_leader_and_isr(ctx, uninitialized, batch)
            results.update(initialized)
        if to_elect:
            if strategy is None:
                raise ValueError("electing leaders needs a strategy")
            ctx, elected = yield from _elect_leader_for_partitions(ctx, to_elect, strategy, batch)
            results.update(elected)
    else:
        records = [state_changes.partition_change(ctx, tp, ctx.partition_state(tp), target) for tp in valid]
        ctx = ctx.with_partition_states({tp: target for tp in valid})
        yield from emit(records)
    yield from emit(requests=batch.requests(ctx))
    return Done(ctx, results)


def trigger_online_partition_state_change(ctx: ControllerContext, topic: str | None = None) -> Program:
    """All New/Offline partitions (of ``topic``, if given) not queued for deletion → Online
    with the offline strategy. Called after failover, broker startup and failure, and when
    unclean leader election is enabled."""
    partitions = [
        tp for tp in ctx.partitions_in_states((P.NewPartition, P.OfflinePartition))
        if not ctx.is_topic_queued_up_for_deletion(tp.topic) and (topic is None or tp.topic == topic)
    ]
    return (yield from handle_state_changes(
        ctx, partitions, P.OnlinePartition, OfflinePartitionLeaderElectionStrategy(allow_unclean=False)))


def _initialize_leader_and_isr(ctx: ControllerContext, partitions, batch: RequestBatch) -> Program:
    results: dict = {}
    planned: list[tuple[TopicPartition, LeaderIsrAndControllerEpoch, tuple[int, ...]]] = []
    failed_records = []
    for tp in partitions:
        replicas = ctx.partition_replica_assignment(tp)
        live = tuple(r for r in replicas if ctx.is_replica_online(r))
        if not live:
            reason = (f"No replica in assignment {list(replicas)} is alive, so the partition stays "
                      f"NewPartition until one of them starts.")
            results[tp] = reason
            failed_records.append(state_changes.partition_change(ctx, tp, P.NewPartition, P.OnlinePartition,
                                                       outcome="no_leader", note=reason))
            continue
        state = LeaderIsrAndControllerEpoch(LeaderAndIsr(live[0], 0, live), ctx.epoch)
        planned.append((tp, state, live))
    yield from emit(failed_records)
    outcomes = yield from attempt(CreatePartitionState(tp, state) for tp, state, _ in planned)
    leadership, states, records = {}, {}, []
    for (tp, state, live), outcome in zip(planned, outcomes):
        if not outcome.ok:
            results[tp] = f"could not create the partition state znode: {outcome.reason or outcome.outcome}"
            records.append(state_changes.partition_change(ctx, tp, P.NewPartition, P.OnlinePartition,
                                                outcome="error", note=results[tp]))
            continue
        state = LeaderIsrAndControllerEpoch(state.leader_and_isr.with_zk_version(outcome.zk_version or 0), ctx.epoch)
        leadership[tp], states[tp] = state, P.OnlinePartition
        results[tp] = state
        replicas = list(ctx.partition_replica_assignment(tp))
        records.append(state_changes.partition_change(
            ctx, tp, P.NewPartition, P.OnlinePartition, state,
            note=f"New partition: {live[0]} is the first live replica in assignment {replicas}; "
                 f"the ISR is every live replica {list(live)}; leader epoch 0."))
    ctx = ctx.with_leadership(leadership).with_partition_states(states)
    for tp, state in leadership.items():
        batch.add_leader_and_isr_request_for_brokers(ctx, state.isr, tp, state, is_new=True)
    yield from emit(records)
    return Done(ctx, results)


def _elect_leader_for_partitions(ctx: ControllerContext, partitions, strategy, batch: RequestBatch) -> Program:
    """Kafka's loop: read the states, elect, write conditionally; retry the conflicts only."""
    results: dict = {}
    remaining = list(partitions)
    while remaining:  # as Kafka's: a BADVERSION is retried until the write lands, with no cap
        states = yield from read_partition_states(remaining)
        current, records = {}, []
        for tp in remaining:
            info = states.get(tp)
            if info is None:
                results[tp] = "LeaderAndIsr information doesn't exist"
                records.append(state_changes.failure(ctx, tp, "election", f"{tp}: {results[tp]}."))
            elif info.controller_epoch > ctx.epoch:
                results[tp] = (f"the state was written by a newer controller (epoch {info.controller_epoch} "
                               f"> mine {ctx.epoch})")
                records.append(state_changes.failure(ctx, tp, "election", f"Aborted: {results[tp]}.",
                                           outcome="rejected_stale_epoch"))
            else:
                current[tp] = info
        elections = elect_leaders(ctx, strategy, current)
        chosen: list[ElectionResult] = []
        for result in elections:
            if result.leader_and_isr is None:
                results[result.topic_partition] = result.note
                previous = current[result.topic_partition]
                records.append(state_changes.election(ctx, result, "no_leader", previous=previous))
            else:
                chosen.append(result)
        yield from emit(records)
        outcomes = yield from attempt(UpdatePartitionState(r.topic_partition, r.leader_and_isr) for r in chosen)
        ctx, remaining = yield from _apply_elections(ctx, chosen, current, outcomes, batch, results)
    return Done(ctx, results)


def _apply_elections(ctx, chosen, read, outcomes, batch, results) -> Program:
    """Fold the write outcomes: cache and announce successes, retry conflicts."""
    leadership, states, retry, records = {}, {}, [], []
    for result, outcome in zip(chosen, outcomes):
        tp = result.topic_partition
        if outcome.ok:
            new = LeaderIsrAndControllerEpoch(
                result.leader_and_isr.leader_and_isr.with_zk_version(outcome.zk_version), ctx.epoch)
            leadership[tp], states[tp] = new, P.OnlinePartition
            results[tp] = ElectionResult(tp, new, result.recipients, result.election, result.note)
            records.append(state_changes.election(ctx, results[tp], "ok", previous=read[tp]))
            records.append(state_changes.partition_change(ctx, tp, ctx.partition_state(tp), P.OnlinePartition,
                                                new, note=result.note))
        elif outcome.outcome == "bad_version":
            retry.append(tp)
        else:
            results[tp] = f"writing the new leader failed: {outcome.reason or outcome.outcome}"
            records.append(state_changes.failure(ctx, tp, "election", f"{tp}: {results[tp]}."))
    ctx = ctx.with_leadership(leadership).with_partition_states(states)
    for result in chosen:
        tp = result.topic_partition
        if tp in leadership:
            batch.add_leader_and_isr_request_for_brokers(ctx, result.recipients, tp, leadership[tp], is_new=False)
    yield from emit(records)
    return Done(ctx, retry)
