"""How a leader's ISR change reaches the controller from inter.broker.protocol.version 2.7:
Kafka 2.8's ``DefaultAlterIsrManager`` and ``Partition.handleAlterIsrResponse``.

The leader does not touch ZooKeeper. It marks the partition's ISR *pending* (no other change
of it is tried meanwhile, and the high watermark counts the larger ISR), and queues the
change; the manager sends everything queued in one AlterIsr request to the controller its
metadata names, one request in flight at a time. The answer comes back on the broker's own
replica thread:

* a whole-request error (``NOT_CONTROLLER``, ``STALE_BROKER_EPOCH``, ``UNKNOWN_SERVER_ERROR``):
  everything is sent again 50 ms later;
* no answer within ``request.timeout.ms`` (the controller died, or its queue was cleared for an
  expired session — AlterIsrReceived's ``preempt`` does nothing): sent again, to the controller
  the metadata names then (Kafka's channel does so when the connection times out);
* per partition, ``UNKNOWN_TOPIC_OR_PARTITION``, ``FENCED_LEADER_EPOCH`` or
  ``INVALID_UPDATE_VERSION``: the leader gives up and its ISR stays pending until the next
  LeaderAndIsr (the controller changed the partition; it will say so); another error: sent again;
* the new state: believed, unless the leader's epoch or the znode version it knows moved on.

An answer for an ISR the leader no longer proposes is ignored.
"""

from __future__ import annotations

from collections import deque
from functools import partial
from typing import Callable, Iterator

from backend.core.broker.replica_manager import BrokerState, HostedPartition
from backend.core.controller import events as ev
from backend.core.controller.alter_isr import FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION, UNKNOWN_TOPIC_OR_PARTITION
from backend.core.model import LeaderAndIsr, TopicPartition
from backend.core.records import Record
from backend.core.subjects import request_subject
from backend.runtime.broker.isr_manager import IsrHolder
from backend.runtime.peers import BrokerDirectory

RETRY_MS = 50  # DefaultAlterIsrManager: after an error, the queued changes are sent again 50 ms later
GIVE_UP = (UNKNOWN_TOPIC_OR_PARTITION, FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION)


