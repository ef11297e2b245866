"""Partition leader election (§11): Kafka's ``PartitionLeaderElectionAlgorithms`` and ``Election``.

The four choosers are tiny pure functions over plain lists, exactly as in Kafka. Each scans
the *assignment* order (head = preferred replica), never the ISR order: that is why broker 2,
not broker 3, leads a partition with assignment [1, 2, 3] and ISR [3, 2] after broker 1 dies.

The batch form (:func:`elect_leaders`) applies one strategy to many partitions against a
:class:`ControllerContext` and returns, per partition, the new ``LeaderAndIsr`` (leader epoch
+ 1) and the brokers to tell — or why no leader could be chosen — with one sentence a student
can read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, Sequence, Union

from ..model import LeaderIsrAndControllerEpoch, TopicPartition
from .context import ControllerContext


def offline_partition_leader_election(
    assignment: Sequence[int], isr: Sequence[int], live_replicas: Iterable[int],
    unclean_leader_election_enabled: bool,
) -> int | None:
    """First live ISR member in assignment order; else, if unclean election is enabled, the
    first live replica at all (it may lack acknowledged messages)."""
    live = set(live_replicas)
    for replica in assignment:
        if replica in live and replica in isr:
            return replica
    if unclean_leader_election_enabled:
        for replica in assignment:
            if replica in live:
                return replica
    return None


def reassign_partition_leader_election(
    reassignment: Sequence[int], isr: Sequence[int], live_replicas: Iterable[int]
) -> int | None:
    """First target replica (in target order) that is live and in the ISR."""
    live = set(live_replicas)
    return next((r for r in reassignment if r in live and r in isr), None)


def preferred_replica_partition_leader_election(
    assignment: Sequence[int], isr: Sequence[int], live_replicas: Iterable[int]
) -> int | None:
    """The preferred replica (head of the assignment) if it is live and in the ISR — never
    another replica: a preferred election that cannot choose the preferred one fails."""
    live = set(live_replicas)
    if assignment and assignment[0] in live and assignment[0] in isr:
        return assignment[0]
    return None


def controlled_shutdown_partition_leader_election(
    assignment: Sequence[int], isr: Sequence[int], live_replicas: Iterable[int],
    shutting_down_brokers: Iterable[int],
) -> int | None:
    """First ISR member in assignment order that is live and not shutting down."""
    live, shutting = set(live_replicas), set(shutting_down_brokers)
    return next((r for r in assignment if r in live and r in isr and r not in shutting), None)


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


def elect_leaders(
    ctx: ControllerContext, strategy: PartitionLeaderElectionStrategy,
    current: Mapping[TopicPartition, LeaderIsrAndControllerEpoch],
) -> list[ElectionResult]:
    """Run ``strategy`` for every partition of ``current`` (its present leader and ISR)."""
    return [_elect_one(ctx, strategy, tp, state) for tp, state in sorted(current.items())]


def _elect_one(ctx, strategy, tp, state) -> ElectionResult:
    full = ctx.partition_assignments.get(tp)
    assignment = full.replicas if full else ()
    isr = state.leader_and_isr.isr
    result = lambda leader, new_isr, recipients, election, note: ElectionResult(  # noqa: E731
        tp,
        None if leader is None else LeaderIsrAndControllerEpoch(
            state.leader_and_isr.new_leader_and_isr(leader, new_isr), ctx.epoch),
        tuple(recipients), election, note,
    )
    if isinstance(strategy, OfflinePartitionLeaderElectionStrategy):
        live = [r for r in assignment if ctx.is_replica_online(r)]
        isr_alive = any(ctx.is_replica_online(r) for r in isr)
        unclean_ok = not isr_alive and (strategy.allow_unclean or ctx.is_unclean_leader_election_enabled(tp.topic))
        leader = offline_partition_leader_election(assignment, isr, live, unclean_ok)
        if leader is None:
            return result(None, (), live, "offline", _no_offline_leader(assignment, isr, live, unclean_ok))
        if leader in isr:
            new_isr = [r for r in isr if ctx.is_replica_online(r)]
            return result(leader, new_isr, live, "offline",
                          f"{leader} is the first live ISR member in assignment {_l(assignment)} (ISR {_l(isr)}).")
        return result(leader, [leader], live, "offline_unclean",
                      f"No ISR member of {_l(isr)} is alive, and unclean election is enabled: {leader} is the "
                      f"first live replica in assignment {_l(assignment)}, so messages only the old ISR had "
                      f"may be lost.")
    if isinstance(strategy, ReassignPartitionLeaderElectionStrategy):
        target = full.target_replicas if full else ()
        live = [r for r in target if ctx.is_replica_online(r)]
        leader = reassign_partition_leader_election(target, isr, live)
        note = (f"{leader} is the first target replica in {_l(target)} that is alive and in the ISR {_l(isr)}."
                if leader is not None else
                f"No target replica in {_l(target)} is both alive (live {_l(live)}) and in the ISR {_l(isr)}.")
        return result(leader, isr, target, "reassign", note)
    if isinstance(strategy, PreferredReplicaPartitionLeaderElectionStrategy):
        live = [r for r in assignment if ctx.is_replica_online(r)]
        leader = preferred_replica_partition_leader_election(assignment, isr, live)
        preferred = assignment[0] if assignment else None
        note = (f"{leader} is the preferred replica (first in assignment {_l(assignment)}) and is alive and in the ISR."
                if leader is not None else
                f"The preferred replica {preferred} is {'not alive' if preferred not in live else 'not in the ISR ' + _l(isr)}, "
                f"and a preferred election never picks another replica.")
        return result(leader, isr, assignment, "preferred", note)
    if isinstance(strategy, ControlledShutdownPartitionLeaderElectionStrategy):
        shutting = ctx.shutting_down_broker_ids
        live_or_shutting = [r for r in assignment if ctx.is_replica_online(r, include_shutting_down=True)]
        leader = controlled_shutdown_partition_leader_election(assignment, isr, live_or_shutting, shutting)
        new_isr = [r for r in isr if r not in shutting]
        note = (f"{leader} is the first ISR member in assignment {_l(assignment)} that is alive and not shutting down."
                if leader is not None else
                f"Every ISR member of {_l(isr)} is dead or shutting down ({_l(sorted(shutting))}), so the "
                f"leader cannot move.")
        return result(leader, new_isr, live_or_shutting, "controlled_shutdown", note)
    raise TypeError(f"unknown election strategy {strategy!r}")


def _no_offline_leader(assignment, isr, live, unclean_ok) -> str:
    if not live:
        return f"No replica in assignment {_l(assignment)} is alive, so the partition has no leader."
    return (f"No ISR member of {_l(isr)} is alive (live replicas {_l(live)}) and unclean leader election "
            f"is disabled, so the partition stays offline rather than lose acknowledged messages.")


def _l(ids: Iterable[int]) -> str:
    return "[" + ",".join(str(i) for i in ids) + "]"
