"""ISR changes the 2.8 way (AlterIsr) and the old way (inter.broker.protocol.version 2.6), on the
real ZooKeeper: who writes the state znode, which znodes appear, what the controller answers."""

from __future__ import annotations

import json

from backend.core.controller import events as ev
from backend.core.model import LeaderAndIsr, TopicPartition
from backend.runtime.polling import poll_until
from backend.zk import paths

FAST = {"replica.lag.time.max.ms": 600, "replica.fetch.wait.max.ms": 50,
        "kclab.isr.change.propagation.interval.ms": 100}
TP = TopicPartition("t", 0)


def _stall_and_wait_for_shrink(cluster, recorder):
    cluster.brokers[1].data.stalled.add(None)
    poll_until(lambda: recorder.of("isr", to_state="shrunk", outcome="ok"), 20, "the ISR to shrink")
    return recorder.of("isr", to_state="shrunk", outcome="ok")[0]


def _children(cluster, path):
    return cluster.admin.zk.get_children(path)


def test_in_a_2_8_cluster_the_leader_asks_the_controller_with_alter_isr(start_cluster):
    cluster, recorder = start_cluster(brokers=(0, 1, 2), topics={"t": {"assignment": {0: [2, 1]}}}, config=FAST)
    shrink = _stall_and_wait_for_shrink(cluster, recorder)
    controller = cluster.controller_id()
    assert shrink.detail["written_by"] == "controller" and shrink.controller_id == controller
    assert shrink.isr == (2,) and shrink.leader_epoch == 0
    sent = recorder.of("request", op="AlterIsr", to_state="sent")
    answered = recorder.of("request", op="AlterIsr", to_state="applied")
    assert sent and answered and sent[0].subject == answered[0].subject
    assert sent[0].broker_id == 2 and sent[0].controller_id == controller
    assert answered[0].controller_id == controller and answered[0].controller_epoch == cluster.brokers[
        controller].controller.ctx.epoch
    data, _ = cluster.admin.zk.get(paths.partition_state_path("t", 0))
    state = json.loads(data)
    assert state["isr"] == [2] and state["controller_epoch"] == answered[0].controller_epoch
    poll_until(lambda: cluster.brokers[2].partitions()[TP].isr == (2,), 10, "the leader to believe the new ISR")
    assert _children(cluster, paths.ISR_CHANGE_NOTIFICATION) == []
    assert not recorder.of("controller_event", op="IsrChangeNotification")
    # ControllerState.IsrChange times AlterIsrReceived as it timed IsrChangeNotification
    assert cluster.metrics()["brokers"][str(controller)]["IsrChangeRateAndTimeMs"]["count"] >= 1
    registration = json.loads(cluster.admin.zk.get(paths.broker_path(0))[0])
    assert registration["version"] == 5 and registration["features"] == {}
    assert json.loads(cluster.admin.zk.get(paths.topic_path("t"))[0]).get("topic_id")


def test_in_a_2_6_cluster_the_leader_writes_and_announces_the_change(start_cluster):
    cluster, recorder = start_cluster(brokers=(0, 1, 2), topics={"t": {"assignment": {0: [2, 1]}}},
                                      config={**FAST, "inter.broker.protocol.version": 2.6})
    shrink = _stall_and_wait_for_shrink(cluster, recorder)
    assert shrink.detail["written_by"] == "leader" and shrink.broker_id == 2
    # the watch on /isr_change_notification's children fires only when a notification appears (it
    # lives for milliseconds: the observer may not see it before the controller deletes it)
    poll_until(lambda: recorder.of("controller_event", op="IsrChangeNotification", to_state="processed"), 20,
               "the controller to consume the notification")
    [consumed] = recorder.of("controller", to_state="isr_change_notification")
    assert consumed.detail == {"t-0": [2]}
    poll_until(lambda: _children(cluster, paths.ISR_CHANGE_NOTIFICATION) == [], 10, "the notification to be deleted")
    assert not recorder.of("request", op="AlterIsr")
    registration = json.loads(cluster.admin.zk.get(paths.broker_path(0))[0])
    assert registration["version"] == 4 and "features" not in registration
    assert "topic_id" not in json.loads(cluster.admin.zk.get(paths.topic_path("t"))[0])


def _alter_isr(cluster, broker_id, leader_and_isr, broker_epoch=None):
    """Send one AlterIsr to the controller as a leader would; returns its answer."""
    answers = []
    controller = cluster.brokers[cluster.controller_id()].controller
    epoch = cluster.brokers[broker_id].state.broker_epoch if broker_epoch is None else broker_epoch
    controller.events.put(ev.AlterIsrReceived(broker_id, epoch, ((TP, leader_and_isr),), 99_000 + len(answers),
                                              lambda **answer: answers.append(answer)))
    poll_until(lambda: answers, 10, "the controller's answer")
    return answers[0]


