"""When a broker's replica thread runs: Kafka's parked fetch and its leader-side timers, as one wait.

In Kafka a follower's fetch is parked at the leader (``DelayedFetch`` in the fetch purgatory)
until the leader has new data for it or ``replica.fetch.wait.max.ms`` passes, and the follower
sends its next fetch as soon as it has handled the answer. So an idle follower fetches twice a
second (Kafka's 500 ms), and a produced message reaches the followers at once. The lab's
follower cannot be parked at the leader — the leader is an object in this process — so its
thread waits for the same two things instead: its wait-max, or a :meth:`ReplicaThread.wake`
from a leader it follows that appended (``BrokerDirectory.wake_followers``). After an answer
with data it fetches again at once (that fetch tells the leader its new log end, which moves the
high watermark); after an empty one it waits. Appends that follow each other closely are fetched
together (``APPEND_GAP_S``).

The same thread does the broker's leader-side work (``lead``): it runs after every fetch, and
besides at the deadline ``lead`` names — Kafka's ISR-shrink check every
``replica.lag.time.max.ms / 2``, a waiting produce's time-out, an AlterIsr retry — or when
something it waits for happens (an AlterIsr answer, a LeaderAndIsr, a follower's fetch that may
take it back into the ISR: each calls :meth:`wake`).
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from backend.runtime.lab_clock import LabClock

MIN_WAIT_S = 0.01
"""A deadline on the lab's clock is waited for at least this long: while a lesson holds the clock
(``LabClock``), a deadline that is due never passes, and the thread must not spin on it."""


APPEND_GAP_S = 0.05
"""A follower woken by appends fetches at most this often: a steady producer's messages reach it
in batches, as Kafka's followers get them (each fetch there takes a network round trip). Without
it every single-message produce request would cost each follower two fetches and the page four
records; an append after a quiet spell is still fetched at once."""


class ReplicaThread:
    def __init__(self, name: str, clock: LabClock, *, fetch: Callable[[float], bool], lead: Callable[[float], float],
                 wait_max_ms: Callable[[], float], may_run: Callable[[], bool], gate: threading.Event,
                 on_error: Callable[[Exception], None]) -> None:
        """``fetch(now)`` fetches from every leader, True when an answer had data; ``lead(now)``
        does the leader-side work and returns when (lab ms) it must run again at the latest;
        ``gate`` is the broker's pause; ``may_run()`` whether the broker runs."""
        self._name = name
        self._clock = clock
        self._fetch = fetch
        self._lead = lead
        self._wait_max_ms = wait_max_ms
        self._may_run = may_run
        self._gate = gate
        self._on_error = on_error
        self._wake = threading.Event()
        self._fetch_due = False
        """An append asked for a fetch that has not started yet."""
        self._stopped = threading.Event()
        """The running thread's own: a thread that a restart outlived still ends."""
        self.fetch_rounds = 0
        """How many times this broker fetched from its leaders (what tests and benches count)."""

    def start(self) -> None:
        self._stopped = threading.Event()
        threading.Thread(target=self._run, args=(self._stopped,), name=self._name, daemon=True).start()

    def stop(self) -> None:
        self._stopped.set()
        self._wake.set()

    def wake(self, fetch: bool = False) -> None:
        """Run the leader side now (it has news); with ``fetch``, a leader this broker follows
        appended: fetch too, at most ``APPEND_GAP_S`` after the last fetch. While such a fetch is
        due anyway, another append does not wake the thread again."""
        if fetch:
            if self._fetch_due:
                return
            self._fetch_due = True
        self._wake.set()

    def _run(self, stopped: threading.Event) -> None:
        fetch_at = lead_at = fetched_at = 0.0  # monotonic seconds: the next fetch, the leader side's deadline
        while not stopped.is_set():
            if self._wake.wait(max(0.0, min(fetch_at, lead_at) - time.monotonic())):
                self._wake.clear()
                lead_at = 0.0
                if self._fetch_due:
                    fetch_at = min(fetch_at, fetched_at + APPEND_GAP_S)
            self._gate.wait()
            if stopped.is_set():
                return
            if not self._may_run():
                fetch_at = lead_at = time.monotonic() + self._wait_max_ms() / 1000
                continue
            try:
                now = self._clock.now_ms()
                if time.monotonic() >= fetch_at:
                    self.fetch_rounds += 1
                    self._fetch_due = False  # before the fetch reads: a later append wakes it again
                    more = self._fetch(now)
                    fetched_at = time.monotonic()
                    fetch_at = time.monotonic() + (0.0 if more else max(MIN_WAIT_S, self._wait_max_ms() / 1000))
                lead_at = time.monotonic() + max(MIN_WAIT_S, (self._lead(now) - now) / 1000)
            except Exception as exc:  # noqa: BLE001 - a lost session must not kill the thread
                fetch_at = lead_at = time.monotonic() + max(MIN_WAIT_S, self._wait_max_ms() / 1000)
                self._on_error(exc)
