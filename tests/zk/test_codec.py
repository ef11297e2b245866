"""Payload formats, checked against the JSON Kafka 2.8 writes (spec §1, quoted verbatim below)."""

from __future__ import annotations

import base64
import json
import random
import re
import uuid

import pytest

from backend.core.model import (BrokerInfo, LeaderAndIsr, LeaderIsrAndControllerEpoch, ReplicaAssignment,
                                TopicPartition)
from backend.zk import codec
from backend.zk.codec import ZnodeFormatError

TID = "vJHSbFAXSY2ZHXmkAOmcBA"  # a topic id as Kafka prints it


def parsed(data: bytes):
    return json.loads(data.decode("utf-8"))


def assert_rejected(decode, data: bytes, *fragments: str):
    with pytest.raises(ZnodeFormatError) as caught:
        decode(data)
    for fragment in fragments:
        assert fragment in str(caught.value), f"{fragment!r} not in {str(caught.value)!r}"
    return caught.value


# -- /controller, /controller_epoch -------------------------------------------------------------
def test_controller_znode_has_a_string_timestamp():
    assert parsed(codec.encode_controller(2, 1585098432431)) == {
        "version": 1, "brokerid": 2, "timestamp": "1585098432431"}
    assert isinstance(parsed(codec.encode_controller(0))["timestamp"], str)


def test_controller_decodes_kafkas_examples():
    assert codec.decode_controller(b'{"version":1,"brokerid":0,"timestamp":"1585098432431"}') == 0
    assert codec.decode_controller(b'{"version":2,"brokerid":0,"timestamp":"1","kraftControllerEpoch":-1}') == 0
    assert codec.decode_controller(b"") is None


def test_controller_malformed():
    assert_rejected(codec.decode_controller, b'{"version":1,"timestamp":"1"}', "/controller", "missing field 'brokerid'")
    assert_rejected(codec.decode_controller, b'{"version":1,"brokerid":"0"}', "brokerid must be an integer")
    assert_rejected(codec.decode_controller, b'{"version":7,"brokerid":0}', "unsupported version 7")
    assert_rejected(codec.decode_controller, b"brokerid=0", "not valid JSON")
    assert_rejected(codec.decode_controller, b"[0]", "must be a JSON object")


def test_controller_epoch_is_a_bare_ascii_integer():
    assert codec.encode_controller_epoch(17) == b"17"
    assert codec.decode_controller_epoch(b"1") == 1
    for bad in (b"", b" 1", b'{"epoch":1}', b"-1", b"1.0"):
        assert_rejected(codec.decode_controller_epoch, bad, "/controller_epoch", "plain ASCII integer")


# -- /brokers/ids/<id> --------------------------------------------------------------------------
SPEC_BROKER_V4 = {"listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"}, "endpoints": ["PLAINTEXT://b1:9092"],
                  "jmx_port": -1, "host": "b1", "timestamp": "1600000000000", "port": 9092, "version": 4}


def test_broker_registration_is_kafkas_v4():
    assert parsed(codec.encode_broker("b1", 9092, 1600000000000)) == SPEC_BROKER_V4
    assert parsed(codec.encode_broker("b1", 9092, 1600000000000, rack="r1")) == {**SPEC_BROKER_V4, "rack": "r1"}
    assert parsed(codec.encode_broker("b1", 9092, 1600000000000, version=5)) == {
        **SPEC_BROKER_V4, "version": 5, "features": {}}
    assert parsed(codec.encode_broker("::1", 9092, 1))["endpoints"] == ["PLAINTEXT://[::1]:9092"]


def test_broker_decodes_kafkas_example_with_the_czxid_as_epoch():
    data = json.dumps(SPEC_BROKER_V4).encode()
    assert codec.decode_broker(1, data, czxid=4294967301) == BrokerInfo(1, 4294967301, "b1", 9092, None)
    racked = codec.decode_broker(1, codec.encode_broker("h", 9093, rack="east"), czxid=5)
    assert (racked.host, racked.port, racked.rack) == ("h", 9093, "east")


