"""Faults on a live cluster: each really happens, and one that does not apply is refused with
a reason — a record and an answer — without touching the cluster."""

from __future__ import annotations

import threading

from backend.core.model import TopicPartition
from backend.runtime.faults import apply_fault
from backend.zk import paths
from tests.support import requests_sent, wait_until


def leader_of(cluster, name):
    return cluster.inspect()["partitions"].get(name, {}).get("leader")


def test_refusals_name_the_reason_and_change_nothing(start_cluster):
    cluster, recorder = start_cluster(brokers=(0, 1))
    before = cluster.inspect()
    cases = {
        ("crash_broker", 7): "there is no broker 7; this cluster has brokers [0, 1]",
        ("start_broker", 1): "broker 1 is running, so it cannot be started",
        ("resume_broker", 1): "broker 1 is not paused",
    }
    for (op, broker), reason in cases.items():
        result = apply_fault(cluster, op, {"broker": broker})
        assert not result.ok and reason in result.message, result.message
        assert result.record.outcome == "refused" and reason in result.record.note
    for op, args, reason in [
        ("delete_topic", {"topic": "nope"}, "topic 'nope' does not exist"),
        ("crash_broker", {"broker": "one"}, "broker"),
        ("crash_broker", {}, "broker"),
        ("launch_missiles", {}, "unknown op 'launch_missiles'"),
        ("set_config", {"name": "min.insync.replica", "value": 2}, "min.insync.replica"),
        ("reassign_partitions", {"partitions": {"t-0": [9]}}, "topic 't' does not exist"),
    ]:
        result = apply_fault(cluster, op, args)
        assert not result.ok and reason in result.message, (op, result.message)
    assert cluster.inspect() == before
    assert len(recorder.of("fault", outcome="refused")) == 9


def test_stop_then_restart_rejoins_the_isr(start_cluster):
    cluster, recorder = start_cluster(topics={"t": {"assignment": {0: [0, 1, 2]}}},
                                      config={})
    assert apply_fault(cluster, "stop_broker", {"broker": 2}).ok
    wait_until(lambda: cluster.inspect()["partitions"]["t-0"]["isr"] == [0, 1], 10, "broker 2 to leave the ISR")
    assert apply_fault(cluster, "start_broker", {"broker": 2}).ok
    wait_until(lambda: cluster.inspect()["partitions"]["t-0"]["isr"] == [0, 1, 2], 15, "broker 2 to rejoin the ISR")
    # The controller's write shows in ``inspect`` before leader 0 has read the AlterIsr answer
    # and said so: wait for its record (CI once read the recorder in between).
    expanded = wait_until(lambda: recorder.of("isr", to_state="expanded"), 10, "leader 0's record of the expansion")
    # 2.8's default protocol: leader 0 asked (AlterIsr), the controller wrote
    assert expanded and expanded[-1].broker_id == 0 and expanded[-1].detail["written_by"] == "controller"
    assert expanded[-1].leader_epoch == cluster.inspect()["partitions"]["t-0"]["leader_epoch"]  # no bump


def test_expire_session_removes_the_znode_and_the_broker_registers_again(start_cluster, zk_client):
    cluster, recorder = start_cluster(brokers=(0, 1), topics={"t": {"assignment": {0: [1, 0]}}})
    _, first = zk_client.get(paths.broker_path(1))
    assert apply_fault(cluster, "expire_session", {"broker": 1}).ok
    registered = wait_until(lambda: len(recorder.of("broker", broker_id=1, to_state="registered")) == 2, 10,
                            "broker 1 to register again with a new session")
    assert registered
    _, second = zk_client.get(paths.broker_path(1))
    assert second.czxid > first.czxid and second.ephemeralOwner != first.ephemeralOwner
    assert recorder.of("broker", broker_id=1, to_state="session_lost")


