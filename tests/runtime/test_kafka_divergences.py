"""Places where the lab once did what Kafka 2.8.2 does not (issue 13, item 3), each as a scenario
on the real ZooKeeper that failed before the change: the controller now does what Kafka's
``KafkaController`` does."""

from __future__ import annotations

from backend.runtime.faults import apply_fault
from backend.zk import codec, paths
from backend.core.model import TopicPartition
from tests.support import wait_until

T0 = TopicPartition("t", 0)


def _processed(recorder, event: str) -> int:
    return len(recorder.of("controller_event", op=event, to_state="processed"))


def test_a_set_on_the_reassignment_znode_changes_nothing(start_cluster, zk_client):
    """``PartitionReassignmentHandler`` has only ``handleCreation``: rewriting
    ``/admin/reassign_partitions`` (an operator's ``zkCli set``) neither starts the new target
    nor runs the pending reassignment again (which would bump the leader epoch)."""
    cluster, recorder = start_cluster(brokers=(0, 1, 2), topics={"t": {"assignment": {0: [0]}}})
    assert apply_fault(cluster, "shutdown_broker", {"broker": 1}).ok
    assert apply_fault(cluster, "reassign_partitions", {"partitions": {"t-0": [1]}}).ok
    wait_until(lambda: cluster.inspect()["partitions"]["t-0"]["replicas"] == [1, 0], 15, "phase A of the reassignment")
    assert cluster.wait_stable()
    before = cluster.inspect()["partitions"]["t-0"]
    started = _processed(recorder, "ZkPartitionReassignment")
    _, stat = zk_client.get(paths.REASSIGN_PARTITIONS)
    zk_client.set(paths.REASSIGN_PARTITIONS, codec.encode_reassignment({T0: (2,)}))
    wait_until(lambda: recorder.of("zk", subject=f"znode:{paths.REASSIGN_PARTITIONS}", to_state="changed"), 10,
               "the observer to see the set")
    assert cluster.wait_stable()
    after = cluster.inspect()["partitions"]["t-0"]
    assert (after["leader_epoch"], after["replicas"]) == (before["leader_epoch"], [1, 0])
    assert _processed(recorder, "ZkPartitionReassignment") == started
    assert zk_client.get(paths.REASSIGN_PARTITIONS)[1].version == stat.version + 1  # the set stands


def test_a_reassignment_after_a_finished_one_is_still_seen(start_cluster, zk_client):
    """The watch acts on creation only, so after deleting the znode the controller puts
    ``ZkPartitionReassignment`` itself to arm it again: a second reassignment still starts."""
    cluster, recorder = start_cluster(brokers=(0, 1), topics={"t": {"assignment": {0: [0]}}})
    for target in ([1], [0]):
        assert apply_fault(cluster, "reassign_partitions", {"partitions": {"t-0": target}}).ok
        wait_until(lambda: cluster.inspect()["partitions"]["t-0"]["replicas"] == target
                   and zk_client.exists(paths.REASSIGN_PARTITIONS) is None, 15, f"the move to {target}")


def test_a_failover_that_fails_resigns_and_deletes_the_controller_znode(start_cluster, zk_client):
    """Kafka's ``elect``: any error while becoming controller (here a malformed partition state
    znode) triggers ``triggerControllerMove`` — resign and delete ``/controller`` — instead of
    holding ``/controller`` with a half-built context. Once the znode is mended, an election
    succeeds."""
    cluster, recorder = start_cluster(brokers=(0, 1), topics={"t": {"assignment": {0: [0, 1]}}})
    state = paths.partition_state_path("t", 0)
    good, _ = zk_client.get(state)
    zk_client.set(state, b'{"version":1,"leader":"zero"}')
    assert apply_fault(cluster, "delete_controller_znode", {}).ok
    failed = wait_until(lambda: recorder.of("controller", to_state="failover_failed"), 15, "a failover to fail")
    assert failed[0].outcome == "error" and "ZnodeFormatError" in failed[0].note
    wait_until(lambda: [r for r in recorder.of("zk", subject="znode:/controller", to_state="deleted")
                        if r.seq > failed[0].seq], 15, "the failed controller to delete /controller")
    assert recorder.of("controller", to_state="resigned", broker_id=failed[0].broker_id)
    zk_client.set(state, good)
    wait_until(lambda: cluster.active_controller() is not None and cluster.wait_stable(), 30,
               "a controller that finishes its failover")


