"""What the controller measures about its own work (Kafka's ``ControllerStats``), as records.

Kafka keeps rate-and-time metrics per ``ControllerState``; the lab says what a student can see:
how long a big batch of ZooKeeper writes took, and how they were sent — what Kafka 1.1's
pipelining (KAFKA-5642) buys, live. New controller measurements belong here.
"""

from __future__ import annotations

from backend.core.records import Record
from backend.runtime.peers import Emit

TIMED_WRITES = 200
"""A batch of at least this many controller writes leaves a ``zk_writes`` record with its time."""


class ControllerStats:
    def __init__(self, broker_id: int, emit: Emit) -> None:
        self.broker_id = broker_id
        self._emit = emit

    def writes_done(self, count: int, seconds: float, pipelined: bool, epoch: int) -> None:
        """A batch of ``count`` fenced writes took ``seconds`` (from the first submitted to the
        last answered); a big one is worth a record."""
        if count < TIMED_WRITES:
            return
        how = ("pipelined: each sent without waiting for the previous answer" if pipelined
               else "one at a time: each sent after the previous answer")
        self._emit([Record(kind="controller", subject=f"broker:{self.broker_id}", to_state="zk_writes",
                           broker_id=self.broker_id, controller_id=self.broker_id, controller_epoch=epoch or None,
                           count=count, note=f"Controller {self.broker_id} wrote {count} znodes to ZooKeeper in "
                                             f"{seconds * 1000:.0f} ms, {how}.",
                           detail={"ms": round(seconds * 1000, 1), "pipelined": pipelined})])
