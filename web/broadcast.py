"""Records reach browsers in batches, never one socket message per record.

A flood of one message per record was measured to drown 30 clients, so one background task
sends each sandbox's new records to its room as one ``records`` message, at most
``BATCHES_PER_SECOND`` times a second per sandbox, and fewer for a sandbox so watched that its
batches would cost more than ``SENDS_PER_SECOND`` socket messages a second (a class demo). The
first records after a quiet spell (a student's click) go out at once — the sandbox wakes the
task — instead of waiting for the next tick; while records keep coming, each sandbox's next
batch waits until its interval (1/15 s for a student's own) after its last. A sandbox sends at
most ``web.fairness.MAX_BATCH`` records a round, the one served longest ago first, so a flooding
sandbox delays nobody else. Pages order records by ``seq`` themselves (a catch-up batch sent on
join may cross a live one), so batching never loses or reorders anything that matters.

With several workers, a batch goes through the message queue (Redis) only while a page on another
worker follows its sandbox (``Sandbox.remote_watchers``); otherwise it goes to this worker's pages
alone. Every batch published is decoded by every other worker, on the one thread that reads the
queue; with each student's batches published too, records reached pages half a second after they
were made at 200 students on two workers (docs/performance.md, issue 14, twenty-fourth round).
Nothing is missed by a page that starts following from another worker: the owner counts it before
taking the snapshot it is given, so a batch sent to this worker's pages alone before that is in
the snapshot or its catch-up.
"""

from __future__ import annotations

import logging
import threading
import time

from web.fairness import fair_order

log = logging.getLogger(__name__)

BATCHES_PER_SECOND = 15
SENDS_PER_SECOND = 400
"""How many socket messages one sandbox's batches may cost a second. A batch to a room is one
message per page in it, each woken on a writer thread of its own; a class demo followed by a
hundred students sent four such herds per fault, and the students' own faults waiting in the
interpreter behind them made the class's tails (docs/performance.md, issue 14, twenty-third
round). So a sandbox with many watchers sends fewer, bigger batches: 100 pages, four a second."""
REAP_EVERY_S = 30


class Broadcaster:
    """Sends each sandbox's new records to its room; now and then reclaims idle sandboxes and
    sweeps chroots whose owner died."""

    IDLE_WAIT_S = 1.0
    """With nothing waiting to be sent, wake at least this often (to stop, and to reap)."""

    def __init__(self, socketio, manager, rate: float = BATCHES_PER_SECOND, sweep_every: float | None = None,
                 sweep_grace: float = 60.0) -> None:
        self.socketio = socketio
        self.manager = manager
        self.interval = 1 / rate
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._task = None
        self._last_reap = time.monotonic()
        self.sweep_every, self.sweep_grace = sweep_every, sweep_grace
        self._next_sweep = 0.0  # at once: chroots a dead worker left behind go at start-up
        self._sweeping: threading.Thread | None = None
        manager.on_pending = self.wake  # a sandbox's first records since its last batch

    def start(self) -> None:
        if self._task is None:
            self._task = self.socketio.start_background_task(self._run)

    def wake(self) -> None:
        """Every sandbox's first records since its last batch land here, from any thread. Setting
        an ``Event`` takes its lock even when it is already set, and in a worker that has fallen
        behind, 189 record-emitting threads were caught queued on that one lock (issue 14,
        sixteenth round); reading the flag takes none. No wake-up is lost: the round clears the
        flag before it drains, so records that arrive after their sandbox was drained find it
        clear and set it."""
        if not self._wake.is_set():
            self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            # Cleared *before* flushing: records that arrive during the flush set it again, so
            # they are never left waiting for a wake-up that already happened.
            self._wake.clear()
            wait = self.IDLE_WAIT_S
            try:
                wait = self.flush()
                if time.monotonic() - self._last_reap > REAP_EVERY_S:
                    self._last_reap = time.monotonic()
                    self.manager.reap_idle()
                self._sweep_if_due()
            except Exception:  # noqa: BLE001 - one bad batch must not stop every page updating
                log.exception("the broadcaster's round failed; it goes on")
            self._wake.wait(wait)

    def _sweep_if_due(self) -> None:
        """Remove chroots whose owning process died (``AppSession.sweep``), at start-up and then
        every ``sweep_every`` seconds; in its own thread, as it waits on ZooKeeper."""
        if self.sweep_every is None or time.monotonic() < self._next_sweep:
            return
        if self._sweeping is not None and self._sweeping.is_alive():
            return
        self._next_sweep = time.monotonic() + self.sweep_every
        self._sweeping = threading.Thread(target=self._sweep, name="chroot-sweep", daemon=True)
        self._sweeping.start()

    def _sweep(self) -> None:
        try:
            swept = self.manager.sweep(self.sweep_grace)
            if swept:
                log.warning("removed %d chroot(s) whose owner is gone: %s", len(swept), ", ".join(swept))
        except Exception:  # noqa: BLE001 - ZooKeeper away: the next sweep tries again
            log.warning("the chroot sweep failed; it runs again later", exc_info=True)

    def interval_for(self, sandbox) -> float:
        """The least time between two batches of ``sandbox``: ``1 / BATCHES_PER_SECOND``, or longer
        for a sandbox watched by so many pages that its batches would cost more than
        :data:`SENDS_PER_SECOND` socket messages a second. The first records after a quiet spell
        still go at once."""
        return max(self.interval, sandbox.watchers / SENDS_PER_SECOND)

    def flush(self) -> float:
        """Send every sandbox whose last batch is at least ``interval`` old its new records.
        Returns the seconds until a sandbox that still holds records may send again.

        Only the sandboxes holding records are ordered and visited: the round runs at every
        sandbox's first records, up to a hundred times a second in a class, and sorting and
        draining all of a worker's sandboxes each time was a quarter of the broadcaster's own
        CPU (docs/performance.md, issue 14, eighth round). The order among those visited is the
        same."""
        now = time.monotonic()
        wait = self.IDLE_WAIT_S
        for sandbox in fair_order([sandbox for sandbox in self.manager.all() if sandbox.has_pending()]):
            interval = self.interval_for(sandbox)
            due_in = sandbox.last_broadcast + interval - now
            # A fault's own record (``Sandbox.acted``) goes now, once per spacing: a class demo's
            # batches are half a second apart at 200 pages, and the instructor's next click landed
            # behind the previous fault's last records a third of the time, ~0.45 s late
            # (docs/performance.md, issue 14, twenty-eighth round). The batch after an early one
            # keeps the spacing, so a burst of clicks costs at most one more batch per spacing.
            early = due_in > 0 and sandbox.acted and not sandbox.last_batch_early
            if due_in > 0 and not early:
                wait = min(wait, due_in)
                continue
            records = sandbox.drain()
            if records:
                sandbox.last_broadcast, sandbox.last_batch_early = now, early
                if sandbox.has_pending():  # a backlog beyond one batch: the rest next round
                    wait = min(wait, interval)
                # ``head``: the newest seq sent, so a page can tell that the tail of a batch is missing
                # without waiting for a later record to reveal the gap.
                try:
                    self.socketio.emit("records", {"sandbox": sandbox.id, "records": records,
                                                   "head": records[-1]["seq"]}, to=room(sandbox.id),
                                       ignore_queue=not sandbox.remote_watchers)
                except Exception:  # noqa: BLE001 - pages fetch the gap; the other sandboxes still get theirs
                    log.exception("sending sandbox %s its records failed", sandbox.id)
        return wait


def room(sandbox_id: str) -> str:
    return f"sandbox:{sandbox_id}"