def test_a_changed_registration_is_sent_to_every_broker(start_cluster, zk_client):
    """``BrokerModificationsHandler``: a data watch on each ``/brokers/ids/<id>``; a changed
    endpoint becomes the controller's and goes out in UpdateMetadata (``onBrokerUpdate``)."""
    cluster, recorder = start_cluster(brokers=(0, 1, 2), topics={"t": {"assignment": {0: [0, 1]}}})
    assert cluster.wait_stable()
    zk_client.set(paths.broker_path(1), codec.encode_broker("broker-1.example", 9093))
    [updated] = wait_until(lambda: recorder.of("controller", to_state="broker_updated"), 10, "the update")
    assert updated.broker_id == 1 and "broker-1.example:9093" in updated.note
    wait_until(lambda: {r.broker_id for r in recorder.of("request", op="UpdateMetadata", to_state="sent")
                        if r.cause == "BrokerModifications"} == {0, 1, 2}, 10, "UpdateMetadata to every broker")
    info = cluster.active_controller().ctx.live_brokers[1]
    assert (info.host, info.port) == ("broker-1.example", 9093)


def test_a_deletion_flag_for_a_topic_that_does_not_exist_is_removed_at_failover(zk_client, start_cluster):
    """Failover queues every child of ``/admin/delete_topics``; for a topic that is not there the
    deletion manager completes at once and deletes the flag (``resumeDeletions`` →
    ``completeDeleteTopic``), rather than leaving it for ever."""
    zk_client.create(paths.delete_topic_path("ghost"), b"", makepath=True)
    cluster, recorder = start_cluster(brokers=(0, 1), topics={"t": {"assignment": {0: [0, 1]}}})
    wait_until(lambda: zk_client.exists(paths.delete_topic_path("ghost")) is None, 15, "the flag to be removed")
    assert any("ghost" in (r.note or "") for r in recorder.of("controller", to_state="topic_deletion"))
    assert "t-0" in cluster.inspect()["partitions"]


def test_controlled_shutdown_asked_of_a_broker_that_is_not_the_controller_is_stale_controller_epoch(start_cluster):
    """``doControlledShutdown`` throws ``ControllerMovedException`` when the broker is not the
    active controller; ``processControlledShutdown`` runs it in a ``Try`` and the broker is
    answered STALE_CONTROLLER_EPOCH (``Errors.forException``)."""
    import threading

    from backend.core.controller import events as ev
    cluster, recorder = start_cluster(brokers=(0, 1, 2), topics={"t": {"assignment": {0: [0, 1]}}})
    assert cluster.wait_stable()
    not_controller = next(b for b in (0, 1, 2) if b != cluster.controller_id())
    answered, answer = threading.Event(), {}

    def callback(**result):
        answer.update(result)
        answered.set()

    cluster.brokers[not_controller].controller.events.put(ev.ControlledShutdown(2, -1, callback))
    assert answered.wait(10)
    assert answer["error"] == "STALE_CONTROLLER_EPOCH" and "ControllerMovedException" in answer["message"]
    assert cluster.wait_stable() and cluster.brokers[2].status == "running"


def test_auto_leader_rebalance_enable_is_static(start_cluster):
    """``auto.leader.rebalance.enable`` is a read-only broker setting in Kafka: turning it on in
    a running cluster starts no imbalance check until a broker restarts (and becomes controller)."""
    cluster, recorder = start_cluster(brokers=(0, 1), topics={"t": {"assignment": {0: [0, 1]}}},
                                      config={"auto.leader.rebalance.enable": False})
    result = apply_fault(cluster, "set_config", {"name": "auto.leader.rebalance.enable", "value": True})
    assert result.ok and "after a restart" in result.message
    assert cluster.wait_stable()
    assert not recorder.of("controller_event", op="AutoPreferredReplicaLeaderElection")
    assert cluster.active_controller().auto_leader_rebalance_enable is False
