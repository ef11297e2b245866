"""AdminZkClient against a real ZooKeeper: it writes exactly the znodes Kafka's admin tools
write (spec §9, §13.1, §14, §15), and refuses what they refuse, by Kafka's exception names."""

from __future__ import annotations

import json
import random

import pytest
from kazoo.exceptions import NoNodeError

from backend.core.assignment import assign_replicas_to_brokers
from backend.core.model import LeaderAndIsr, LeaderIsrAndControllerEpoch, ReplicaAssignment, TopicPartition
from backend.zk import codec, paths
from backend.zk.admin import AdminZkClient

KAFKA_VECTOR = {  # AdminRackAwareTest.testReplicaAssignment: brokers 0-4, rf 3, fixedStartIndex 0 (§18.1)
    0: (0, 1, 2), 1: (1, 2, 3), 2: (2, 3, 4), 3: (3, 4, 0), 4: (4, 0, 1),
    5: (0, 2, 3), 6: (1, 3, 4), 7: (2, 4, 0), 8: (3, 0, 1), 9: (4, 1, 2),
}


@pytest.fixture
def admin(zk_client):
    return AdminZkClient(zk_client)


def register_brokers(zk, *broker_ids):
    for broker_id in broker_ids:
        zk.create(paths.broker_path(broker_id), codec.encode_broker("localhost", 9092 + broker_id),
                  ephemeral=True, makepath=True)


def znodes(zk, path="/"):
    """Every znode below ``path`` (the test's chroot when ``path`` is "/")."""
    found = []
    for child in zk.get_children(path):
        child_path = f"{path.rstrip('/')}/{child}"
        found.append(child_path)
        found.extend(znodes(zk, child_path))
    return set(found)


def json_at(zk, path):
    return json.loads(zk.get(path)[0].decode())


def refused(exception_name, call, *args, **kwargs):
    with pytest.raises(Exception) as caught:
        call(*args, **kwargs)
    assert str(caught.value).startswith(f"{exception_name}: "), str(caught.value)
    return str(caught.value)


# -- create_topic -------------------------------------------------------------------------------
def test_create_topic_writes_exactly_the_config_and_the_assignment(admin, zk_client):
    topic_id = admin.create_topic("orders", {0: [1, 2], 1: [2, 1]}, {"unclean.leader.election.enable": "true"})
    assert znodes(zk_client) == {"/config", "/config/topics", "/config/topics/orders",
                                 "/brokers", "/brokers/topics", "/brokers/topics/orders"}
    assert json_at(zk_client, "/config/topics/orders") == {
        "version": 1, "config": {"unclean.leader.election.enable": "true"}}
    assert json_at(zk_client, "/brokers/topics/orders") == {
        "version": 3, "topic_id": topic_id, "partitions": {"0": [1, 2], "1": [2, 1]},
        "adding_replicas": {}, "removing_replicas": {}}
    assert len(topic_id) == 22
    assert admin.get_topic("orders") == ({0: ReplicaAssignment((1, 2)), 1: ReplicaAssignment((2, 1))}, topic_id)
    assert admin.list_topics() == ["orders"]


def test_create_topic_without_config_writes_an_empty_config(admin, zk_client):
    admin.create_topic("t", {0: [1]}, topic_id="vJHSbFAXSY2ZHXmkAOmcBA")
    assert json_at(zk_client, "/config/topics/t") == {"version": 1, "config": {}}
    assert admin.get_topic_id("t") == "vJHSbFAXSY2ZHXmkAOmcBA"


def test_an_existing_topic_is_refused(admin):
    admin.create_topic("orders", {0: [1]})
    message = refused("TopicExistsException", admin.create_topic, "orders", {0: [2]})
    assert message == "TopicExistsException: Topic 'orders' already exists."
    assert admin.get_topic_assignment("orders") == {0: ReplicaAssignment((1,))}


def test_a_topic_whose_metric_name_collides_is_refused(admin):
    admin.create_topic("a.b", {0: [1]})
    assert "collides with existing topics: a.b" in refused("InvalidTopicException", admin.create_topic, "a_b", {0: [1]})


@pytest.mark.parametrize("name", ["", ".", "..", "x" * 250, "has space", "a/b", "tëst", "a:b"])
def test_illegal_topic_names_are_refused_and_nothing_is_written(admin, zk_client, name):
    refused("InvalidTopicException", admin.create_topic, name, {0: [1]})
    assert znodes(zk_client) == set()


