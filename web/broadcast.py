"""Records reach browsers in batches, never one socket message per record.

A flood of one message per record was measured to drown 30 clients, so one background task
wakes ``BATCHES_PER_SECOND`` times a second and sends each sandbox's new records to its room
as one ``records`` message. Pages order records by ``seq`` themselves (a catch-up batch sent on
join may cross a live one), so batching never loses or reorders anything that matters.
"""

from __future__ import annotations

import threading
import time

BATCHES_PER_SECOND = 15
REAP_EVERY_S = 30


class Broadcaster:
    """Sends each sandbox's new records to its room; now and then reclaims idle sandboxes."""

    def __init__(self, socketio, manager, rate: float = BATCHES_PER_SECOND) -> None:
        self.socketio = socketio
        self.manager = manager
        self.interval = 1 / rate
        self._stop = threading.Event()
        self._task = None
        self._last_reap = time.monotonic()

    def start(self) -> None:
        if self._task is None:
            self._task = self.socketio.start_background_task(self._run)

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            self.flush()
            if time.monotonic() - self._last_reap > REAP_EVERY_S:
                self._last_reap = time.monotonic()
                self.manager.reap_idle()
            self.socketio.sleep(self.interval)

    def flush(self) -> None:
        for sandbox in self.manager.all():
            records = sandbox.drain()
            if records:
                # ``head``: the newest seq sent, so a page can tell that the tail of a batch is missing
                # without waiting for a later record to reveal the gap.
                self.socketio.emit("records", {"sandbox": sandbox.id, "records": records, "head": records[-1]["seq"]},
                                   to=room(sandbox.id))


def room(sandbox_id: str) -> str:
    return f"sandbox:{sandbox_id}"
