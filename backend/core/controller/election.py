"""Partition leader election (§11): Kafka's ``Election`` and the election strategies.

As in Kafka's ``Election`` object, each strategy has one batch function (``leader_for_offline``,
``leader_for_reassign``, ``leader_for_preferred_replica``, ``leader_for_controlled_shutdown``)
that applies its chooser to many partitions against a :class:`ControllerContext` and returns,
per partition, the new ``LeaderAndIsr`` (leader epoch + 1) and the brokers to tell — or why no
leader could be chosen — with one sentence a student can read. :data:`ELECTIONS` maps each
strategy to its function. The choosers themselves are ``election_algorithms.py`` (Kafka's
``PartitionLeaderElectionAlgorithms``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Union

from ..model import LeaderIsrAndControllerEpoch, TopicPartition
from .context import ControllerContext
from .election_algorithms import (
    controlled_shutdown_partition_leader_election, offline_partition_leader_election,
    preferred_replica_partition_leader_election, reassign_partition_leader_election,
)


# -- strategies --------------------------------------------------------------------------------
@dataclass(frozen=True)
class OfflinePartitionLeaderElectionStrategy:
    allow_unclean: bool = False
    """True only for an admin-requested UNCLEAN election; otherwise the topic config decides."""


@dataclass(frozen=True)
class ReassignPartitionLeaderElectionStrategy:
    pass


@dataclass(frozen=True)
class PreferredReplicaPartitionLeaderElectionStrategy:
    pass


@dataclass(frozen=True)
class ControlledShutdownPartitionLeaderElectionStrategy:
    pass


PartitionLeaderElectionStrategy = Union[
    OfflinePartitionLeaderElectionStrategy, ReassignPartitionLeaderElectionStrategy,
    PreferredReplicaPartitionLeaderElectionStrategy, ControlledShutdownPartitionLeaderElectionStrategy,
]


@dataclass(frozen=True)
class ElectionResult:
    """Kafka's ``ElectionResult``, plus why, in words.

    ``leader_and_isr`` is ``None`` when no leader could be chosen; ``reason`` then says why.
    ``election`` is the record's election name (``offline_unclean`` when the leader came from
    outside the ISR).
    """

    topic_partition: TopicPartition
    leader_and_isr: LeaderIsrAndControllerEpoch | None
    recipients: tuple[int, ...]
    election: str
    note: str

    @property
    def unclean(self) -> bool:
        return self.election == "offline_unclean"


def leader_for_offline(ctx: ControllerContext, current: Mapping[TopicPartition, LeaderIsrAndControllerEpoch],
                       allow_unclean: bool = False) -> list[ElectionResult]:
    """Kafka's ``Election.leaderForOffline``: new or offline partitions. Unclean election is
    allowed by the topic's config, or by an admin's UNCLEAN election (``allow_unclean``)."""
    return [_leader_for_offline(ctx, tp, state, allow_unclean) for tp, state in sorted(current.items())]


def _leader_for_offline(ctx, tp, state, allow_unclean) -> ElectionResult:
    assignment = ctx.partition_replica_assignment(tp)
    isr = state.leader_and_isr.isr
    live = [r for r in assignment if ctx.is_replica_online(r)]
    isr_alive = any(ctx.is_replica_online(r) for r in isr)
    unclean_ok = not isr_alive and (allow_unclean or ctx.is_unclean_leader_election_enabled(tp.topic))
    leader = offline_partition_leader_election(assignment, isr, live, unclean_ok)
    if leader is None:
        return _result(ctx, tp, state, None, (), live, "offline", _no_offline_leader(assignment, isr, live, unclean_ok))
    if leader in isr:
        return _result(ctx, tp, state, leader, [r for r in isr if ctx.is_replica_online(r)], live, "offline",
                       f"{leader} is the first live ISR member in assignment {_l(assignment)} (ISR {_l(isr)}).")
    return _result(ctx, tp, state, leader, [leader], live, "offline_unclean",
                   f"No ISR member of {_l(isr)} is alive, and unclean election is enabled: {leader} is the "
                   f"first live replica in assignment {_l(assignment)}, so messages only the old ISR had "
                   f"may be lost.")


def leader_for_reassign(ctx: ControllerContext, current: Mapping[TopicPartition, LeaderIsrAndControllerEpoch]
                        ) -> list[ElectionResult]:
    """Kafka's ``Election.leaderForReassign``: partitions whose leader is not in the target replicas."""
    return [_leader_for_reassign(ctx, tp, state) for tp, state in sorted(current.items())]