def test_the_longest_legal_name_is_accepted(admin):
    admin.create_topic("x" * 249, {0: [1]})
    assert admin.list_topics() == ["x" * 249]


@pytest.mark.parametrize("assignment, fragment", [
    ({}, "at least one partition"),
    ({0: [1], 2: [1]}, "consecutive 0-based integer sequence"),
    ({1: [1]}, "consecutive 0-based integer sequence"),
    ({0: []}, "replication factor of 0 for partition id 0"),
    ({0: [1, 1]}, "Duplicate brokers not allowed in replica assignment: 1, 1 for partition id 0"),
    ({0: [1, 2], 1: [1]}, "same number of replicas"),
    ({0: [1, -2]}, "must be a list of broker ids"),
    ({0: "12"}, "must be a list of broker ids"),
    ({"0": [1]}, "partition ids must be integers"),
    ({0: [1], "1": [1]}, "partition ids must be integers"),
])
def test_bad_assignments_are_refused_and_nothing_is_written(admin, zk_client, assignment, fragment):
    assert fragment in refused("InvalidReplicaAssignmentException", admin.create_topic, "t", assignment)
    assert znodes(zk_client) == set()


def test_unknown_brokers_are_refused_when_the_known_ones_are_given(admin):
    message = refused("InvalidReplicaAssignmentException", admin.create_topic, "t", {0: [1, 7]}, known_brokers=[1, 2])
    assert "Unknown broker(s) 7" in message and "known brokers: 1, 2" in message


def test_bad_configs_are_refused(admin, zk_client):
    assert "Unknown topic config name: unclean.leader.election.enabled" in refused(
        "InvalidConfigurationException", admin.create_topic, "t", {0: [1]}, {"unclean.leader.election.enabled": "true"})
    assert "unclean.leader.election.enable" in refused(
        "InvalidConfigurationException", admin.create_topic, "t", {0: [1]}, {"unclean.leader.election.enable": "yes"})
    assert znodes(zk_client) == set()


def test_create_topic_with_kafkas_assignment(admin, zk_client):
    register_brokers(zk_client, 4, 0, 3, 1, 2)
    assignment, topic_id = admin.create_topic_with_assignment_from("t", None, 10, 3, fixed_start_index=0)
    assert assignment == KAFKA_VECTOR
    assert admin.get_topic("t") == ({p: ReplicaAssignment(r) for p, r in KAFKA_VECTOR.items()}, topic_id)
    seeded, _ = admin.create_topic_with_assignment_from("u", [0, 1, 2], 4, 2, rng=random.Random(3))
    expected = assign_replicas_to_brokers(4, 2, [0, 1, 2], rng=random.Random(3))
    assert seeded == {p: tuple(r) for p, r in expected.items()}
    refused("InvalidReplicationFactorException", admin.create_topic_with_assignment_from, "v", [0, 1], 1, 3)


# -- add_partitions -----------------------------------------------------------------------------
def test_add_partitions_keeps_the_old_ones_and_the_id_and_continues_kafkas_spread(admin, zk_client):
    register_brokers(zk_client, 0, 1, 2, 3, 4)
    _, topic_id = admin.create_topic_with_assignment_from("t", None, 5, 3, fixed_start_index=0)
    new = admin.add_partitions("t", 10, rng=random.Random(1))  # no randomness: a fixed start, as Kafka
    assert new == {p: KAFKA_VECTOR[p] for p in range(5, 10)}
    assert admin.get_topic("t") == ({p: ReplicaAssignment(r) for p, r in KAFKA_VECTOR.items()}, topic_id)


def test_add_partitions_starts_at_partition_0s_preferred_replica(admin, zk_client):
    register_brokers(zk_client, 1, 2, 3)
    admin.create_topic("t", {0: [2, 3], 1: [3, 1]})
    new = admin.add_partitions("t", 4)
    expected = assign_replicas_to_brokers(2, 2, [1, 2, 3], fixed_start_index=1, start_partition_id=2)
    assert new == {p: tuple(r) for p, r in expected.items()}
    assert admin.get_topic_assignment("t")[0] == ReplicaAssignment((2, 3))