def test_broker_decodes_other_versions_and_listeners():
    v1 = b'{"version":1,"host":"old","port":9090,"jmx_port":9999,"timestamp":"2233345666"}'
    assert codec.decode_broker(0, v1, 3) == BrokerInfo(0, 3, "old", 9090)
    ssl_first = (b'{"version":4,"host":"h","port":9092,"jmx_port":-1,"timestamp":"1",'
                 b'"endpoints":["SSL://s:9093","PLAINTEXT://p:9092"]}')
    assert codec.decode_broker(0, ssl_first, 1).host == "p"
    ipv6 = b'{"version":4,"jmx_port":-1,"host":null,"port":-1,"endpoints":["CLIENT://[::1]:9094"]}'
    assert (codec.decode_broker(0, ipv6, 1).host, codec.decode_broker(0, ipv6, 1).port) == ("::1", 9094)


def test_broker_malformed():
    decode = lambda data: codec.decode_broker(2, data, 1)  # noqa: E731
    assert_rejected(decode, b"", "/brokers/ids/2", "a broker registration must be a JSON object")
    assert_rejected(decode, b'{"version":4,"endpoints":["PLAINTEXT://h:1"]}', "missing field 'jmx_port'")
    assert_rejected(decode, b'{"version":4,"jmx_port":-1,"endpoints":"PLAINTEXT://h:1"}', "endpoints must be a non-empty list")
    assert_rejected(decode, b'{"version":4,"jmx_port":-1,"endpoints":["h:9092"]}', "endpoints[0] must look like")
    assert_rejected(decode, b'{"version":4,"jmx_port":-1,"endpoints":["P://h:1"],"rack":3}', "rack must be a string")


# -- topic ids ----------------------------------------------------------------------------------
def test_topic_id_is_kafkas_base64url_uuid():
    for _ in range(200):
        topic_id = codec.new_topic_id()
        assert len(topic_id) == 22 and re.fullmatch(r"[A-Za-z0-9_-]{22}", topic_id)
        raw = base64.urlsafe_b64decode(topic_id + "==")
        assert len(raw) == 16 and uuid.UUID(bytes=raw).version == 4
        assert not topic_id.startswith("-")
        assert topic_id not in (codec.ZERO_UUID, codec.METADATA_TOPIC_ID)


def test_topic_id_from_a_seeded_rng_is_reproducible_and_from_a_uuid_is_its_bytes():
    assert codec.new_topic_id(random.Random(7)) == codec.new_topic_id(random.Random(7))
    value = uuid.UUID("bc91d26c-5017-498d-991d-79a400e99c04")
    assert codec.new_topic_id(value) == TID
    assert codec.METADATA_TOPIC_ID == codec.uuid_to_base64(uuid.UUID(int=1))
    with pytest.raises(ValueError, match="reserved"):
        codec.new_topic_id(uuid.UUID(int=0))


def test_parse_topic_id_accepts_padding_and_rejects_junk():
    assert codec.parse_topic_id(TID + "==") == TID
    for bad in ("abc", TID + "A", TID[:-1] + "+", 42):
        with pytest.raises(ZnodeFormatError, match="22-character base64url UUID"):
            codec.parse_topic_id(bad)


# -- /brokers/topics/<T> ------------------------------------------------------------------------
def test_topic_assignment_is_written_as_version_3():
    data = codec.encode_topic_assignment({1: ReplicaAssignment((2, 3)), 0: ReplicaAssignment((1, 2))}, TID)
    assert parsed(data) == {"version": 3, "topic_id": TID, "partitions": {"0": [1, 2], "1": [2, 3]},
                            "adding_replicas": {}, "removing_replicas": {}}
    assert parsed(codec.encode_topic_assignment({0: [1, 2]})) == {
        "version": 3, "partitions": {"0": [1, 2]}, "adding_replicas": {}, "removing_replicas": {}}


