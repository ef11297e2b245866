"""Matching ``expect`` steps against a cluster view: partial, in order, missing things count."""

from __future__ import annotations

import json

import pytest

from backend.core.controller.states import PartitionState, ReplicaState
from backend.faultscript.expect import describe_expectation, mismatches
from backend.faultscript.loader import parse_script

CONTROLLER_ZNODE = json.dumps({"version": 1, "brokerid": 0, "timestamp": "1700000000000"}).encode()

VIEW = {
    "controller": 0,
    "controller_epoch": 2,
    "brokers": {0: "alive", 1: "dead", 2: "alive"},
    "partitions": {
        "t-0": {"leader": 2, "isr": [2, 0], "leader_epoch": 1, "state": "OnlinePartition", "zk_version": 3},
        "my-topic-1": {"leader": -1, "isr": (1,), "leader_epoch": 4, "state": PartitionState.OfflinePartition},
    },
    "replicas": {"t-0/1": "OfflineReplica", "t-0/2": ReplicaState.OnlineReplica},
    "znodes": {"/controller": CONTROLLER_ZNODE, "/controller_epoch": b"2", "/admin/delete_topics": None,
               "/note": "plain text", "/empty": b""},
}


def test_everything_named_matches():
    expected = {
        "within_ms": 5000, "controller": 0, "controller_epoch": 2, "brokers": {1: "dead", 2: "alive"},
        "partitions": {"t-0": {"leader": 2, "isr": [2, 0], "leader_epoch": 1, "state": "OnlinePartition"},
                       "my-topic-1": {"leader": -1, "isr": [1], "state": "OfflinePartition"}},
        "replicas": {"t-0/1": "OfflineReplica", "t-0/2": "OnlineReplica"},
        "znodes": {"/controller": {"brokerid": 0}, "/controller_epoch": 2, "/note": "plain text", "/empty": "",
                   "/admin/delete_topics": {"exists": False}, "/admin/absent": {"exists": False}},
    }
    assert mismatches(expected, VIEW) == []


def test_only_the_keys_present_are_compared():
    assert mismatches({"partitions": {"t-0": {"leader": 2}}}, VIEW) == []
    assert mismatches({"controller": 0}, {"controller": 0}) == []  # other sections absent: not compared


@pytest.mark.parametrize("expected, lines", [
    ({"controller": 1}, ["controller: expected 1, found 0"]),
    ({"controller": None}, ["controller: expected none, found 0"]),
    ({"controller_epoch": 3}, ["controller_epoch: expected 3, found 2"]),
    ({"brokers": {1: "alive"}}, ["brokers.1: expected alive, found dead"]),
    ({"partitions": {"t-0": {"leader": 1}}}, ["partitions.t-0.leader: expected 1, found 2"]),
    ({"partitions": {"t-0": {"leader_epoch": 2, "state": "OfflinePartition"}}},
     ["partitions.t-0.leader_epoch: expected 2, found 1", "partitions.t-0.state: expected OfflinePartition, "
                                                           "found OnlinePartition"]),
    ({"partitions": {"my-topic-1": {"state": "OnlinePartition"}}},
     ["partitions.my-topic-1.state: expected OnlinePartition, found OfflinePartition"]),
    ({"replicas": {"t-0/1": "OnlineReplica"}}, ["replicas.t-0/1: expected OnlineReplica, found OfflineReplica"]),
])
def test_each_kind_of_mismatch_is_one_readable_line(expected, lines):
    assert mismatches(expected, VIEW) == lines


def test_lists_compare_in_order():
    assert mismatches({"partitions": {"t-0": {"isr": [0, 2]}}}, VIEW) == [
        "partitions.t-0.isr: expected [0, 2], found [2, 0]"]
    assert mismatches({"partitions": {"t-0": {"isr": [2]}}}, VIEW) == [
        "partitions.t-0.isr: expected [2], found [2, 0]"]