def test_add_partitions_keeps_a_reassignment_in_progress(admin, zk_client):
    register_brokers(zk_client, 1, 2, 3, 4)
    moving = ReplicaAssignment((1, 2)).reassign_to((3, 4))
    zk_client.create(paths.topic_path("t"), codec.encode_topic_assignment({0: moving}, "vJHSbFAXSY2ZHXmkAOmcBA"),
                     makepath=True)
    admin.add_partitions("t", 2, {1: [4, 1, 2, 3]})
    assert json_at(zk_client, paths.topic_path("t")) == {
        "version": 3, "topic_id": "vJHSbFAXSY2ZHXmkAOmcBA", "partitions": {"0": [3, 4, 1, 2], "1": [4, 1, 2, 3]},
        "adding_replicas": {"0": [3, 4]}, "removing_replicas": {"0": [1, 2]}}


def test_add_partitions_refusals(admin, zk_client):
    register_brokers(zk_client, 1, 2, 3)
    admin.create_topic("t", {0: [1, 2], 1: [2, 3]})
    assert ("Topic t currently has 2 partitions, 2 would not be an increase"
            in refused("InvalidPartitionsException", admin.add_partitions, "t", 2))
    refused("InvalidPartitionsException", admin.add_partitions, "t", 1)
    assert "available brokers: 1, 2, 3" in refused("BrokerNotAvailableException", admin.add_partitions, "t", 3, {2: [1, 9]})
    assert "partition 0 has 2 while partitions [2] have replication factors [1]" in refused(
        "InvalidReplicaAssignmentException", admin.add_partitions, "t", 3, {2: [1]})
    assert "exactly the new partitions [2, 3]" in refused(
        "InvalidReplicaAssignmentException", admin.add_partitions, "t", 4, {2: [1, 2]})
    refused("UnknownTopicOrPartitionException", admin.add_partitions, "nope", 3)
    assert len(admin.get_topic_assignment("t")) == 2


# -- delete, reassign, preferred election -------------------------------------------------------
def test_delete_topic_creates_the_deletion_flag_once(admin, zk_client):
    admin.create_topic("t", {0: [1]})
    admin.delete_topic("t")
    assert zk_client.get("/admin/delete_topics/t")[0] == b""
    assert "already marked for deletion" in refused("TopicAlreadyMarkedForDeletionException", admin.delete_topic, "t")
    assert refused("UnknownTopicOrPartitionException", admin.delete_topic, "nope") == (
        "UnknownTopicOrPartitionException: Topic `nope` to delete does not exist")
    assert zk_client.get_children("/admin/delete_topics") == ["t"]


