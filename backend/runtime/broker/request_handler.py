"""A broker's request queues and handler threads (Kafka's ``RequestChannel`` and
``KafkaRequestHandlerPool``): one request at a time from each queue, in arrival order.

Every broker has a data-plane queue and thread. With ``control.plane.listener.name`` set
(KIP-291, Kafka 2.2) it also has a control-plane queue and thread for the controller's
requests, so they no longer wait behind produce requests.
Which queue a controller request joins is decided by the *sending* controller's broker (Kafka
2.8 ``ControllerChannelManager.addNewBroker``): with the setting it connects to the control
listener, otherwise its requests arrive on the data plane, whatever this broker has.
"""

from __future__ import annotations

import queue
import threading
import time
from typing import Callable

_STOP = object()


class RequestHandler:
    def __init__(self, broker_id: int, gate: threading.Event, is_alive: Callable[[], bool],
                 handle_control: Callable[..., None], handle_produce: Callable[..., None]) -> None:
        """``handle_control(request, correlation_id, sent_seq, callback, queue_name, waited_ms)``
        and ``handle_produce(tp, payloads, acks, respond)`` run on a handler thread; ``gate`` is
        cleared while the broker is paused."""
        self.broker_id = broker_id
        self._gate = gate
        self._is_alive = is_alive
        self._handle_control = handle_control
        self._handle_produce = handle_produce
        self._queues: dict[str, queue.Queue] = {}
        self._threads: list[threading.Thread] = []

    def start(self, control_plane: bool) -> None:
        """``control_plane``: this broker has a control listener (read at start: it is static)."""
        names = ("data", "control") if control_plane else ("data",)
        self._queues = {name: queue.Queue() for name in names}
        self._threads = [threading.Thread(target=self._run, args=(name,), daemon=True,
                                          name=f"request-handler-{name}-{self.broker_id}") for name in names]
        for thread in self._threads:
            thread.start()

    def close(self) -> None:
        """Tell every handler thread to finish (what is queued before it is dropped unanswered)."""
        for q in self._queues.values():
            q.put(_STOP)

    def join(self, timeout: float) -> None:
        for thread in self._threads:
            thread.join(timeout)

    def enqueue_control_request(self, request, correlation_id: int, sent_seq: int | None, callback,
                                control_plane: bool = False) -> None:
        """``control_plane``: the sending controller's broker connects to control listeners."""
        queue_name = "control" if control_plane and "control" in self._queues else "data"
        self._queues[queue_name].put(("control", time.monotonic(), (request, correlation_id, sent_seq, callback)))

    def enqueue_produce(self, tp, payloads: list[str], acks: str, respond) -> None:
        self._queues["data"].put(("produce", time.monotonic(), (tp, payloads, acks, respond)))

    def queue_size(self) -> int:
        return sum(q.qsize() for q in self._queues.values())

    def _run(self, queue_name: str) -> None:
        requests = self._queues[queue_name]
        while True:
            item = requests.get()
            if item is _STOP:
                return
            self._gate.wait()
            if not self._is_alive():
                continue
            what, queued_at, payload = item
            if what == "produce":
                self._handle_produce(*payload)
            else:
                self._handle_control(*payload, queue_name=queue_name,
                                     waited_ms=(time.monotonic() - queued_at) * 1000)