def test_paused_broker_loses_its_znode_after_the_session_timeout_and_comes_back(start_cluster, zk_client):
    cluster, recorder = start_cluster(brokers=(0, 1), topics={"t": {"assignment": {0: [0, 1]}}},
                                      config={"zookeeper.session.timeout.ms": 1500})
    assert apply_fault(cluster, "pause_broker", {"broker": 1}).ok
    assert zk_client.exists(paths.broker_path(1)) is not None  # a frozen process still has its session
    wait_until(lambda: zk_client.exists(paths.broker_path(1)) is None, 10, "the session of broker 1 to expire")
    wait_until(lambda: cluster.inspect()["partitions"]["t-0"]["isr"] == [0], 10, "the controller to shrink the ISR")
    assert apply_fault(cluster, "resume_broker", {"broker": 1}).ok
    wait_until(lambda: zk_client.exists(paths.broker_path(1)) is not None, 10, "broker 1 to register again")


def test_a_short_pause_leaves_no_dropped_connection_in_the_records(start_cluster):
    """A JVM woken from a pause shorter than its read time-out still has its TCP connection:
    Kafka's broker says nothing about ZooKeeper. The lab's resume closes the blackholed
    connection and dials again within the same session; the broker must hear of that while it
    is still frozen (it says nothing), not after it woke — the broker_registration lesson's
    replay showed "lost its connection" and "reached ZooKeeper again" right after "woke up"."""
    cluster, recorder = start_cluster(brokers=(0, 1), topics={"t": {"assignment": {0: [0, 1]}}})
    broker = cluster.brokers[1]
    session = broker.session.session_id
    for _ in range(3):
        assert apply_fault(cluster, "pause_broker", {"broker": 1}).ok
        assert apply_fault(cluster, "resume_broker", {"broker": 1}).ok
        # A round trip on the broker's own session: answered only after the loop has hung up
        # the paused connection and dialled again, so any record of it has been made.
        broker.kafka_zk.get_controller_id()
    assert broker.session.session_id == session, "a short pause cost the session"
    assert [r.to_state for r in recorder.of("broker", broker_id=1)
            if r.to_state in ("zk_disconnected", "zk_reconnected")] == []
    assert len(recorder.of("broker", broker_id=1, to_state="resumed")) == 3


def test_stalled_follower_is_dropped_by_its_leader_and_taken_back(start_cluster):
    cluster, recorder = start_cluster(brokers=(0, 1), topics={"t": {"assignment": {0: [0, 1]}}},
                                      config={"replica.lag.time.max.ms": 800})
    assert apply_fault(cluster, "stall_follower", {"broker": 1, "topic": "t"}).ok
    wait_until(lambda: cluster.inspect()["partitions"]["t-0"]["isr"] == [0], 10, "leader 0 to drop stalled 1")
    # The controller records the shrink after its write, which the inspection may already show
    # (CI, stop 50: the record was a moment behind the znode).
    shrink = wait_until(lambda: recorder.of("isr", to_state="shrunk"), 10, "the shrink's record")[-1]
    asked = recorder.of("request", op="AlterIsr", to_state="sent")[0]
    assert shrink.broker_id == 0 and asked.broker_id == 0 and "replica.lag.time.max.ms" in asked.note
    assert cluster.inspect()["brokers"][1] == "alive"  # alive in ZooKeeper, out of the ISR
    assert apply_fault(cluster, "resume_follower", {"broker": 1, "topic": "t"}).ok
    wait_until(lambda: cluster.inspect()["partitions"]["t-0"]["isr"] == [0, 1], 10, "1 to rejoin")


def test_topic_deletion_removes_every_znode(start_cluster, zk_client):
    cluster, recorder = start_cluster(brokers=(0, 1), topics={"t": {"partitions": 2, "replication_factor": 2}})
    assert apply_fault(cluster, "delete_topic", {"topic": "t"}).ok
    gone = (paths.topic_path("t"), paths.topic_config_path("t"), paths.delete_topic_path("t"))
    wait_until(lambda: all(zk_client.exists(p) is None for p in gone), 10, "the topic's znodes to go")
    assert any(r.to_state == "ReplicaDeletionSuccessful" for r in recorder.of("replica"))
    assert recorder.of("controller_event", op="TopicDeletionStopReplicaResponseReceived")