def test_reassign_partitions_creates_the_znode_and_refuses_a_second(admin, zk_client):
    register_brokers(zk_client, 1, 2, 3)
    admin.create_topic("t", {0: [1, 2], 1: [2, 3]})
    admin.reassign_partitions({TopicPartition("t", 0): [3, 1]})
    assert json_at(zk_client, "/admin/reassign_partitions") == {
        "version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [3, 1]}]}
    assert "existing partition reassignment" in refused(
        "AdminOperationException", admin.reassign_partitions, {TopicPartition("t", 1): [1, 2]})
    assert codec.decode_reassignment(zk_client.get("/admin/reassign_partitions")[0]) == {TopicPartition("t", 0): (3, 1)}


def test_reassign_partitions_validation(admin, zk_client):
    register_brokers(zk_client, 1, 2)
    admin.create_topic("t", {0: [1]})
    assert "non-existent partitions: t-1, u-0" in refused(
        "UnknownTopicOrPartitionException", admin.reassign_partitions,
        {TopicPartition("t", 1): [1], TopicPartition("u", 0): [1]})
    assert "non-existent brokerIDs: 9" in refused(
        "BrokerNotAvailableException", admin.reassign_partitions, {TopicPartition("t", 0): [9]})
    refused("InvalidReplicaAssignmentException", admin.reassign_partitions, {TopicPartition("t", 0): [1, 1]})
    refused("AdminOperationException", admin.reassign_partitions, {})
    assert not zk_client.exists("/admin/reassign_partitions")
    admin.reassign_partitions({TopicPartition("t", 0): [9]}, validate=False)  # a dead broker, on purpose
    assert codec.decode_reassignment(zk_client.get("/admin/reassign_partitions")[0]) == {TopicPartition("t", 0): (9,)}


def test_preferred_replica_election_of_everything_or_of_some(admin, zk_client):
    admin.create_topic("b", {0: [1], 1: [1]})
    admin.create_topic("a", {0: [1]})
    written = admin.preferred_replica_election()
    assert written == (TopicPartition("a", 0), TopicPartition("b", 0), TopicPartition("b", 1))
    assert json_at(zk_client, "/admin/preferred_replica_election") == {"version": 1, "partitions": [
        {"topic": "a", "partition": 0}, {"topic": "b", "partition": 0}, {"topic": "b", "partition": 1}]}
    assert "currently in progress" in refused(
        "AdminOperationException", admin.preferred_replica_election, [TopicPartition("a", 0)])
    zk_client.delete("/admin/preferred_replica_election")  # as the controller does when done
    assert admin.preferred_replica_election([("b", 1), ("b", 1)]) == (TopicPartition("b", 1),)
    zk_client.delete("/admin/preferred_replica_election")
    assert "non-existent partitions: b-7" in refused(
        "UnknownTopicOrPartitionException", admin.preferred_replica_election, [TopicPartition("b", 7)])


def test_preferred_replica_election_with_no_topics_is_refused(admin, zk_client):
    refused("AdminOperationException", admin.preferred_replica_election)
    assert not zk_client.exists("/admin/preferred_replica_election")


# -- configs and readers ------------------------------------------------------------------------
def test_set_topic_config_merges_and_notifies(admin, zk_client):
    admin.create_topic("t", {0: [1]}, {"min.insync.replicas": "2"})
    merged = admin.set_topic_config("t", {"unclean.leader.election.enable": True})
    assert merged == {"min.insync.replicas": "2", "unclean.leader.election.enable": "true"}
    assert json_at(zk_client, "/config/topics/t") == {"version": 1, "config": merged}
    assert zk_client.get_children("/config/changes") == ["config_change_0000000000"]
    assert json_at(zk_client, "/config/changes/config_change_0000000000") == {"version": 2, "entity_path": "topics/t"}
    assert admin.set_topic_config("t", {"min.insync.replicas": None}) == {"unclean.leader.election.enable": "true"}
    assert sorted(zk_client.get_children("/config/changes")) == ["config_change_0000000000", "config_change_0000000001"]
    assert admin.get_topic_config("t") == {"unclean.leader.election.enable": "true"}


def test_set_topic_config_refusals(admin, zk_client):
    assert refused("UnknownTopicOrPartitionException", admin.set_topic_config, "nope", {"retention.ms": "1"}) == (
        "UnknownTopicOrPartitionException: Topic 'nope' does not exist.")
    admin.create_topic("t", {0: [1]})
    refused("InvalidConfigurationException", admin.set_topic_config, "t", {"min.insync.replicas": "two"})
    assert admin.get_topic_config("t") == {}
    assert not zk_client.exists("/config/changes")


def test_readers(admin, zk_client):
    assert (admin.list_topics(), admin.list_brokers()) == ([], [])
    refused("UnknownTopicOrPartitionException", admin.get_topic_assignment, "t")
    admin.create_topic("t", {0: [1, 2]})
    assert admin.get_partition_state("t", 0) is None
    state = LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 0, (1, 2)), controller_epoch=1)
    zk_client.create(paths.partition_state_path("t", 0), codec.encode_partition_state(state), makepath=True)
    zk_client.set(paths.partition_state_path("t", 0), codec.encode_partition_state(state))
    assert admin.get_partition_state("t", 0) == LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 0, (1, 2), 1), 1)
    register_brokers(zk_client, 2, 10)
    assert admin.list_brokers() == [2, 10]
    zk_client.create("/brokers/ids/oops")
    with pytest.raises(codec.ZnodeFormatError, match="/brokers/ids/oops"):
        admin.list_brokers()
    zk_client.set(paths.topic_path("t"), b'{"version":3,"partitions":{"0":"1,2"}}')
    with pytest.raises(codec.ZnodeFormatError, match="partitions.0 must be a list of broker ids"):
        admin.get_topic_assignment("t")
    with pytest.raises(NoNodeError):
        zk_client.get("/admin")
