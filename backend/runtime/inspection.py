"""The cluster as an ``expect`` step and a lesson's question see it: one plain mapping.

What ZooKeeper holds (read through the operator session), plus what lives only in the active
controller's memory, as in Kafka — partition and replica states, the assignment — and each
partition's log as its leader has it. The format is the one ``backend.faultscript.expect``
documents; ``Cluster.inspect`` assembles it from the cluster's parts.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping

from backend.core.controller.context import ControllerContext
from backend.core.model import TopicPartition
from backend.zk.operator import OperatorSession

BROKER_STATUS = {"running": "alive", "paused": "paused", "shutting_down": "shutting_down",
                 "crashed": "dead", "stopped": "dead"}


def inspect(operator: OperatorSession, active_context: Callable[[], ControllerContext | None],
            brokers: Mapping[int, Any], lost_count: Callable[[TopicPartition], int],
            znodes: Iterable[str] = ()) -> dict[str, Any]:
    """``active_context()`` is the active controller's context (``None``: no active controller);
    ``brokers`` the cluster's brokers by id; ``lost_count(tp)`` the acknowledged messages lost."""
    controller_epoch = operator.controller_epoch()
    ctx = active_context()
    partitions = {}
    for tp, state in operator.partition_states().items():
        entry = {"leader": state.leader, "isr": list(state.isr), "leader_epoch": state.leader_and_isr.leader_epoch,
                 "controller_epoch": state.controller_epoch, "zk_version": state.leader_and_isr.zk_version}
        if ctx is not None:
            entry["state"] = ctx.partition_state(tp).name
            entry["replicas"] = list(ctx.partition_replica_assignment(tp))
        leader = brokers.get(state.leader)
        log = leader.data.logs.get(tp) if leader is not None and leader.alive else None
        if log is not None:
            entry.update(high_watermark=log.high_watermark, log_end_offset=log.log_end_offset)
        entry["lost"] = lost_count(tp)
        partitions[f"{tp.topic}-{tp.partition}"] = entry
    replicas = {}
    if ctx is not None:
        replicas = {f"{r.topic_partition}/{r.replica}": s.name for r, s in ctx.replica_states.items()}
    found = operator.znode_data(znodes)
    return {
        "controller": operator.controller_id(), "controller_epoch": controller_epoch,
        "brokers": {b: BROKER_STATUS[broker.status] for b, broker in brokers.items() if broker.status in BROKER_STATUS},
        "partitions": partitions, "replicas": replicas, "znodes": found,
    }
