"""Where records leave the runtime: stamped with their session, ``seq`` and time, then fanned
out to every sink (replay log, websocket batcher, a script's ``--json`` printer, waiters).

``seq`` is *the* order: it is dense (0, 1, 2, …) and stamped under one lock, and sinks are
called under that lock too, so every sink sees records in ``seq`` order with none missing.
Sinks must therefore be quick (append to a buffer, write one line).

The bus keeps the newest ``history`` records for late subscribers, ``since`` and ``wait_for``,
packed (``Record.packed``): a class's worth of kept records is then bytes the garbage collector
never visits, not millions of objects it revisits in every full collection.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import deque
from typing import Callable, Iterable

from backend.core.records import Record

Sink = Callable[[list[Record]], None]

HISTORY = 20000
"""Records a bus keeps by default: a page's catch-up and a lesson's look back reach this far
(about 5 MB a sandbox packed; older records are in the replay log)."""


class RecordBus:
    def __init__(self, session_id: str, clock: Callable[[], float] = time.time, history: int = HISTORY) -> None:
        self.session_id = session_id
        self._clock = clock
        self._cond = threading.Condition()
        self._seq = 0
        self._sinks: list[Sink] = []
        self._kept: deque[bytes | Record] = deque(maxlen=history)
        """The newest records, packed; seqs are dense, so the last one's is ``_seq - 1``."""

    def subscribe(self, sink: Sink, replay_from: int | None = None) -> Callable[[], None]:
        """Add ``sink``; with ``replay_from`` it first gets the kept records from that seq on,
        atomically, so it misses nothing and sees nothing twice."""
        with self._cond:
            if replay_from is not None:
                backlog = self._since(replay_from)
                if backlog:
                    sink(backlog)
            self._sinks.append(sink)

        def unsubscribe() -> None:
            with self._cond:
                if sink in self._sinks:
                    self._sinks.remove(sink)
        return unsubscribe

    def emit(self, records: Iterable[Record], cause: str | None = None, cause_seq: int | None = None) -> list[Record]:
        """Stamp and deliver; ``cause``/``cause_seq`` fill records that do not name their own."""
        records = list(records)
        if not records:
            return []
        with self._cond:
            now = int(self._clock() * 1000)
            stamped = []
            for record in records:
                stamped.append(record.stamped(self.session_id, self._seq, now, cause_seq, cause))
                self._seq += 1
            self._kept.extend([record.packed() for record in stamped])
            for sink in list(self._sinks):
                sink(stamped)
            self._cond.notify_all()
        return stamped

    @property
    def next_seq(self) -> int:
        return self._seq

    def since(self, seq: int, limit: int | None = None) -> list[Record]:
        """Kept records with ``seq >= seq`` (older ones are only in the replay log), at most
        ``limit`` of them (the oldest first)."""
        with self._cond:
            return self._since(seq, limit)

    def _since(self, seq: int, limit: int | None = None) -> list[Record]:
        """Under the lock. Only the records asked for are unpacked, and found from the nearer end
        (callers mostly want the last few of thousands, a page of records the first few)."""
        count = min(len(self._kept), max(0, self._seq - seq))
        if limit is not None and limit < count:
            start = len(self._kept) - count
            chosen = list(itertools.islice(self._kept, start, start + max(0, limit)))
        else:
            chosen = list(itertools.islice(reversed(self._kept), count))
            chosen.reverse()
        return [Record.unpacked(kept) for kept in chosen]

    def wait_for(self, predicate: Callable[[Record], bool], after_seq: int, timeout: float) -> Record | None:
        """The first record from ``after_seq`` on that satisfies ``predicate``, waiting up to
        ``timeout`` seconds for it to be emitted."""
        deadline = time.monotonic() + timeout
        checked = after_seq
        with self._cond:
            while True:
                for record in self._since(checked):
                    if predicate(record):
                        return record
                checked = self._seq
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                self._cond.wait(remaining)
