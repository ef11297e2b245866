"""Kafka's ``ControllerChannelManager``: how the controller's requests reach the brokers.

Every broker is in this process, so the "network" is each broker's request queue: the request
is put there and the broker's request-handler thread applies it — or rejects it, if it comes
from a controller whose epoch it has already seen bettered. Both ends leave a record with the
same subject (``request:LeaderAndIsr#17``), so the browser can draw the request flying and
landing, or bouncing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from backend.core.controller import events as ev
from backend.core.records import Record
from backend.core.subjects import request_subject

if TYPE_CHECKING:
    from backend.runtime.cluster import Cluster
    from backend.runtime.controller import KafkaController


class ControllerChannelManager:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def send(self, controller: KafkaController, requests) -> None:
        details: dict = {}  # UpdateMetadata carries the same partitions to every broker: describe them once
        for request in requests:
            correlation_id = next(self.cluster.correlation_ids)
            target = self.cluster.brokers.get(request.broker_id)
            deliverable = target is not None and target.alive
            [sent] = controller._emit([Record(
                kind="request", subject=request_subject(request.name, correlation_id),
                to_state="sent" if deliverable else "undeliverable", op=request.name,
                controller_id=request.controller_id, controller_epoch=request.controller_epoch,
                broker_id=request.broker_id, outcome=None if deliverable else "error",
                note=_describe(request, deliverable), detail=_shared_detail(request, details),
            )])
            if deliverable:
                target.enqueue_control_request(request, correlation_id, sent.seq, self._callback(controller, request),
                                               control_plane=bool(controller.broker.control_plane_listener))

    @staticmethod
    def _callback(controller: KafkaController, request):
        def on_response(response) -> None:
            """Kafka's ``sendStopReplicaRequests`` callback: partitions deleted for a topic deletion
            in progress become an event. Kafka checks ``isTopicDeletionInProgress`` here, on a
            context the sending event has already changed in place; ours is replaced only when that
            event ends, so this only leaves out what is surely a reassignment's removed replica, and
            the event's handler checks the rest on the event thread. A request-level error fails
            every partition, as Kafka's handler treats it."""
            if request.name != "StopReplica":
                return
            moving = controller.ctx.partitions_being_reassigned
            deletions = [p for p in request.partition_states if p.delete_partition and p.topic_partition not in moving]
            if deletions:
                errors = dict(response.partition_errors)
                controller.events.put(ev.TopicDeletionStopReplicaResponseReceived(
                    request.broker_id, tuple((p.topic_partition, response.error if response.error != "NONE"
                                              else errors.get(p.topic_partition, "NONE")) for p in deletions)))
        return on_response


def _describe(request, deliverable: bool) -> str:
    count = len(request.partition_states)
    what = f"{count} partition(s)" if count else "brokers only"
    if not deliverable:
        return (f"{request.name} for broker {request.broker_id} ({what}) cannot be delivered: the broker is not "
                f"running.")
    return (f"Controller {request.controller_id} (epoch {request.controller_epoch}) sends {request.name} to broker "
            f"{request.broker_id}: {what}.")


def _shared_detail(request, details: dict) -> dict:
    """``_detail``, built once per distinct partition list within one ``send`` (the records then
    share one read-only dict: with 100,000 partitions, five copies cost seconds)."""
    key = (request.name, id(request.partition_states), id(getattr(request, "live_brokers", None)))
    if key not in details:
        details[key] = _detail(request)
    return details[key]


def _detail(request) -> dict:
    if request.name == "UpdateMetadata":
        return {"live_brokers": [b.id for b in request.live_brokers],
                "partitions": {f"{p.topic}-{p.partition}": {"leader": p.leader, "isr": list(p.isr),
                                                             "leader_epoch": p.leader_epoch}
                               for p in request.partition_states}}
    if request.name == "StopReplica":
        return {"partitions": {f"{p.topic}-{p.partition}": {"delete": p.delete_partition,
                                                             "leader_epoch": p.leader_epoch}
                               for p in request.partition_states}}
    return {"partitions": {f"{p.topic}-{p.partition}": {"leader": p.leader, "isr": list(p.isr),
                                                         "leader_epoch": p.leader_epoch, "is_new": p.is_new,
                                                         "replicas": list(p.replicas)}
                           for p in request.partition_states}}
