"""Produce requests waiting for the ISR: Kafka's ``DelayedProduce`` in its purgatory.

An acks=all produce is answered only when the high watermark has passed its last message (or
its leader epoch ended, or ``request.timeout.ms`` ran out). The purgatory keeps the waiting
requests and asks the data plane, whenever something they wait for may have changed, what each
one's answer is by now (:meth:`ProducePurgatory.complete`). Answers are sent outside the lock.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Callable

from backend.core.model import TopicPartition


@dataclass
class DelayedProduce:
    """An acks=all produce waiting until the high watermark passes its last message."""

    tp: TopicPartition
    leader_epoch: int
    required_offset: int
    deadline: float
    respond: Callable[[str, tuple[int, ...] | None], None]
    """Called with the error and, when it succeeded, the ISR the leader counted."""


class ProducePurgatory:
    def __init__(self, lock: threading.RLock,
                 outcome: Callable[[DelayedProduce, float], tuple[str, tuple[int, ...] | None] | None]) -> None:
        """``outcome(produce, now)``: its answer now (an error name, ``"NONE"``: done, with the ISR
        the leader counted or ``None``), or ``None`` to go on waiting; called with ``lock`` held,
        the data plane's lock."""
        self._lock = lock
        self._outcome = outcome
        self._waiting: list[DelayedProduce] = []

    def watch(self, produce: DelayedProduce, now: float) -> None:
        """Keep ``produce`` until it is done — which it may be already. Only the new request can
        have become complete: a moved high watermark already checked the others (Kafka's
        purgatory, too, checks only what a change concerns)."""
        with self._lock:
            self._waiting.append(produce)
            self.complete(now, [produce])

    def complete(self, now: float, candidates: list[DelayedProduce] | None = None) -> None:
        """Answer the waiting produces (``candidates``, default all) that are done."""
        if candidates is None and not self._waiting:  # nearly always: every replica round asks
            return
        done = []
        with self._lock:
            for produce in self._waiting if candidates is None else candidates:
                answer = self._outcome(produce, now)
                if answer is not None:
                    done.append((produce, answer))
            if done:
                finished = {id(p) for p, _ in done}
                self._waiting = [p for p in self._waiting if id(p) not in finished]
        for produce, (error, isr) in done:
            produce.respond(error, isr)

    def next_deadline(self) -> float:
        """When (lab ms) the first waiting produce times out (``inf``: none waits). Its answer is
        due once the lab's clock is past it."""
        if not self._waiting:  # nearly always: asked after every replica round
            return float("inf")
        with self._lock:
            return min((p.deadline + 1 for p in self._waiting), default=float("inf"))

    def fail(self, tp: TopicPartition, error: str) -> None:
        """Every produce to ``tp`` ends with ``error`` (this broker stopped leading it)."""
        with self._lock:
            failed = [p for p in self._waiting if p.tp == tp]
            self._waiting = [p for p in self._waiting if p.tp != tp]
        for produce in failed:
            produce.respond(error, None)

    def drain(self, error: str) -> None:
        """The broker stops: every waiting produce ends with ``error``."""
        with self._lock:
            waiting, self._waiting = self._waiting, []
        for produce in waiting:
            produce.respond(error, None)
