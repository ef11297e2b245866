"""The leader's bookkeeping of its followers (Kafka's ``Partition`` and ``Replica``): who is
caught up, what the high watermark is, who should leave or join the ISR.

The rules (§16):

* a follower is *caught up* when it fetched at (or past) the leader's log end offset — or had
  reached the LEO the leader had at its previous fetch — and the leader remembers when;
* a follower not caught up for ``replica.lag.time.max.ms`` leaves the ISR;
* a follower outside the ISR joins it when a *fetch* shows its LEO at the leader's high
  watermark (and past the start of the leader's epoch) — Kafka checks in
  ``updateFollowerFetchState`` → ``maybeExpandIsr``, so a follower that stopped fetching never
  rejoins on the strength of an old position;
* the high watermark is the smallest LEO in the ISR: a message is committed once every ISR
  member has it.

Time is passed in (milliseconds), never read: this module has no clock.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class FollowerState:
    log_end_offset: int = -1  # unknown until its first fetch
    last_caught_up_ms: float = 0.0
    last_fetch_leader_leo: int = -1
    last_fetch_ms: float = 0.0
    fetched_since_isr_check: bool = False


_NOT_FETCHED = FollowerState()
"""What a follower that never fetched from this leader counts as: only ever read (a replica round
reads it for every ISR member, twice a second per broker, and made a new one each time)."""


@dataclass
class LeaderState:
    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    followers: dict[int, FollowerState] = field(default_factory=dict)
    pending_isr: tuple[int, ...] | None = None
    """The ISR an AlterIsr in flight proposes (Kafka's ``PendingShrinkIsr``/``PendingExpandIsr``):
    no other ISR change is tried meanwhile — nor, after a refusal, until the next LeaderAndIsr."""

    @property
    def maximal_isr(self) -> tuple[int, ...]:
        """Kafka's ``maximalIsr``: while a change is pending, the high watermark counts the larger
        of the two ISRs (a shrink is not assumed to succeed; an expansion is)."""
        if self.pending_isr is None:
            return self.isr
        return self.isr + tuple(r for r in self.pending_isr if r not in self.isr)

    @classmethod
    def became_leader(cls, leader: int, leader_epoch: int, isr, replicas, now_ms: float) -> LeaderState:
        """Kafka's ``makeLeader``: every ISR follower starts caught up *now*, so it has a full
        ``replica.lag.time.max.ms`` to fetch from the new leader before it can be dropped."""
        followers = {r: FollowerState(last_caught_up_ms=now_ms if r in isr else 0.0) for r in replicas if r != leader}
        return cls(leader, leader_epoch, tuple(isr), tuple(replicas), followers)

    def on_fetch(self, follower: int, fetch_offset: int, leader_leo: int, now_ms: float) -> None:
        """Kafka's ``updateFollowerFetchState``."""
        state = self.followers.get(follower)
        if state is None:
            state = self.followers[follower] = FollowerState()
        if fetch_offset >= leader_leo:
            state.last_caught_up_ms = max(state.last_caught_up_ms, now_ms)
        elif fetch_offset >= state.last_fetch_leader_leo >= 0:
            state.last_caught_up_ms = max(state.last_caught_up_ms, state.last_fetch_ms)
        state.log_end_offset = fetch_offset
        state.last_fetch_leader_leo = leader_leo
        state.last_fetch_ms = now_ms
        state.fetched_since_isr_check = True

    def high_watermark(self, leader_leo: int) -> int:
        """The smallest LEO in the (maximal) ISR (a follower whose LEO is still unknown counts as 0)."""
        return min([leader_leo, *(max(0, self.followers.get(r, _NOT_FETCHED).log_end_offset)
                                  for r in self.maximal_isr if r != self.leader)])

    def in_sync_until(self, lag_max_ms: float) -> float:
        """When (ms) the first ISR follower would be :meth:`out_of_sync` if it caught up no more:
        before then no check can drop anyone (``inf``: no follower in the ISR)."""
        return min((self.followers.get(r, _NOT_FETCHED).last_caught_up_ms + lag_max_ms
                    for r in self.isr if r != self.leader), default=float("inf"))

    def out_of_sync(self, now_ms: float, lag_max_ms: float) -> list[int]:
        return [r for r in self.isr if r != self.leader
                and now_ms - self.followers.get(r, _NOT_FETCHED).last_caught_up_ms > lag_max_ms]

    def ready_to_join(self, leader_high_watermark: int, epoch_start_offset: int = 0) -> list[int]:
        """Followers outside the ISR whose fetch since the last check reached the high watermark
        and the start of the leader's epoch (Kafka's ``isFollowerAtHighwatermark``). Each fetch
        is looked at once: without a new fetch there is no new evidence."""
        joiners = []
        for r, s in sorted(self.followers.items()):
            fetched, s.fetched_since_isr_check = s.fetched_since_isr_check, False
            if (fetched and r not in self.isr and r in self.replicas and s.log_end_offset >= 0
                    and s.log_end_offset >= leader_high_watermark >= 0 and s.log_end_offset >= epoch_start_offset):
                joiners.append(r)
        return joiners