def _leader_for_reassign(ctx, tp, state) -> ElectionResult:
    full = ctx.partition_assignments.get(tp)
    target = full.target_replicas if full else ()
    isr = state.leader_and_isr.isr
    live = [r for r in target if ctx.is_replica_online(r)]
    leader = reassign_partition_leader_election(target, isr, live)
    note = (f"{leader} is the first target replica in {_l(target)} that is alive and in the ISR {_l(isr)}."
            if leader is not None else
            f"No target replica in {_l(target)} is both alive (live {_l(live)}) and in the ISR {_l(isr)}.")
    return _result(ctx, tp, state, leader, isr, target, "reassign", note)


def leader_for_preferred_replica(ctx: ControllerContext, current: Mapping[TopicPartition, LeaderIsrAndControllerEpoch]
                                 ) -> list[ElectionResult]:
    """Kafka's ``Election.leaderForPreferredReplica``: leadership back to each preferred replica."""
    return [_leader_for_preferred_replica(ctx, tp, state) for tp, state in sorted(current.items())]


def _leader_for_preferred_replica(ctx, tp, state) -> ElectionResult:
    assignment = ctx.partition_replica_assignment(tp)
    isr = state.leader_and_isr.isr
    live = [r for r in assignment if ctx.is_replica_online(r)]
    leader = preferred_replica_partition_leader_election(assignment, isr, live)
    preferred = assignment[0] if assignment else None
    note = (f"{leader} is the preferred replica (first in assignment {_l(assignment)}) and is alive and in the ISR."
            if leader is not None else
            f"The preferred replica {preferred} is {'not alive' if preferred not in live else 'not in the ISR ' + _l(isr)}, "
            f"and a preferred election never picks another replica.")
    return _result(ctx, tp, state, leader, isr, assignment, "preferred", note)


def leader_for_controlled_shutdown(ctx: ControllerContext, current: Mapping[TopicPartition, LeaderIsrAndControllerEpoch]
                                   ) -> list[ElectionResult]:
    """Kafka's ``Election.leaderForControlledShutdown``: partitions led by brokers shutting down."""
    return [_leader_for_controlled_shutdown(ctx, tp, state) for tp, state in sorted(current.items())]


def _leader_for_controlled_shutdown(ctx, tp, state) -> ElectionResult:
    assignment = ctx.partition_replica_assignment(tp)
    isr = state.leader_and_isr.isr
    shutting = ctx.shutting_down_broker_ids
    live_or_shutting = [r for r in assignment if ctx.is_replica_online(r, include_shutting_down=True)]
    leader = controlled_shutdown_partition_leader_election(assignment, isr, live_or_shutting, shutting)
    note = (f"{leader} is the first ISR member in assignment {_l(assignment)} that is alive and not shutting down."
            if leader is not None else
            f"Every ISR member of {_l(isr)} is dead or shutting down ({_l(sorted(shutting))}), so the "
            f"leader cannot move.")
    return _result(ctx, tp, state, leader, [r for r in isr if r not in shutting], live_or_shutting,
                   "controlled_shutdown", note)


ELECTIONS: Mapping[type, Callable[..., list[ElectionResult]]] = {
    OfflinePartitionLeaderElectionStrategy: lambda ctx, s, current: leader_for_offline(ctx, current, s.allow_unclean),
    ReassignPartitionLeaderElectionStrategy: lambda ctx, s, current: leader_for_reassign(ctx, current),
    PreferredReplicaPartitionLeaderElectionStrategy: lambda ctx, s, current: leader_for_preferred_replica(ctx, current),
    ControlledShutdownPartitionLeaderElectionStrategy:
        lambda ctx, s, current: leader_for_controlled_shutdown(ctx, current),
}
"""Each strategy's election, as ``PartitionStateMachine.doElectLeaderForPartitions`` matches them."""


def elect_leaders(ctx: ControllerContext, strategy: PartitionLeaderElectionStrategy,
                  current: Mapping[TopicPartition, LeaderIsrAndControllerEpoch]) -> list[ElectionResult]:
    """Run ``strategy`` for every partition of ``current`` (its present leader and ISR)."""
    return ELECTIONS[type(strategy)](ctx, strategy, current)


def _result(ctx, tp, state, leader, new_isr, recipients, election, note) -> ElectionResult:
    """The new ``LeaderAndIsr`` (leader epoch + 1) for ``leader``, or none when it is ``None``."""
    chosen = None if leader is None else LeaderIsrAndControllerEpoch(
        state.leader_and_isr.new_leader_and_isr(leader, new_isr), ctx.epoch)
    return ElectionResult(tp, chosen, tuple(recipients), election, note)


def _no_offline_leader(assignment, isr, live, unclean_ok) -> str:
    if not live:
        return f"No replica in assignment {_l(assignment)} is alive, so the partition has no leader."
    return (f"No ISR member of {_l(isr)} is alive (live replicas {_l(live)}) and unclean leader election "
            f"is disabled, so the partition stays offline rather than lose acknowledged messages.")


def _l(ids: Iterable[int]) -> str:
    return "[" + ",".join(str(i) for i in ids) + "]"
