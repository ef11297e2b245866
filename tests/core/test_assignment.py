"""Replica assignment: AdminRackAwareTest's rack-unaware cases (§18.1)."""

import random

import pytest

from backend.core.assignment import assign_replicas_to_brokers, start_index_for_new_partitions
from backend.core.errors import InvalidPartitionsException, InvalidReplicationFactorException


def test_kafka_replica_assignment_vector():  # AdminRackAwareTest.testReplicaAssignment
    expected = {0: [0, 1, 2], 1: [1, 2, 3], 2: [2, 3, 4], 3: [3, 4, 0], 4: [4, 0, 1],
                5: [0, 2, 3], 6: [1, 3, 4], 7: [2, 4, 0], 8: [3, 0, 1], 9: [4, 1, 2]}
    assert assign_replicas_to_brokers(10, 3, [0, 1, 2, 3, 4], fixed_start_index=0) == expected


def test_brokers_are_sorted_first():
    assert assign_replicas_to_brokers(3, 2, [12, 10, 11], fixed_start_index=0) == {
        0: [10, 11], 1: [11, 12], 2: [12, 10]}


def test_start_partition_id_numbers_new_partitions_after_the_old_ones():
    # The follower shift restarts at fixed_start_index: new partitions are spread on their own.
    assert assign_replicas_to_brokers(4, 3, range(5), fixed_start_index=0, start_partition_id=6) == {
        6: [1, 2, 3], 7: [2, 3, 4], 8: [3, 4, 0], 9: [4, 0, 1]}


def test_seeded_rng_is_reproducible_and_spreads_leaders():
    a = assign_replicas_to_brokers(6, 2, [1, 2, 3], rng=random.Random(7))
    assert a == assign_replicas_to_brokers(6, 2, [1, 2, 3], rng=random.Random(7))
    leaders = [replicas[0] for replicas in a.values()]
    assert sorted(leaders) == [1, 1, 2, 2, 3, 3]
    assert all(len(set(r)) == 2 for r in a.values())


def test_no_random_source_of_its_own():
    with pytest.raises(ValueError, match="rng"):
        assign_replicas_to_brokers(1, 1, [0])


@pytest.mark.parametrize("n,rf,brokers,exc,message", [
    (3, 4, [0, 1, 2], InvalidReplicationFactorException, "Replication factor: 4 larger than available brokers: 3."),
    (3, 0, [0, 1, 2], InvalidReplicationFactorException, "must be larger than 0, got 0"),
    (3, -1, [0, 1, 2], InvalidReplicationFactorException, "got -1"),
    (3, 1, [], InvalidReplicationFactorException, "Replication factor: 1 larger than available brokers: 0."),
    (0, 1, [0], InvalidPartitionsException, "Number of partitions must be larger than 0, got 0."),
])
def test_errors_name_kafkas_exception_and_the_numbers(n, rf, brokers, exc, message):
    with pytest.raises(exc) as info:
        assign_replicas_to_brokers(n, rf, brokers, fixed_start_index=0)
    assert str(info.value).startswith(exc.__name__ + ": ")
    assert message in str(info.value)


def test_add_partitions_start_index_is_partition0_preferred_replica():
    assert start_index_for_new_partitions([1, 2, 3, 5], [3, 1]) == 2
    assert start_index_for_new_partitions([1, 2, 5], [4, 1]) == 2
