"""The controller's gauges, computed as Kafka's ``updateMetrics`` computes them, on literal contexts."""

from dataclasses import replace

from backend.core.controller.events import ControllerState
from backend.core.model import ReplicaAssignment
from backend.view.metrics import cluster_metrics, controller_gauges, prometheus_text, rate_and_time_metric_name
from tests.core.support import cluster, tp


def test_a_broker_that_is_not_the_controller_reports_zero_for_every_gauge():
    ctx = cluster(partitions={"t-0": ([0, 1], 0, [0, 1])})
    assert set(controller_gauges(ctx, active=False).values()) == {0}


def test_offline_imbalanced_and_global_counts():
    ctx = cluster(live=(0, 1, 2), partitions={"t-0": ([0, 1], 1, [0, 1]), "t-1": ([1, 2], 1, [1, 2]),
                                             "u-0": ([3], 3, [3])})
    gauges = controller_gauges(ctx, active=True)
    assert gauges["ActiveControllerCount"] == 1
    assert gauges["OfflinePartitionsCount"] == 1  # u-0: its only replica is on broker 3, not live
    assert gauges["PreferredReplicaImbalanceCount"] == 1  # t-0 is led by 1, prefers 0
    assert (gauges["GlobalTopicCount"], gauges["GlobalPartitionCount"]) == (2, 3)


def test_a_topic_queued_for_deletion_is_not_imbalanced_and_a_started_deletion_not_offline():
    ctx = cluster(live=(0, 1), partitions={"t-0": ([0, 1], 1, [0, 1]), "u-0": ([3], 3, [3])})
    ctx = replace(ctx, topics_to_be_deleted=frozenset({"t", "u"}), topics_with_deletion_started=frozenset({"u"}))
    gauges = controller_gauges(ctx, active=True)
    assert (gauges["PreferredReplicaImbalanceCount"], gauges["OfflinePartitionsCount"]) == (0, 0)
    assert gauges["TopicsToDeleteCount"] == 2


def test_a_reassignment_adding_the_preferred_replica_is_balanced_until_it_joins_the_isr():
    ctx = cluster(live=(0, 1, 2), partitions={"t-0": ([1], 1, [1])})
    ctx = ctx.with_assignments({tp("t-0"): ReplicaAssignment((2, 1), adding_replicas=(2,), removing_replicas=(1,))})
    assert controller_gauges(ctx, active=True)["PreferredReplicaImbalanceCount"] == 0


def test_timer_names_are_kafkas():
    assert rate_and_time_metric_name(ControllerState.BrokerChange) == "LeaderElectionRateAndTimeMs"
    assert rate_and_time_metric_name(ControllerState.AlterPartitionReassignment) == "PartitionReassignmentRateAndTimeMs"
    assert rate_and_time_metric_name(ControllerState.TopicChange) == "TopicChangeRateAndTimeMs"
    assert rate_and_time_metric_name(ControllerState.Idle) is None


def test_the_sum_and_the_prometheus_text_group_each_family():
    metrics = cluster_metrics({0: {"ActiveControllerCount": 1, "EventQueueTimeMs": {"count": 3, "mean_ms": 0.5}},
                               1: {"ActiveControllerCount": 1, "EventQueueTimeMs": {"count": 1, "mean_ms": 2.0}}})
    assert metrics["ActiveControllerCount"] == 2
    lines = prometheus_text(metrics).splitlines()
    families = [line.split()[2] for line in lines if line.startswith("# TYPE")]
    assert len(families) == len(set(families))  # one TYPE line, its samples together
    assert 'kafka_controller_controllereventmanager_eventqueuetimems_count{broker="1"} 1' in lines
    assert lines[-1] == "kafka_controller_activecontrollercount_sum 2"