def test_topic_assignment_lists_only_reassigning_partitions_in_adding_and_removing():
    moving = ReplicaAssignment((1, 2)).reassign_to((3, 4))  # RS=[3,4,1,2], AR=[3,4], RR=[1,2]
    data = codec.encode_topic_assignment({0: moving, 1: ReplicaAssignment((2, 3))}, TID)
    assert parsed(data)["partitions"] == {"0": [3, 4, 1, 2], "1": [2, 3]}
    assert parsed(data)["adding_replicas"] == {"0": [3, 4]}
    assert parsed(data)["removing_replicas"] == {"0": [1, 2]}
    assert codec.decode_topic_assignment("t", data) == ({0: moving, 1: ReplicaAssignment((2, 3))}, TID)


def test_topic_assignment_decodes_v1_v2_v3():
    v1 = b'{"version":1,"partitions":{"0":[1,2,3],"1":[2,3,1]}}'
    assert codec.decode_topic_assignment("t", v1) == (
        {0: ReplicaAssignment((1, 2, 3)), 1: ReplicaAssignment((2, 3, 1))}, None)
    v2 = b'{"version":2,"partitions":{"0":[3,1,2]},"adding_replicas":{"0":[3]},"removing_replicas":{"0":[2]}}'
    assert codec.decode_topic_assignment("t", v2).assignment == {0: ReplicaAssignment((3, 1, 2), (3,), (2,))}
    v3 = ('{"version":3,"topic_id":"%s","partitions":{"10":[1],"2":[1]},"adding_replicas":{},'
          '"removing_replicas":{}}' % TID).encode()
    decoded = codec.decode_topic_assignment("t", v3)
    assert decoded.topic_id == TID and list(decoded.assignment) == [2, 10]
    assert codec.decode_topic_assignment("t", b"") == ({}, None)


def test_topic_assignment_malformed():
    decode = lambda data: codec.decode_topic_assignment("orders", data)  # noqa: E731
    assert_rejected(decode, b'{"version":3,"partitions":{"0":"1,2"}}', "/brokers/topics/orders",
                    "partitions.0 must be a list of broker ids")
    assert_rejected(decode, b'{"version":3,"partitions":{"zero":[1]}}', "partitions key 'zero' must be a partition id")
    assert_rejected(decode, b'{"version":3,"partition":{"0":[1]}}', "missing field 'partitions'")
    assert_rejected(decode, b'{"version":3,"partitions":{"0":[1,1]}}', "partitions.0 lists broker 1 twice")
    assert_rejected(decode, b'{"version":3,"partitions":{"0":[]}}', "partitions.0 must not be empty")
    assert_rejected(decode, b'{"version":3,"partitions":{"0":[1]},"topic_id":"x"}', "topic_id must be a 22-character")
    assert_rejected(decode, b'{"version":3,"partitions":{"0":[1]},"adding_replicas":{"1":[1]}}',
                    "adding_replicas.1 names a partition missing from partitions")
    assert_rejected(decode, b'{"version":3,"partitions":{"0":[1]},"removing_replicas":{"0":[2]}}',
                    "removing_replicas.0 lists broker 2, which is not in partitions.0 [1]")
    assert_rejected(decode, b'{"version":4,"partitions":{"0":[1]}}', "unsupported version 4")
    assert_rejected(decode, b'{"version":3,"partitions":{"0":[1.5]}}', "partitions.0 must be a list of broker ids")


# -- partition state ----------------------------------------------------------------------------
def test_partition_state_round_trip_and_kafkas_example():
    state = LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 0, (1, 2), zk_version=5), controller_epoch=1)
    assert parsed(codec.encode_partition_state(state)) == {
        "controller_epoch": 1, "leader": 1, "version": 1, "leader_epoch": 0, "isr": [1, 2]}
    spec = b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1,2]}'
    assert codec.encode_partition_state(state) == spec  # byte for byte: zkCli.sh shows Kafka's text
    assert codec.decode_partition_state(spec, 5) == state
    no_leader = b'{"controller_epoch":3,"leader":-1,"version":1,"leader_epoch":4,"isr":[2]}'
    assert codec.decode_partition_state(no_leader, 9).leader_and_isr == LeaderAndIsr(-1, 4, (2,), 9)
    recovering = b'{"controller_epoch":1,"leader":1,"version":1,"leader_epoch":0,"isr":[1],"leader_recovery_state":1}'
    assert codec.decode_partition_state(recovering, 0).leader == 1
    assert codec.decode_partition_state(b"", 0) is None


