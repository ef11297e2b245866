"""Where records leave the runtime: stamped with their session, ``seq`` and time, then fanned
out to every sink (replay log, websocket batcher, a script's ``--json`` printer, waiters).

``seq`` is *the* order: it is dense (0, 1, 2, …) and stamped under one lock, and sinks are
called under that lock too, so every sink sees records in ``seq`` order with none missing.
Sinks must therefore be quick (append to a buffer, write one line).

The bus keeps the newest ``history`` records for late subscribers, ``since`` and ``wait_for``,
packed (``Record.packed``): a class's worth of kept records is then bytes the garbage collector
never visits, not millions of objects it revisits in every full collection. Every ``CHUNK``
records are sealed into one ``zlib``-compressed chunk: records of one sandbox repeat their field
names, subjects and notes, so a chunk keeps a default sandbox's record in ~70 bytes instead of
~280 packed alone (and the ~700 of the server's memory those took with the allocator's pools they
pinned): an hour-long class no longer grows its server by gigabytes (issue 14, thirty-ninth
round). Reading a kept record back is rare (a page that catches up, a lesson that looks back), so
only that pays the unpacking.
"""

from __future__ import annotations

import marshal
import threading
import time
import zlib
from collections import deque
from typing import Callable, Iterable

from backend.core.records import Record

Sink = Callable[[list[Record]], None]

HISTORY = 20000
"""Records a bus keeps by default: a page's catch-up and a lesson's look back reach this far
(under 1 MB a sandbox in chunks; older records are in the replay log)."""

CHUNK = 64
"""Records sealed into one compressed chunk. Measured over the test suite's 45,695 replay records
(zlib level 1): 220 bytes a record sealed alone, 62 in eights, 39 in 32s, 34 in 64s, and ~1.3 µs
a record to seal; a reader unpacks whole chunks, so at most ``CHUNK - 1`` records more than it asked
for at either end."""


class RecordBus:
    def __init__(self, session_id: str, clock: Callable[[], float] = time.time, history: int = HISTORY) -> None:
        self.session_id = session_id
        self._clock = clock
        self._cond = threading.Condition()
        self._seq = 0
        self._sinks: list[Sink] = []
        self._history = history
        self._tail: list[bytes | Record] = []
        """The newest records, packed, not yet sealed: seqs ``_seq - len(_tail)`` to ``_seq - 1``
        (seqs are dense)."""
        self._chunks: deque[bytes | list[bytes | Record]] = deque()
        """Sealed chunks of ``CHUNK`` records each, the newest last, just before the tail: a
        compressed ``marshal`` of the records' packed bytes, or the list itself when a record could
        not be packed. Those wholly older than the history are dropped; the oldest may still hold
        a few that ``since`` no longer returns."""

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
            self._keep(stamped)
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

    def _keep(self, stamped: list[Record]) -> None:
        """Under the lock: pack the new records onto the tail, seal every full ``CHUNK`` of it,
        and drop the chunks that hold nothing the history still reaches."""
        tail = self._tail
        for record in stamped:
            tail.append(record.packed())
            if len(tail) == CHUNK:
                self._chunks.append(_sealed(tail))
                tail = self._tail = []
        while self._chunks and (len(self._chunks) - 1) * CHUNK + len(tail) >= self._history:
            self._chunks.popleft()

    def _since(self, seq: int, limit: int | None = None) -> list[Record]:
        """Under the lock. Only the chunks that hold the records asked for are unpacked (callers
        mostly want the last few of thousands, which are in the tail, or a page of records)."""
        start = max(seq, self._seq - self._history, 0)
        end = self._seq if limit is None else min(self._seq, start + max(0, limit))
        if start >= end:
            return []
        tail_start = self._seq - len(self._tail)
        chunks_start = tail_start - len(self._chunks) * CHUNK
        chosen: list[bytes | Record] = []
        for index in range((start - chunks_start) // CHUNK, len(self._chunks)):
            first = chunks_start + index * CHUNK
            if first >= end:
                break
            chosen.extend(_unsealed(self._chunks[index])[max(0, start - first):end - first])
        chosen.extend(self._tail[max(0, start - tail_start):max(0, end - tail_start)])
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


def _sealed(packed: list[bytes | Record]) -> bytes | list[bytes | Record]:
    """A chunk: the packed records in one compressed ``marshal``, or the list as it is when one
    of them is a ``Record`` that ``Record.packed`` could not pack."""
    try:
        return zlib.compress(marshal.dumps(packed), 1)
    except ValueError:
        return packed


def _unsealed(chunk: bytes | list[bytes | Record]) -> list[bytes | Record]:
    return marshal.loads(zlib.decompress(chunk)) if isinstance(chunk, bytes) else chunk
