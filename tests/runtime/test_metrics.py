"""The controller's metrics on a live cluster (real ZooKeeper): ``ActiveControllerCount`` summed
over the brokers is 1 normally, 2 while a zombie still believes, 0 while no controller is
elected; and every change of a gauge is a ``metric`` record."""

from __future__ import annotations

from backend.runtime.faults import apply_fault
from tests.support import wait_until


def _sum(cluster) -> int:
    return cluster.metrics()["ActiveControllerCount"]


def test_active_controller_count_is_1_then_2_with_a_zombie_then_1_then_0(start_cluster):
    cluster, recorder = start_cluster(brokers=(0, 1, 2), topics={"t": {"assignment": {0: [0, 1], 1: [1, 2]}}},
                                      config={"zookeeper.session.timeout.ms": 1500})
    assert cluster.wait_stable()
    assert _sum(cluster) == 1
    controller = cluster.controller_id()
    metrics = cluster.metrics()["brokers"][str(controller)]
    assert (metrics["GlobalTopicCount"], metrics["GlobalPartitionCount"], metrics["OfflinePartitionsCount"]) == (1, 2, 0)
    assert metrics["EventQueueTimeMs"]["count"] > 0 and metrics["ControllerChangeRateAndTimeMs"]["count"] >= 1
    assert apply_fault(cluster, "pause_broker", {"broker": controller}).ok
    wait_until(lambda: cluster.controller_id() not in (None, controller), 15, "another broker to be elected")
    wait_until(lambda: _sum(cluster) == 2, 10, "the new controller to count itself beside the zombie")
    assert apply_fault(cluster, "resume_broker", {"broker": controller}).ok
    wait_until(lambda: _sum(cluster) == 1, 15, "the zombie to resign")
    wait_until(lambda: cluster.metrics()["brokers"][str(cluster.controller_id())]
               .get("LeaderElectionRateAndTimeMs", {}).get("count"), 15,
               "the new controller to time the BrokerChange of the zombie's return")
    reported = [r for r in recorder.of("metric", op="ActiveControllerCount")]
    assert [(r.broker_id, r.count) for r in reported if r.broker_id == controller][-1] == (controller, 0)
    for broker in (0, 1, 2):
        assert apply_fault(cluster, "crash_broker", {"broker": broker}).ok
    assert _sum(cluster) == 0 and cluster.metrics()["brokers"] == {}
