"""Kafka's ``PartitionLeaderElectionAlgorithms``: the four leader choosers, tiny pure functions.

Each scans the *assignment* order (head = preferred replica), never the ISR order: that is why
broker 2, not broker 3, leads a partition with assignment [1, 2, 3] and ISR [3, 2] after
broker 1 dies. They take plain lists and return a broker id, or ``None`` when nobody may lead.
"""

from __future__ import annotations

from typing import Iterable, Sequence


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