def test_a_reassignment_deleting_a_replica_is_not_a_topic_deletion_event(start_cluster, zk_client):
    """StopReplica(delete) also removes a reassignment's dropped replica; Kafka turns its answer
    into ``TopicDeletionStopReplicaResponseReceived`` only for a topic being deleted."""
    cluster, recorder = start_cluster(brokers=(0, 1, 2), topics={"t": {"assignment": {0: [0, 1]}}})
    assert apply_fault(cluster, "reassign_partitions", {"partitions": {"t-0": [0, 2]}}).ok
    wait_until(lambda: cluster.inspect()["partitions"]["t-0"]["replicas"] == [0, 2]
               and zk_client.exists(paths.REASSIGN_PARTITIONS) is None, 20, "the reassignment to complete")
    deleted = wait_until(lambda: [r for r in recorder.of("request", op="StopReplica", broker_id=1)
                                  if (r.detail or {}).get("partitions", {}).get("t-0", {}).get("delete")], 10,
                         "StopReplica(delete) to reach broker 1")
    assert deleted
    assert cluster.wait_stable(10)
    assert not recorder.of("controller_event", op="TopicDeletionStopReplicaResponseReceived")


def test_topic_level_unclean_election(start_cluster):
    cluster, _ = start_cluster(brokers=(0, 1), topics={"t": {"assignment": {0: [0, 1]}}})
    apply_fault(cluster, "stop_broker", {"broker": 1})
    wait_until(lambda: cluster.inspect()["partitions"]["t-0"]["isr"] == [0], 10, "1 out of the ISR")
    apply_fault(cluster, "stop_broker", {"broker": 0})
    apply_fault(cluster, "start_broker", {"broker": 1})
    wait_until(lambda: cluster.inspect()["partitions"]["t-0"].get("state") == "OfflinePartition", 10, "t-0 offline")
    result = apply_fault(cluster, "set_config", {"name": "unclean.leader.election.enable", "value": True,
                                                 "topic": "t"})
    assert result.ok, result.message
    wait_until(lambda: leader_of(cluster, "t-0") == 1, 10, "an unclean election of 1")
    config = cluster.admin.get_topic_config("t")
    assert config == {"unclean.leader.election.enable": "true"}


def test_delete_controller_znode_refused_when_there_is_none(start_cluster):
    cluster, _ = start_cluster(brokers=(0,))
    apply_fault(cluster, "stop_broker", {"broker": 0})
    result = apply_fault(cluster, "delete_controller_znode", {})
    assert not result.ok and "/controller does not exist" in result.message


def test_records_are_dense_and_consequences_point_to_their_event(start_cluster):
    cluster, recorder = start_cluster(topics={"t": {"assignment": {0: [1, 2, 0]}}})
    apply_fault(cluster, "stop_broker", {"broker": 1})
    wait_until(lambda: leader_of(cluster, "t-0") == 2, 10, "a new leader")
    assert cluster.wait_stable(10)
    seqs = [r.seq for r in recorder.records]
    assert seqs == list(range(len(seqs)))
    election = recorder.of("election", topic="t", partition=0)[-1]
    assert election.cause == "BrokerChange"
    event = next(r for r in recorder.records if r.seq == election.cause_seq)
    assert event.kind == "controller_event" and event.op == "BrokerChange" and event.to_state == "queued"


def test_a_produce_finds_its_partition_in_the_brokers_metadata_not_in_zookeeper(start_cluster):
    """A producer learns partitions from a broker's metadata, as Kafka's does; the lab's check
    used to read ZooKeeper twice before the fault's record and twice again to carry it out, each
    read a wait for the worker's session thread (issue 14, thirty-fourth round). A partition the
    metadata does not have is still looked up in ZooKeeper and refused in the same words."""
    cluster, _ = start_cluster(topics={"t": {"partitions": 3, "replication_factor": 2}})
    wait_until(lambda: all(cluster.producer.metadata_of(tp) is not None
                           for tp in [TopicPartition("t", p) for p in range(3)]), 15, "every broker's metadata to hold t")
    asked = requests_sent(cluster.operator._client, thread=threading.get_ident())
    produced = apply_fault(cluster, "produce", {"topic": "t", "partition": 1, "count": 3})
    consumed = apply_fault(cluster, "consume", {"topic": "t", "partition": 1})
    assert produced.ok and consumed.ok and "from t-1" in consumed.message, (produced, consumed)
    assert asked == []
    unknown = apply_fault(cluster, "produce", {"topic": "t", "partition": 7})
    assert not unknown.ok and "topic 't' has partitions 0..2, not 7" in unknown.message
    assert asked  # ZooKeeper said so
