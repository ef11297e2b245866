"""Replica assignment at topic creation (§18.1): Kafka's rack-unaware
``AdminUtils.assignReplicasToBrokers``.

Partition p's first replica goes to broker ``(p + startIndex) % n`` of the sorted broker list;
the followers follow at a shift that grows by one every n partitions, so leaders *and*
followers spread evenly. ``startIndex`` and the shift are random in Kafka; here the caller
passes ``fixed_start_index`` or a seeded ``rng`` (the core has no random source of its own),
which makes every assignment reproducible in a lesson.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from .errors import InvalidPartitionsException, InvalidReplicationFactorException

if TYPE_CHECKING:
    import random  # only the type of the rng a caller passes


def assign_replicas_to_brokers(
    n_partitions: int, replication_factor: int, broker_ids: Iterable[int],
    fixed_start_index: int = -1, start_partition_id: int = -1, rng: random.Random | None = None,
) -> dict[int, list[int]]:
    """Partition id -> ordered replica list (head = preferred leader)."""
    brokers = sorted(set(broker_ids))
    if n_partitions <= 0:
        raise InvalidPartitionsException(f"Number of partitions must be larger than 0, got {n_partitions}.")
    if replication_factor <= 0:
        raise InvalidReplicationFactorException(
            f"Replication factor must be larger than 0, got {replication_factor}.")
    if replication_factor > len(brokers):
        raise InvalidReplicationFactorException(
            f"Replication factor: {replication_factor} larger than available brokers: {len(brokers)}.")
    n = len(brokers)
    if fixed_start_index >= 0:
        start_index = shift = fixed_start_index
    elif rng is not None:
        start_index = rng.randrange(n)
        shift = rng.randrange(n)  # an independent draw, as in Kafka
    else:
        raise ValueError("pass fixed_start_index >= 0 or an rng: the core has no random source of its own")
    assignment: dict[int, list[int]] = {}
    partition = max(0, start_partition_id)
    for _ in range(n_partitions):
        if partition > 0 and partition % n == 0:
            shift += 1
        first = (partition + start_index) % n
        replicas = [brokers[first]]
        for j in range(replication_factor - 1):
            replicas.append(brokers[_replica_index(first, shift, j, n)])
        assignment[partition] = replicas
        partition += 1
    return assignment


def _replica_index(first_replica_index: int, second_replica_shift: int, replica_index: int, n_brokers: int) -> int:
    shift = 1 + (second_replica_shift + replica_index) % (n_brokers - 1)
    return (first_replica_index + shift) % n_brokers


def start_index_for_new_partitions(brokers: Iterable[int], partition0_replicas: Iterable[int]) -> int:
    """``AdminZkClient.addPartitions`` starts at the first broker whose id >= the head of
    partition 0's *assignment* (its preferred replica, not its current leader), so new
    partitions continue the spread of the old ones."""
    head = next(iter(partition0_replicas))
    ordered = sorted(set(brokers))
    return next((i for i, b in enumerate(ordered) if b >= head), 0)
