"""The leader's view of its followers: caught up, lagging, joining; the high watermark."""

from backend.core.broker.partition import LeaderState


def leader(isr=(1, 2, 3), now=0.0):
    return LeaderState.became_leader(1, 5, isr, (1, 2, 3), now)


def test_high_watermark_is_the_smallest_leo_in_the_isr():
    state = leader()
    state.on_fetch(2, 7, 10, 100)
    state.on_fetch(3, 4, 10, 100)
    assert state.high_watermark(10) == 4
    state.isr = (1, 2)
    assert state.high_watermark(10) == 7


def test_an_unknown_follower_holds_the_high_watermark_at_zero():
    assert leader().high_watermark(10) == 0


def test_a_follower_that_stops_fetching_falls_out_after_the_lag_time():
    state = leader(now=0)
    state.on_fetch(2, 10, 10, 1000)
    assert state.out_of_sync(5000, 4500) == [3]   # 3 never fetched: its grace started at 0
    assert state.out_of_sync(5400, 4500) == [3]
    assert state.out_of_sync(5600, 4500) == [2, 3]


def test_no_follower_is_out_of_sync_before_the_isr_is_in_sync_until():
    """The replica thread skips the leader side until then (``DataPlane._lag_check_due``): it must
    be the first moment :meth:`out_of_sync` can name anyone, not later."""
    state = leader(now=0)
    state.on_fetch(2, 10, 10, 1000)
    state.on_fetch(3, 10, 10, 1700)
    until = state.in_sync_until(4500)
    assert until == 5500  # follower 2, caught up at 1000; the leader itself never counts
    assert state.out_of_sync(until, 4500) == [] and state.out_of_sync(until + 1, 4500) == [2]
    state.isr = (1, 3)  # out of the ISR: nothing to drop, so not counted
    assert state.in_sync_until(4500) == 6200
    state.isr = (1,)
    assert state.in_sync_until(4500) == float("inf")


def test_a_slow_but_steady_follower_is_caught_up_when_it_reaches_the_previous_leo():
    state = leader(now=0)
    state.on_fetch(2, 5, 10, 1000)   # behind: leader was at 10
    state.on_fetch(2, 10, 15, 2000)  # reached the LEO of its previous fetch: caught up as of then
    assert state.followers[2].last_caught_up_ms == 1000
    state.on_fetch(2, 15, 15, 3000)
    assert state.followers[2].last_caught_up_ms == 3000


def test_a_follower_joins_once_it_reaches_the_high_watermark():
    state = leader(isr=(1, 2))
    state.on_fetch(2, 10, 10, 100)
    state.on_fetch(3, 6, 10, 100)
    assert state.ready_to_join(10) == []
    state.on_fetch(3, 10, 10, 200)
    assert state.ready_to_join(10) == [3]


def test_a_follower_that_stopped_fetching_does_not_rejoin_on_its_old_position():
    """A stalled follower was once at the high watermark; without a new fetch it must not be
    added back (it would flap out and in on every check, and acks=all would wait for it)."""
    state = leader(isr=(1, 2))
    state.on_fetch(3, 10, 10, 100)
    assert state.ready_to_join(10) == [3]
    state.isr = (1, 2)  # the ISR write failed or the leader dropped it again; no fetch since
    assert state.ready_to_join(10) == []
    state.on_fetch(3, 10, 10, 300)
    assert state.ready_to_join(10) == [3]


def test_a_follower_joins_only_past_the_start_of_the_leaders_epoch():
    state = leader(isr=(1, 2))
    state.on_fetch(3, 10, 12, 100)
    assert state.ready_to_join(10, epoch_start_offset=12) == []
    state.on_fetch(3, 12, 12, 200)
    assert state.ready_to_join(10, epoch_start_offset=12) == [3]


def test_while_an_alter_isr_is_pending_the_high_watermark_counts_the_larger_isr():
    """KIP-497's maximal ISR: a shrink is not assumed to succeed, an expansion is."""
    state = LeaderState.became_leader(0, 3, (0, 1), (0, 1, 2), now_ms=0)
    state.on_fetch(1, 5, 10, now_ms=1)
    state.on_fetch(2, 2, 10, now_ms=1)
    state.pending_isr = (0,)  # shrinking 1 away: until the controller says so, 1 still counts
    assert state.maximal_isr == (0, 1) and state.high_watermark(10) == 5
    state.pending_isr = (0, 1, 2)  # taking 2 in: it counts at once
    assert state.maximal_isr == (0, 1, 2) and state.high_watermark(10) == 2
    state.isr, state.pending_isr = (0, 1, 2), None
    assert state.maximal_isr == (0, 1, 2)


def test_a_replica_the_leader_did_not_know_is_counted_from_its_first_fetch():
    """A reassignment can add a replica that has no entry in the leader's state (``became_leader``
    made one for each replica it knew): its first fetch makes the entry, and later fetches update
    that same entry, so it can join the ISR."""
    state = LeaderState.became_leader(1, 5, (1, 2), (1, 2), 0)
    state.on_fetch(4, 8, 10, 100)
    first = state.followers[4]
    assert (first.log_end_offset, first.last_fetch_leader_leo) == (8, 10)
    state.on_fetch(4, 10, 10, 200)
    assert state.followers[4] is first and first.last_caught_up_ms == 200
    state.replicas = (1, 2, 4)
    assert state.ready_to_join(10) == [4]
