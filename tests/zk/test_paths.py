"""Znode paths: exactly Kafka 2.8's layout (spec §1), plus the lab's chroot helpers."""

from __future__ import annotations

import pytest

from backend.core.model import TopicPartition
from backend.zk import paths


def test_fixed_paths_are_kafkas():
    assert (paths.CONTROLLER, paths.CONTROLLER_EPOCH) == ("/controller", "/controller_epoch")
    assert (paths.BROKER_IDS, paths.BROKER_TOPICS, paths.BROKER_SEQID) == (
        "/brokers/ids", "/brokers/topics", "/brokers/seqid")
    assert paths.DELETE_TOPICS == "/admin/delete_topics"
    assert paths.REASSIGN_PARTITIONS == "/admin/reassign_partitions"
    assert paths.PREFERRED_REPLICA_ELECTION == "/admin/preferred_replica_election"
    assert paths.ISR_CHANGE_NOTIFICATION == "/isr_change_notification"
    assert paths.CONFIG_TOPICS == "/config/topics"
    assert paths.CONFIG_CHANGES == "/config/changes"
    assert paths.CLUSTER_ID == "/cluster/id"
    assert paths.LOG_DIR_EVENT_NOTIFICATION == "/log_dir_event_notification"
    assert paths.LATEST_PRODUCER_ID_BLOCK == "/latest_producer_id_block"
    assert paths.CONSUMERS == "/consumers"


def test_persistent_paths_are_the_ones_every_2_8_broker_creates():
    assert paths.PERSISTENT_PATHS == (
        "/consumers", "/brokers/ids", "/brokers/topics", "/config/changes", "/admin/delete_topics",
        "/brokers/seqid", "/isr_change_notification", "/latest_producer_id_block",
        "/log_dir_event_notification", "/config/topics", "/config/clients", "/config/users", "/config/brokers",
    )


def test_per_entity_paths():
    assert paths.broker_path(3) == "/brokers/ids/3"
    assert paths.topic_path("orders") == "/brokers/topics/orders"
    assert paths.topic_partitions_path("orders") == "/brokers/topics/orders/partitions"
    assert paths.partition_path("orders", 2) == "/brokers/topics/orders/partitions/2"
    assert paths.partition_state_path("orders", 2) == "/brokers/topics/orders/partitions/2/state"
    assert paths.delete_topic_path("orders") == "/admin/delete_topics/orders"
    assert paths.topic_config_path("orders") == "/config/topics/orders"


def test_sequential_paths_use_kafkas_prefixes():
    assert paths.isr_change_path() == "/isr_change_notification/isr_change_"
    assert paths.isr_change_path("0000000007") == "/isr_change_notification/isr_change_0000000007"
    assert paths.config_change_path() == "/config/changes/config_change_"
    assert paths.log_dir_event_path("0000000001") == "/log_dir_event_notification/log_dir_event_0000000001"


@pytest.mark.parametrize("bad", ["", "a/b", ".", "..", None, 7])
def test_a_name_must_be_one_path_segment(bad):
    with pytest.raises(ValueError, match="without '/'"):
        paths.topic_path(bad)


@pytest.mark.parametrize("bad", [-1, True, "1", 1.0])
def test_ids_must_be_non_negative_integers(bad):
    with pytest.raises(ValueError, match="non-negative integer"):
        paths.broker_path(bad)
    with pytest.raises(ValueError, match="non-negative integer"):
        paths.partition_state_path("t", bad)


def test_parsers_invert_the_builders_and_reject_anything_else():
    assert paths.parse_partition_state_path(paths.partition_state_path("a.b-c", 12)) == TopicPartition("a.b-c", 12)
    assert paths.parse_partition_state_path("/brokers/topics/t/partitions/01/state") is None
    assert paths.parse_partition_state_path("/brokers/topics/t/partitions/0") is None
    assert paths.parse_topic_path("/brokers/topics/orders") == "orders"
    assert paths.parse_topic_path("/brokers/topics/orders/partitions") is None
    assert paths.parse_broker_path("/brokers/ids/10") == 10
    assert paths.parse_broker_path("/brokers/ids/x") is None
    assert paths.parse_broker_id("7") == 7
    assert paths.parse_broker_id("-1") is None and paths.parse_broker_id("seven") is None


def test_sequence_number_reads_zookeepers_ten_digit_suffix():
    assert paths.sequence_number("isr_change_0000000042", paths.ISR_CHANGE_PREFIX) == "0000000042"
    assert paths.sequence_number("isr_change_42", paths.ISR_CHANGE_PREFIX) is None
    assert paths.sequence_number("config_change_0000000001", paths.ISR_CHANGE_PREFIX) is None


def test_default_chroot_validates_the_cluster_id():
    assert paths.default_chroot("demo-1_a.b") == "/kclab/demo-1_a.b"
    for bad in ("", ".", "..", "a/b", "a b", "ü"):
        with pytest.raises(ValueError, match="cluster id"):
            paths.default_chroot(bad)


def test_join_chroot_builds_a_connect_string():
    assert paths.join_chroot("127.0.0.1:2181", "/kclab/demo") == "127.0.0.1:2181/kclab/demo"
    assert paths.join_chroot("h1:1,h2:2", "/kclab/a") == "h1:1,h2:2/kclab/a"
    assert paths.join_chroot("h1:1", "/") == "h1:1"
    for hosts, chroot in (("h:1/x", "/a"), ("", "/a"), ("h:1", "a"), ("h:1", "/a/"), ("h:1", "/a//b"), ("h:1", "/a/..")):
        with pytest.raises(ValueError):
            paths.join_chroot(hosts, chroot)
