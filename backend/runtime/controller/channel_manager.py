"""Kafka's ``ControllerChannelManager``: how the controller's requests reach the brokers.

Every broker is in this process, so the "network" is each broker's request queue: the request
is put there and the broker's request-handler thread applies it — or rejects it, if it comes
from a controller whose epoch it has already seen bettered. Both ends leave a record with the
same subject (``request:LeaderAndIsr#17``), so the browser can draw the request flying and
landing, or bouncing. As in Kafka, the controller owns its channel manager, and what happens
with a response is the sender's business: :meth:`ControllerChannelManager.send` takes the
callback.
"""

from __future__ import annotations

from typing import Callable, Iterator

from backend.core.records import Record
from backend.core.subjects import request_subject
from backend.runtime.peers import BrokerDirectory, Emit


class ControllerChannelManager:
    def __init__(self, peers: BrokerDirectory, correlation_ids: Iterator[int], emit: Emit,
                 control_plane: bool) -> None:
        """``emit`` is the controller's (records carry the event being processed as their cause);
        ``control_plane``: the controller's broker has ``control.plane.listener.name`` set, so
        it connects to the brokers' control listeners (Kafka 2.8 ``addNewBroker``, KIP-291)."""
        self._peers = peers
        self._correlation_ids = correlation_ids
        self._emit = emit
        self._control_plane = control_plane

    def send(self, requests, on_response: Callable[[object, object], None]) -> None:
        """Send each request; ``on_response(request, response)`` runs on the receiving broker's
        request-handler thread when it has answered."""
        details: dict = {}  # UpdateMetadata carries the same partitions to every broker: describe them once
        for request in requests:
            correlation_id = next(self._correlation_ids)
            target = self._peers.request_endpoint(request.broker_id)
            deliverable = target is not None
            [sent] = self._emit([Record(
                kind="request", subject=request_subject(request.name, correlation_id),
                to_state="sent" if deliverable else "undeliverable", op=request.name,
                controller_id=request.controller_id, controller_epoch=request.controller_epoch,
                broker_id=request.broker_id, outcome=None if deliverable else "error",
                note=_describe(request, deliverable), detail=_shared_detail(request, details),
            )])
            if deliverable:
                target.enqueue_control_request(request, correlation_id, sent.seq,
                                               lambda response, request=request: on_response(request, response),
                                               control_plane=self._control_plane)


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