class AlterIsrManager:
    def __init__(self, broker_id: int, state: Callable[[], BrokerState], emit: Callable[[Record], list],
                 holder: IsrHolder, peers: BrokerDirectory, correlation_ids: Iterator[int],
                 wake: Callable[[], None]) -> None:
        """``state()`` is the broker's state now: its broker epoch, and the controller its
        metadata names (Kafka's ``MetadataCache.getControllerId``); ``wake()`` runs the replica
        thread now (an answer came)."""
        self.broker_id = broker_id
        self._state = state
        self._emit = emit
        self._holder = holder
        self._peers = peers
        self._correlation_ids = correlation_ids
        self._wake = wake
        self._unsent: dict[TopicPartition, tuple[LeaderAndIsr, str]] = {}
        """Touched by the replica thread only; other threads queue in ``_cleared`` and ``_answers``."""
        self._in_flight: dict[TopicPartition, tuple[LeaderAndIsr, str]] | None = None
        self._in_flight_id: int | None = None
        self._deadline = 0.0
        self._answers: deque = deque()
        self._cleared: deque = deque()
        self._not_before = 0.0

    def change(self, tp: TopicPartition, partition: HostedPartition, isr: tuple[int, ...], how: str, note: str) -> None:
        """``Partition.sendAlterIsrRequest``: the ISR becomes pending and the change is queued."""
        self._forget_cleared()
        if tp in self._unsent:
            return
        proposed = LeaderAndIsr(partition.leader, partition.leader_epoch, tuple(isr), partition.zk_version)
        self._holder.set_pending_isr(tp, partition.leader_epoch, proposed.isr)
        self._unsent[tp] = (proposed, note)

    def clear_pending(self, tp: TopicPartition) -> None:
        """``clearPending``: a LeaderAndIsr made this broker leader anew (or follower). Called on a
        request handler's thread: the replica thread drops the queued change."""
        self._cleared.append(tp)

    def _forget_cleared(self) -> None:
        while self._cleared:
            self._unsent.pop(self._cleared.popleft(), None)

    def has_pending(self) -> bool:
        return bool(self._unsent) or self._in_flight is not None

    def next_due(self, config) -> float:
        """When (lab ms) :meth:`tick` must run again at the latest (``inf``: nothing queued or in
        flight). An answer does not wait for it: it wakes the replica thread."""
        if self._in_flight is not None:
            return self._deadline + 1
        return self._not_before if self._unsent else float("inf")

    def tick(self, now: float, config) -> None:
        """On the replica thread: take the answers that came, then send what is queued."""
        self._forget_cleared()
        while self._answers:
            correlation_id, error, partitions = self._answers.popleft()
            if correlation_id == self._in_flight_id:  # not an answer to a request given up on
                self._on_answer(now, error, partitions)
        if self._in_flight is not None and now > self._deadline:
            self._in_flight = self._in_flight_id = None  # timed out: the queued changes go again
        if self._unsent and self._in_flight is None and now >= self._not_before:
            self._send(now, config["request.timeout.ms"])

    def _send(self, now: float, timeout_ms: float) -> None:
        state = self._state()
        endpoint = self._peers.controller_endpoint(state.controller_id) if state.controller_id >= 0 else None
        if endpoint is None:
            self._not_before = now + RETRY_MS  # no controller known yet: try again shortly
            return
        self._in_flight = dict(self._unsent)
        correlation_id = self._in_flight_id = next(self._correlation_ids)
        self._deadline = now + timeout_ms
        notes = " ".join(note for _, note in self._in_flight.values())
        self._emit(Record(
            kind="request", subject=request_subject("AlterIsr", correlation_id), to_state="sent", op="AlterIsr",
            broker_id=self.broker_id, controller_id=state.controller_id, controller_epoch=state.controller_epoch,
            note=f"{notes} Leader {self.broker_id} asks controller {state.controller_id} to write the new ISR "
                 f"(AlterIsr); until the answer the change is pending.",
            detail={"broker_epoch": state.broker_epoch, "partitions": {
                str(tp): {"leader_epoch": p.leader_epoch, "new_isr": list(p.isr), "current_isr_version": p.zk_version}
                for tp, (p, _) in sorted(self._in_flight.items())}}))
        proposals = tuple((tp, p) for tp, (p, _) in sorted(self._in_flight.items()))
        endpoint.put(ev.AlterIsrReceived(self.broker_id, state.broker_epoch, proposals, correlation_id,
                                         partial(self._answered, correlation_id)))

    def _answered(self, correlation_id: int, error: str, partitions: dict | None = None, message: str | None = None
                  ) -> None:
        """The controller's answer (on its thread): kept for the replica thread."""
        self._answers.append((correlation_id, error, partitions or {}))
        self._wake()

    def _on_answer(self, now: float, error: str, partitions: dict) -> None:
        sent, self._in_flight, self._in_flight_id = self._in_flight or {}, None, None
        if error != "NONE":
            self._not_before = now + RETRY_MS
            return
        for tp, item in sent.items():
            if tp not in partitions:
                continue
            if self._unsent.get(tp) == item:
                del self._unsent[tp]
            self._on_partition(tp, item, *partitions[tp])

    def _on_partition(self, tp: TopicPartition, item: tuple[LeaderAndIsr, str], error: str,
                      state: LeaderAndIsr | None) -> None:
        """``handleAlterIsrResponse``: only while the leader still proposes exactly this ISR."""
        proposed = item[0]
        if self._holder.pending_isr(tp, proposed.leader_epoch) != proposed.isr:
            return
        if error in GIVE_UP:
            return  # stays pending until the next LeaderAndIsr
        if error != "NONE":
            self._unsent[tp] = item  # sent again
            return
        if state.leader_epoch != proposed.leader_epoch or state.zk_version < proposed.zk_version:
            return
        self._holder.commit_isr(tp, proposed.leader_epoch, state.isr, state.zk_version)
