"""Fenced writes against the real ZooKeeper, through ``KafkaZkClient``: each answer ZooKeeper
gives a controller's ``multi`` (check ``/controller_epoch`` + one write) is classified as
Kafka's ``unwrapResponseWithControllerEpochCheck`` classifies it.

ZooKeeper answers a failed ``multi`` op by op: ``RolledBackError`` for the operations before the
one that failed. So a passed epoch check followed by a failed write is *not* a fenced controller.
"""

from __future__ import annotations

import pytest

from backend.core.controller.plan import (
    CreatePartitionState, DeletePreferredReplicaElection, DeleteTopicDeletionFlags, DeleteTopicZnodes,
    UpdatePartitionState,
)
from backend.core.model import LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition
from backend.zk import codec, paths
from backend.zk.client import KafkaZkClient

TP = TopicPartition("t", 0)
STATE = paths.partition_state_path("t", 0)


@pytest.fixture
def kafka_zk(zk_client):
    """A ``KafkaZkClient`` in this test's chroot, ``/controller_epoch`` at epoch 1 (version 1)
    and partition t-0 led by broker 1 (state version 0)."""
    zk_client.create(paths.CONTROLLER_EPOCH, b"0", makepath=True)
    zk_client.set(paths.CONTROLLER_EPOCH, b"1")
    zk_client.create(STATE, codec.encode_partition_state(_state(1, 0)), makepath=True)
    return KafkaZkClient(zk_client)


def _state(leader: int, zk_version: int, epoch: int = 1) -> LeaderIsrAndControllerEpoch:
    return LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, 0, tuple(sorted({leader, 2})), zk_version), epoch)


def _execute(kafka_zk, writes, epoch_zk_version=1):
    records = []
    outcomes = kafka_zk.execute(writes, epoch_zk_version, emit=records.extend)
    return outcomes, records


def test_the_raw_answer_of_a_passed_check_before_a_failed_write_is_rolled_back(kafka_zk):
    """What the classification rests on, straight from the server: check OK, setData BADVERSION."""
    from kazoo.exceptions import BadVersionError, RolledBackError
    tx = kafka_zk.zk.transaction()
    tx.check(paths.CONTROLLER_EPOCH, 1)
    tx.set_data(STATE, b"{}", version=7)
    check, write = tx.commit()
    assert isinstance(check, RolledBackError) and isinstance(write, BadVersionError)


def test_a_write_at_the_current_epoch_applies(kafka_zk):
    [outcome], records = _execute(kafka_zk, [UpdatePartitionState(TP, _state(2, 0))])
    assert (outcome.outcome, outcome.zk_version) == ("ok", 1) and records == []


def test_a_stale_znode_version_is_bad_version_not_a_fenced_controller(kafka_zk):
    kafka_zk.zk.set(STATE, codec.encode_partition_state(_state(2, 0)))  # a leader changed it meanwhile
    [outcome], [record] = _execute(kafka_zk, [UpdatePartitionState(TP, _state(0, 0))])
    assert outcome.outcome == "bad_version"
    assert (record.to_state, record.outcome) == ("write_refused", "bad_version")
    assert codec.decode_partition_state(*kafka_zk.zk.get(STATE)[:1], 1).leader == 2  # untouched


def test_a_stale_controller_epoch_is_rejected_and_nothing_applies(kafka_zk):
    kafka_zk.zk.set(paths.CONTROLLER_EPOCH, b"2")  # another broker won: version 2
    [outcome], [record] = _execute(kafka_zk, [UpdatePartitionState(TP, _state(0, 0))])
    assert outcome.outcome == "rejected_stale_epoch" and record.outcome == "rejected_stale_epoch"
    assert record.detail["controller_epoch_version"] == 1
    assert kafka_zk.zk.get(STATE)[1].version == 0


def test_one_partition_in_conflict_does_not_fail_the_others(kafka_zk):
    other = TopicPartition("t", 1)
    outcomes, _ = _execute(kafka_zk, [UpdatePartitionState(TP, _state(2, 5)), CreatePartitionState(other, _state(1, 0))])
    assert [o.outcome for o in outcomes] == ["bad_version", "ok"]
    assert kafka_zk.zk.exists(paths.partition_state_path("t", 1)) is not None


def test_creating_a_state_that_exists_is_an_error_not_a_fenced_controller(kafka_zk):
    [outcome], records = _execute(kafka_zk, [CreatePartitionState(TP, _state(2, 0))])
    assert outcome.outcome == "error" and "NodeExists" in outcome.reason and records == []


def test_deleting_znodes_already_gone_is_not_an_error(kafka_zk):
    kafka_zk.zk.create(paths.delete_topic_path("t"), b"", makepath=True)
    outcomes, records = _execute(kafka_zk, [DeletePreferredReplicaElection(),
                                            DeleteTopicDeletionFlags(("gone", "t")), DeleteTopicZnodes("t")])
    assert [o.outcome for o in outcomes] == ["ok", "ok", "ok"] and records == []
    assert kafka_zk.zk.exists(paths.topic_path("t")) is None
    assert kafka_zk.zk.exists(paths.delete_topic_path("t")) is None


def test_a_recursive_delete_with_a_child_gone_meanwhile_still_deletes_the_rest(kafka_zk, monkeypatch):
    """Each delete is its own fenced transaction (Kafka's ``deleteRecursive``): a child that
    another client removes between the listing and the delete fails only its own delete."""
    zk = kafka_zk.zk
    for p in (1, 2):
        zk.create(paths.partition_state_path("t", p), b"{}", makepath=True)
    list_children = zk.get_children

    def listed_then_one_removed(path, *args, **kwargs):
        children = list_children(path, *args, **kwargs)
        if path == paths.partition_path("t", 1):
            zk.delete(paths.partition_state_path("t", 1))  # the real server, another delete first
        return children

    monkeypatch.setattr(zk, "get_children", listed_then_one_removed)
    [outcome], _ = _execute(kafka_zk, [DeleteTopicZnodes("t")])
    assert outcome.outcome == "ok" and zk.exists(paths.topic_path("t")) is None


def test_a_missing_epoch_znode_is_an_error_not_a_fenced_controller(kafka_zk):
    kafka_zk.zk.delete(paths.CONTROLLER_EPOCH)
    [outcome], _ = _execute(kafka_zk, [UpdatePartitionState(TP, _state(2, 0))])
    assert outcome.outcome == "error" and "NoNode" in outcome.reason
