"""A stand-in for the broadcaster's socketio (``web.broadcast.Broadcaster``'s first argument),
shared by the tests that look at what the broadcaster sends rather than how: which records in
which round, to which room, through the message queue or not. The real ``SocketIO.emit`` is
exercised by every socket test (``test_sockets.py``, ``tests/scaleout``)."""

from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass(frozen=True)
class Emit:
    event: str
    payload: dict
    to: str | None
    ignore_queue: bool


class SentEmits:
    def __init__(self) -> None:
        self.emits: list[Emit] = []

    def emit(self, event, payload, to=None, ignore_queue=False) -> None:
        self.emits.append(Emit(event, payload, to, ignore_queue))

    def start_background_task(self, target):
        return threading.Thread(target=target, daemon=True)

    def batches(self) -> list[tuple[str, int]]:
        """(sandbox id, number of records) of each batch, in the order sent."""
        return [(e.payload["sandbox"], len(e.payload["records"])) for e in self.emits]

    def local_only(self) -> list[str]:
        """The sandboxes whose batches skipped the message queue."""
        return [e.payload["sandbox"] for e in self.emits if e.ignore_queue]