@pytest.mark.parametrize("leader, leader_epoch, isr, controller_epoch", [
    (1, 0, (1, 2), 1), (-1, 7, (), 12), (1002, 2_147_483_647, (1002, 3, 17), 0), (0, 1, (0,), 99)])
def test_partition_state_bytes_are_the_compact_json_of_kafkas_fields(leader, leader_epoch, isr, controller_epoch):
    """The encoder formats the bytes by hand (it runs once per partition moved): it must stay
    exactly the compact JSON of Kafka's field order."""
    state = LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, leader_epoch, isr), controller_epoch)
    expected = json.dumps({"controller_epoch": controller_epoch, "leader": leader, "version": 1,
                           "leader_epoch": leader_epoch, "isr": list(isr)}, separators=(",", ":")).encode()
    assert codec.encode_partition_state(state) == expected


def test_partition_state_malformed():
    where = "/brokers/topics/t/partitions/0/state"
    decode = lambda data: codec.decode_partition_state(data, 0, where)  # noqa: E731
    assert_rejected(decode, b'{"controller_epoch":1,"leader":1,"leader_epoch":0,"isr":"1,2"}', where,
                    "isr must be a list of broker ids")
    assert_rejected(decode, b'{"controller_epoch":1,"leader_epoch":0,"isr":[1]}', "missing field 'leader'")
    assert_rejected(decode, b'{"controller_epoch":1,"leader":-2,"leader_epoch":0,"isr":[1]}', "leader must be >= -1")
    assert_rejected(decode, b'{"controller_epoch":1,"leader":1,"leader_epoch":"0","isr":[1]}',
                    "leader_epoch must be an integer")
    assert_rejected(decode, b'{"controller_epoch":1,"leader":1,"leader_epoch":0,"isr":[1],}', "not valid JSON")
    assert_rejected(decode, b'{"leader":NaN}', "not valid JSON")
    assert_rejected(decode, b"\xff\xfe", "not UTF-8")