def test_missing_things_are_mismatches():
    assert mismatches({"brokers": {5: "alive"}, "partitions": {"t-9": {"leader": 1, "isr": [1]}},
                       "replicas": {"t-0/0": "OnlineReplica"}, "znodes": {"/brokers/ids/5": {"host": "x"}}},
                      VIEW) == [
        "brokers.5: expected alive, found no such broker",
        "partitions.t-9: expected leader 1, isr [1], found no such partition",
        "replicas.t-0/0: expected OnlineReplica, found no such replica",
        'znodes./brokers/ids/5: expected {"host": "x"}, found no such znode',
    ]
    assert mismatches({"partitions": {"t-0": {"leader": 1}}}, {"partitions": {"t-0": {"isr": [1]}}}) == [
        "partitions.t-0.leader: expected 1, found nothing"]
    assert mismatches({"controller": 0}, {}) == ["controller: expected 0, found none"]


def test_exists_false_means_absent_and_exists_true_means_present():
    assert mismatches({"znodes": {"/controller": {"exists": False}}}, VIEW) == [
        'znodes./controller: expected no such znode, found {"version": 1, "brokerid": 0, '
        '"timestamp": "1700000000000"}']
    assert mismatches({"znodes": {"/controller": {"exists": True}, "/gone": {"exists": True}}}, VIEW) == [
        "znodes./gone: expected the znode to exist, found no such znode"]


def test_znode_data_matches_decoded_json_partially_or_else_text():
    assert mismatches({"znodes": {"/controller": {"brokerid": 1}}}, VIEW) == [
        "znodes./controller.brokerid: expected 1, found 0"]
    assert mismatches({"znodes": {"/controller": {"epoch": 1}}}, VIEW) == [
        "znodes./controller.epoch: expected 1, found nothing"]
    assert mismatches({"znodes": {"/controller_epoch": "2"}}, VIEW) == []  # the text, too
    assert mismatches({"znodes": {"/note": "other"}}, VIEW) == ["znodes./note: expected other, found plain text"]
    assert mismatches({"znodes": {"/p": {"partitions": {"0": [1, 0]}}}},
                      {"znodes": {"/p": '{"version": 2, "partitions": {"0": [0, 1]}}'}}) == [
        "znodes./p.partitions.0: expected [1, 0], found [0, 1]"]


def test_true_is_not_one():
    assert mismatches({"znodes": {"/flag": 1}}, {"znodes": {"/flag": b"true"}}) == [
        "znodes./flag: expected 1, found true"]


def test_broker_ids_match_as_numbers_or_text():
    assert mismatches({"brokers": {1: "dead"}}, {"brokers": {"1": "dead"}}) == []
    assert mismatches({"brokers": {"1": "dead"}}, {"brokers": {1: "dead"}}) == []


def test_describe_expectation():
    assert describe_expectation({
        "within_ms": 5000, "controller": 0, "brokers": {1: "dead"},
        "partitions": {"t-0": {"leader": 2, "isr": [2, 0]}}, "replicas": {"t-0/1": "OfflineReplica"},
        "znodes": {"/controller": {"brokerid": 0}, "/x": {"exists": False}}}) == (
        'controller 0; broker 1 dead; t-0 leader 2, isr [2, 0]; replica t-0/1 OfflineReplica; '
        'znode /controller = {"brokerid": 0}; znode /x absent (within 5000 ms)')
    assert describe_expectation({"controller": None, "controller_epoch": 3}) == "no controller; controller epoch 3"


def test_an_expect_step_from_a_script_matches_a_view():
    script = parse_script("""\
cluster: {brokers: [0, 1, 2], topics: {t: {partitions: 1, replication_factor: 2}}}
steps:
  - op: expect
    controller: 0
    brokers: {"1": dead}
    partitions: {t-0: {leader: 2, isr: [2, 0]}}
    znodes: {/controller: {brokerid: 0}}
""")
    args = script.steps[0].args
    assert args["within_ms"] == 10000
    assert mismatches(args, VIEW) == []
