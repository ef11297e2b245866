"""A replica's log: what the ISR protects (Kafka's ``Log`` and ``LeaderEpochFileCache``).

Each entry is one message: its offset, the leader epoch it was written in, a payload id, and
the ``acks`` it was produced with (so a loss can be reported in the producer's terms). The log
end offset (LEO) is the next offset to write; the high watermark (HW) is how far every ISR
member has it — only messages below the HW are *committed* and visible to consumers.

The leader-epoch cache maps each leader epoch to the first offset written in it. After a leader
change a follower asks the new leader where its last epoch ended (KIP-101) and truncates there,
instead of at its HW as before Kafka 0.11 — which could lose committed messages or make logs
diverge. Pure and deterministic; the runtime keeps one per replica.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


@dataclass(frozen=True)
class LogEntry:
    offset: int
    leader_epoch: int
    payload: str
    acks: str = "1"


class Log:
    def __init__(self) -> None:
        self.entries: list[LogEntry] = []
        self.high_watermark = 0
        self._epochs: list[tuple[int, int]] = []  # (leader epoch, start offset), ascending

    # -- offsets -----------------------------------------------------------------------------
    @property
    def log_end_offset(self) -> int:
        return len(self.entries)

    @property
    def latest_epoch(self) -> int:
        return self._epochs[-1][0] if self._epochs else UNDEFINED_EPOCH

    @property
    def epoch_cache(self) -> list[tuple[int, int]]:
        return list(self._epochs)

    # -- writing -----------------------------------------------------------------------------
    def append_as_leader(self, payloads: list[str], leader_epoch: int, acks: str) -> tuple[int, int]:
        """Append messages at the end; returns (first offset, last offset)."""
        first = self.log_end_offset
        self.append([LogEntry(first + i, leader_epoch, p, acks) for i, p in enumerate(payloads)])
        return first, self.log_end_offset - 1

    def append(self, entries: list[LogEntry]) -> None:
        """Append entries copied from a leader (or just written as leader), keeping the cache."""
        for entry in entries:
            if entry.offset != self.log_end_offset:
                raise ValueError(f"offset {entry.offset} does not follow log end offset {self.log_end_offset}")
            if entry.leader_epoch > self.latest_epoch:
                self._epochs.append((entry.leader_epoch, entry.offset))
            self.entries.append(entry)

    def epoch_start_offset(self, leader_epoch: int) -> int:
        """Where ``leader_epoch`` starts in this log (0 if it is not in the cache)."""
        return next((start for epoch, start in self._epochs if epoch == leader_epoch), 0)

    def assign_epoch_start(self, leader_epoch: int) -> None:
        """A new leader records where its epoch starts, even before it writes (Kafka does this on
        becoming leader, so followers truncating to it find the boundary)."""
        if leader_epoch > self.latest_epoch:
            self._epochs.append((leader_epoch, self.log_end_offset))

    def truncate_to(self, offset: int) -> list[LogEntry]:
        """Drop every entry at or after ``offset``; returns what was removed."""
        offset = max(0, offset)
        removed, self.entries = self.entries[offset:], self.entries[:offset]
        self._epochs = [(e, start) for e, start in self._epochs if start < offset]
        self.high_watermark = min(self.high_watermark, offset)
        return removed

    def update_high_watermark(self, offset: int) -> bool:
        """Move the HW forward (never back, never past the LEO); True if it moved."""
        offset = min(offset, self.log_end_offset)
        if offset > self.high_watermark:
            self.high_watermark = offset
            return True
        return False

    # -- reading -----------------------------------------------------------------------------
    def read(self, start: int, end: int | None = None) -> list[LogEntry]:
        end = self.log_end_offset if end is None else min(end, self.log_end_offset)
        return self.entries[max(0, start):end]

    def contains(self, offset: int, payload: str) -> bool:
        return offset < self.log_end_offset and self.entries[offset].payload == payload

    def end_offset_for_epoch(self, requested_epoch: int) -> tuple[int, int]:
        """Kafka's ``LeaderEpochFileCache.endOffsetFor``: the largest epoch <= the requested one
        and the offset where it ended — the start of the next epoch, or the LEO if it is the
        latest. A follower truncates to the smaller of that and its own LEO."""
        if not self._epochs or requested_epoch < self._epochs[0][0]:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if requested_epoch >= self.latest_epoch:
            return self.latest_epoch, self.log_end_offset
        index = bisect_right([e for e, _ in self._epochs], requested_epoch)
        return self._epochs[index - 1][0], self._epochs[index][1]


def truncation_offset(follower: Log, leader_epoch: int, leader_end_offset: int) -> int:
    """Where a follower truncates, given the leader's answer to OffsetsForLeaderEpoch for the
    follower's latest epoch (KIP-101, refined by KIP-279).

    * the leader knows no epoch that old: fall back to the follower's high watermark;
    * the leader's answer is for an *older* epoch than the follower's (the follower wrote in an
      epoch the leader never saw): truncate to where that older epoch ends in both logs;
    * otherwise: to the leader's end offset for that epoch, or the follower's LEO if smaller.
    """
    if leader_epoch == UNDEFINED_EPOCH:
        return follower.high_watermark
    if leader_epoch < follower.latest_epoch:
        _, own_end = follower.end_offset_for_epoch(leader_epoch)
        return min(leader_end_offset, own_end, follower.log_end_offset)
    return min(leader_end_offset, follower.log_end_offset)
