"""The controller's metrics, by Kafka 2.8's names, computed from what the controller holds.

Kafka exposes them per broker over JMX (``kafka.controller:type=KafkaController``,
``…:type=ControllerStats``, ``…:type=ControllerEventManager``, ``kafka.server:type=ReplicaManager``);
operators are told to watch ``ActiveControllerCount`` summed over the brokers: 1 normally, 2 while
a zombie still believes it is the controller, 0 while none is elected. Every gauge here is a pure
function of the controller context (as Kafka's ``updateMetrics`` computes them after each event);
the runtime samples them, the API serves them as JSON or in Prometheus' text format.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

from backend.core.controller.context import ControllerContext
from backend.core.controller.events import ControllerState
from backend.core.controller.states import PartitionState, ReplicaState

CONTROLLER_GAUGES = ("ActiveControllerCount", "OfflinePartitionsCount", "PreferredReplicaImbalanceCount",
                     "GlobalTopicCount", "GlobalPartitionCount", "TopicsToDeleteCount", "ReplicasToDeleteCount",
                     "TopicsIneligibleToDeleteCount", "ReplicasIneligibleToDeleteCount")
"""``kafka.controller:type=KafkaController``'s gauges (``ControllerState`` is the thread's)."""

MBEANS = {
    **{name: "kafka.controller:type=KafkaController" for name in (*CONTROLLER_GAUGES, "ControllerState")},
    "EventQueueSize": "kafka.controller:type=ControllerEventManager",
    "EventQueueTimeMs": "kafka.controller:type=ControllerEventManager",
    "UncleanLeaderElectionsPerSec": "kafka.controller:type=ControllerStats",
    "UnderReplicatedPartitions": "kafka.server:type=ReplicaManager",
}


def rate_and_time_metric_name(state: ControllerState) -> str | None:
    """Kafka's ``ControllerState.rateAndTimeMetricName``: ``<State>RateAndTimeMs``, with its two
    historical names, and none for ``Idle`` and ``UpdateMetadataResponseReceived``."""
    special = {ControllerState.BrokerChange: "LeaderElectionRateAndTimeMs",
               ControllerState.AlterPartitionReassignment: "PartitionReassignmentRateAndTimeMs",
               ControllerState.Idle: None, ControllerState.UpdateMetadataResponseReceived: None}
    return special.get(state, f"{state.name}RateAndTimeMs")


def _has_preferred_leader(ctx: ControllerContext, tp) -> bool:
    """``hasPreferredLeader``: a reassigning partition whose preferred replica is still being
    added counts as balanced until that replica joins the ISR."""
    assignment, info = ctx.partition_assignments[tp], ctx.partition_leadership_info[tp]
    preferred = assignment.replicas[0]
    if assignment.is_being_reassigned and preferred in assignment.adding_replicas:
        return preferred not in info.isr
    return info.leader == preferred


def controller_gauges(ctx: ControllerContext, active: bool) -> dict[str, int]:
    """Kafka's ``updateMetrics``: every gauge is 0 on a broker that is not the active controller."""
    if not active:
        return dict.fromkeys(CONTROLLER_GAUGES, 0)
    deleting = ctx.topics_to_be_deleted
    to_delete = [r for t in deleting for r in ctx.replicas_for_topic(t)]
    return {
        "ActiveControllerCount": 1,
        "OfflinePartitionsCount": sum(1 for tp, s in ctx.partition_states.items() if s is PartitionState.OfflinePartition
                                      and tp.topic not in ctx.topics_with_deletion_started),
        "PreferredReplicaImbalanceCount": sum(
            1 for tp in ctx.partition_leadership_info
            if tp in ctx.partition_assignments and tp.topic not in deleting and not _has_preferred_leader(ctx, tp)),
        "GlobalTopicCount": len(ctx.all_topics),
        "GlobalPartitionCount": len(ctx.partition_leadership_info),
        "TopicsToDeleteCount": len(deleting),
        "ReplicasToDeleteCount": sum(1 for r in to_delete if ctx.replica_state(r) is not ReplicaState.ReplicaDeletionSuccessful),
        "TopicsIneligibleToDeleteCount": len(ctx.topics_ineligible_for_deletion),
        "ReplicasIneligibleToDeleteCount": sum(1 for r in to_delete
                                               if ctx.replica_state(r) is ReplicaState.ReplicaDeletionIneligible),
    }


def under_replicated_partitions(broker_id: int, hosted: Iterable) -> int:
    """``ReplicaManager.UnderReplicatedPartitions``: partitions this broker leads whose ISR is
    smaller than their replica set."""
    return sum(1 for p in hosted if p.leader == broker_id and len(p.isr) < len(p.replicas))


def broker_metrics(gauges: Mapping[str, int], state: ControllerState, queue: Mapping[str, Any],
                   timers: Mapping[str, Mapping[str, float]], unclean_elections: int, under_replicated: int) -> dict:
    """One broker's metrics, by name: ``queue`` is the event manager's (size, and the times
    events waited: count, mean, max, last ms); ``timers`` the per-state processing times."""
    return {
        **gauges, "ControllerState": state.value,
        "EventQueueSize": queue["size"], "EventQueueTimeMs": dict(queue["time_ms"]),
        **{name: dict(timer) for name, timer in sorted(timers.items())},
        "UncleanLeaderElectionsPerSec": {"count": unclean_elections},
        "UnderReplicatedPartitions": under_replicated,
    }


def cluster_metrics(brokers: Mapping[int, Mapping[str, Any]]) -> dict:
    """Every running broker's metrics, and ``ActiveControllerCount`` summed over them — the
    number an operator watches."""
    return {"ActiveControllerCount": sum(m["ActiveControllerCount"] for m in brokers.values()),
            "brokers": {str(b): dict(m) for b, m in sorted(brokers.items())}}


def prometheus_text(metrics: Mapping[str, Any]) -> str:
    """Prometheus' text format, named as the JMX exporter's usual rules name them
    (``kafka_controller_kafkacontroller_activecontrollercount{broker="0"} 1``): one gauge per
    value, a timer or histogram as its ``_count``, ``_mean`` and ``_max``; each family's
    samples together, as the format requires."""
    families: dict[str, list[str]] = {}
    for broker, values in metrics["brokers"].items():
        for name, value in values.items():
            samples = [("", value)] if not isinstance(value, Mapping) else [(f"_{k}", v) for k, v in value.items()]
            for suffix, number in samples:
                metric = _prometheus_name(name) + suffix.removesuffix("_ms")
                families.setdefault(metric, []).append(f'{metric}{{broker="{broker}"}} {number}')
    lines = []
    for metric, samples in families.items():
        lines += [f"# TYPE {metric} {'counter' if metric.endswith('_count') else 'gauge'}", *samples]
    lines += ["# TYPE kafka_controller_activecontrollercount_sum gauge",
              f"kafka_controller_activecontrollercount_sum {metrics['ActiveControllerCount']}"]
    return "\n".join(lines) + "\n"


def _prometheus_name(name: str) -> str:
    domain, _, mbean_type = MBEANS.get(name, "kafka.controller:type=ControllerStats").partition(":type=")
    return f"{domain.replace('.', '_')}_{mbean_type}_{name}".lower()