def test_the_controller_answers_alter_isr_with_kafkas_errors(start_cluster):
    cluster, recorder = start_cluster(brokers=(0, 1, 2), topics={"t": {"assignment": {0: [2, 1]}}}, config=FAST)
    poll_until(lambda: TP in cluster.brokers[2].partitions(), 10, "the leader")
    current = cluster.brokers[2].partitions()[TP]
    stale_epoch = _alter_isr(cluster, 2, LeaderAndIsr(2, current.leader_epoch - 1, (2,), current.zk_version))
    assert stale_epoch["error"] == "NONE" and stale_epoch["partitions"][TP][0] == "FENCED_LEADER_EPOCH"
    stale_version = _alter_isr(cluster, 2, LeaderAndIsr(2, current.leader_epoch, (2,), current.zk_version + 5))
    assert stale_version["partitions"][TP][0] == "INVALID_UPDATE_VERSION"
    assert _alter_isr(cluster, 2, LeaderAndIsr(2, current.leader_epoch, (2,), current.zk_version),
                      broker_epoch=1)["error"] == "STALE_BROKER_EPOCH"
    # a broker that is not the controller (a zombie's view of itself, or a stale metadata cache)
    answers = []
    other = next(b for b in cluster.brokers.values() if b.id != cluster.controller_id())
    other.controller.events.put(ev.AlterIsrReceived(2, cluster.brokers[2].state.broker_epoch,
                                                    ((TP, current),), 99_100, lambda **a: answers.append(a)))
    poll_until(lambda: answers, 10, "the answer")
    assert answers[0]["error"] == "NOT_CONTROLLER"
    rejected = [r for r in recorder.of("request", op="AlterIsr", to_state="rejected")]
    assert {r.detail["error"] for r in rejected} == {"STALE_BROKER_EPOCH", "NOT_CONTROLLER"}
    assert all(r.controller_id is not None for r in rejected)


def _reassign_to_a_new_replica(start_cluster, ibp_version):
    """t-0 on [0] moves to [0, 1]: the reassignment completes once 1 joins the ISR."""
    cluster, recorder = start_cluster(brokers=(0, 1), topics={"t": {"assignment": {0: [0]}}},
                                      config={**FAST, "inter.broker.protocol.version": ibp_version})
    cluster.admin.reassign_partitions({TP: [0, 1]}, validate=False)
    poll_until(lambda: recorder.of("controller", to_state="reassigned"), 20, "the reassignment to complete")
    return recorder


def test_below_2_7_the_controller_watches_a_reassigning_partitions_state(start_cluster):
    recorder = _reassign_to_a_new_replica(start_cluster, "2.6")
    fired = recorder.of("controller_event", op="PartitionReassignmentIsrChange", to_state="processed")
    assert fired, "the leader's ISR write to the state znode fired PartitionReassignmentIsrChange"


def test_from_2_7_the_alter_isr_answer_completes_the_reassignment_without_that_watch(start_cluster):
    recorder = _reassign_to_a_new_replica(start_cluster, "2.7")
    assert recorder.of("request", op="AlterIsr", to_state="applied")
    assert not recorder.of("controller_event", op="PartitionReassignmentIsrChange")


def test_an_unanswered_alter_isr_is_sent_again_to_the_next_controller(start_cluster):
    """The controller freezes with the request in its queue: no answer comes (Kafka's
    AlterIsrReceived.preempt does nothing), so after request.timeout.ms the leader sends it again,
    to the controller its metadata names by then."""
    cluster, recorder = start_cluster(brokers=(0, 1, 2), topics={"t": {"assignment": {0: [1, 2]}}},
                                      config={**FAST, "zookeeper.session.timeout.ms": 1000,
                                              "request.timeout.ms": 1500})
    assert cluster.controller_id() == 0
    cluster.brokers[0].pause()
    cluster.brokers[2].data.stalled.add(None)
    poll_until(lambda: recorder.of("request", op="AlterIsr", to_state="applied"), 20, "an answer")
    sent = recorder.of("request", op="AlterIsr", to_state="sent")
    [applied] = recorder.of("request", op="AlterIsr", to_state="applied")
    assert sent[0].controller_id == 0 and applied.controller_id != 0
    assert applied.subject == sent[-1].subject and sent[-1].controller_id == applied.controller_id
    assert json.loads(cluster.admin.zk.get(paths.partition_state_path("t", 0))[0])["isr"] == [1]
