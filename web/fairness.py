"""One student cannot starve the class: a sandbox that floods slows only itself.

Two places are shared by every sandbox of a worker, so two bounds keep a flood in its own sandbox:

* **HTTP threads.** A fault runs in the request's thread, and the worker has a fixed number of
  them (``kclab serve --threads``). Each sandbox carries out one fault at a time, with at most
  ``MAX_WAITING`` more queued behind it (:class:`FaultQueue`); one more is a 429 at once, so a
  script firing a hundred requests at its sandbox holds at most ``1 + MAX_WAITING`` threads while
  everyone else's faults go on. (Issue 11's per-client token bucket, ``web/clients.FaultRate``,
  still bounds how often one computer acts at all.)
* **The broadcaster's round.** One thread sends every sandbox's new records; a sandbox with a
  backlog (a ``produce`` of 10,000 messages, a fault storm) sends at most ``MAX_BATCH`` records a
  round and goes to the back of the next round (:func:`fair_order`), so its backlog never delays
  another sandbox's delivery by more than one bounded batch.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator

MAX_WAITING = 2
"""Faults that may wait behind the one a sandbox is carrying out (a double click, a page and a
script at once); more are refused."""
MAX_BATCH = 500
"""Records one sandbox sends per broadcaster round (~50 KB of JSON)."""


class SandboxBusy(Exception):
    """A sandbox already has a fault in progress and ``MAX_WAITING`` queued: a 429."""


class FaultQueue:
    """A sandbox's faults, one at a time, at most ``MAX_WAITING`` waiting."""

    def __init__(self, max_waiting: int = MAX_WAITING) -> None:
        self.max_waiting = max_waiting
        self.queued = 0
        """Faults in progress or waiting: at most ``1 + max_waiting``."""
        self.refused = 0
        self._count = threading.Lock()
        self._turn = threading.Lock()

    @contextmanager
    def turn(self) -> Iterator[None]:
        with self._count:
            if self.queued > self.max_waiting:
                self.refused += 1
                raise SandboxBusy(f"this sandbox is still carrying out {self.queued} actions; wait for them "
                                  f"before sending more (at most {1 + self.max_waiting} at a time)")
            self.queued += 1
        try:
            with self._turn:
                yield
        finally:
            with self._count:
                self.queued -= 1


def fair_order(sandboxes: list) -> list:
    """The broadcaster's round: the sandbox served longest ago first, so one that has just sent a
    batch waits behind every other that holds records."""
    return sorted(sandboxes, key=lambda sandbox: sandbox.last_broadcast)