# -- admin and notification znodes --------------------------------------------------------------
def test_reassignment_round_trip_and_kafkas_example():
    spec = b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2,3]}]}'
    assert codec.decode_reassignment(spec) == {TopicPartition("t", 0): (1, 2, 3)}
    targets = {TopicPartition("t", 0): (1, 2, 3), TopicPartition("u", 4): (2,)}
    assert parsed(codec.encode_reassignment(targets)) == {"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "replicas": [1, 2, 3]}, {"topic": "u", "partition": 4, "replicas": [2]}]}
    assert codec.decode_reassignment(codec.encode_reassignment(targets)) == targets
    assert codec.decode_reassignment(b"") == {}


def test_reassignment_malformed():
    assert_rejected(codec.decode_reassignment, b'{"version":1,"partitions":{"t":[1]}}',
                    "/admin/reassign_partitions", "partitions must be a list")
    assert_rejected(codec.decode_reassignment, b'{"version":1,"partitions":[{"partition":0,"replicas":[1]}]}',
                    "missing field partitions[0].'topic'")
    assert_rejected(codec.decode_reassignment, b'{"version":1,"partitions":[{"topic":"t","partition":0}]}',
                    "missing field partitions[0].'replicas'")
    assert_rejected(codec.decode_reassignment,
                    b'{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[]}]}',
                    "partitions[0].replicas must not be empty")
    twice = b'{"partitions":[{"topic":"t","partition":0,"replicas":[1]},{"topic":"t","partition":0,"replicas":[2]}]}'
    assert_rejected(codec.decode_reassignment, twice, "partitions[1] lists partition t-0 a second time")
    assert_rejected(codec.decode_reassignment, b'{"partitions":[{"topic":"t","partition":-1,"replicas":[1]}]}',
                    "partitions[0].partition must be >= 0")


def test_preferred_replica_election_and_isr_change_notification():
    spec = b'{"version":1,"partitions":[{"topic":"t","partition":0}]}'
    assert codec.decode_preferred_replica_election(spec) == (TopicPartition("t", 0),)
    assert codec.decode_isr_change_notification(spec) == (TopicPartition("t", 0),)
    partitions = [TopicPartition("t", 1), TopicPartition("t", 0), TopicPartition("t", 1)]
    expected = {"version": 1, "partitions": [{"topic": "t", "partition": 1}, {"topic": "t", "partition": 0}]}
    assert parsed(codec.encode_preferred_replica_election(partitions)) == expected
    assert parsed(codec.encode_isr_change_notification(partitions)) == expected
    assert codec.decode_preferred_replica_election(codec.encode_preferred_replica_election(partitions)) == (
        TopicPartition("t", 1), TopicPartition("t", 0))
    assert codec.decode_preferred_replica_election(b"") == ()
    assert_rejected(codec.decode_preferred_replica_election, b'{"version":1,"partitions":[{"topic":"t"}]}',
                    "/admin/preferred_replica_election", "missing field partitions[0].'partition'")
    assert_rejected(lambda d: codec.decode_isr_change_notification(d, "/isr_change_notification/isr_change_0000000001"),
                    b'{"version":1,"partitions":[{"topic":"a/b","partition":0}]}',
                    "/isr_change_notification/isr_change_0000000001", "must not contain '/'")


def test_topic_config_values_are_strings():
    spec = b'{"version":1,"config":{"unclean.leader.election.enable":"true"}}'
    assert codec.decode_topic_config(spec) == {"unclean.leader.election.enable": "true"}
    assert parsed(codec.encode_topic_config({"min.insync.replicas": "2"})) == {
        "version": 1, "config": {"min.insync.replicas": "2"}}
    assert parsed(codec.encode_topic_config({})) == {"version": 1, "config": {}}
    assert codec.decode_topic_config(b"") == {}
    with pytest.raises(TypeError, match="must be strings"):
        codec.encode_topic_config({"min.insync.replicas": 2})
    assert_rejected(lambda d: codec.decode_topic_config(d, "/config/topics/t"),
                    b'{"version":1,"config":{"unclean.leader.election.enable":true}}',
                    "/config/topics/t", "config.unclean.leader.election.enable must be a string")
    assert_rejected(codec.decode_topic_config, b'{"version":1,"configs":{}}', "missing field 'config'")


def test_config_change_notification():
    assert parsed(codec.encode_config_change("topics/T")) == {"version": 2, "entity_path": "topics/T"}
    assert codec.decode_config_change(b'{"version":2,"entity_path":"topics/T"}') == "topics/T"
    assert_rejected(codec.decode_config_change, b'{"version":2}', "missing field 'entity_path'")


def test_cluster_id_has_a_string_version():
    assert parsed(codec.encode_cluster_id(TID)) == {"version": "1", "id": TID}
    assert codec.decode_cluster_id(b'{"version":"1","id":"%s"}' % TID.encode()) == TID
    assert len(codec.new_cluster_id()) == 22
    assert_rejected(codec.decode_cluster_id, b'{"version":1,"id":"x"}', "/cluster/id", 'unsupported version 1')
    assert_rejected(codec.decode_cluster_id, b"", "/cluster/id", "must be a JSON object")


def test_format_errors_are_value_errors_naming_znode_and_reason():
    error = assert_rejected(codec.decode_controller, b"{", "/controller")
    assert isinstance(error, ValueError)
    assert error.path == "/controller" and error.reason.startswith("data is not valid JSON")
    assert str(error) == f"/controller: {error.reason}"
