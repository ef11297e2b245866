"""A live connection's clocks (``backend/zk/keepalive.py``): ZooKeeper's Java client's arithmetic,
without a server. ``test_session_loop.py`` checks them on a real connection."""

from __future__ import annotations

import pytest

from backend.zk.keepalive import late_enough_to_drop, next_turn, ping_delay, ping_due, sent_too_late, timed_out

FOUR_S = 4.0 * 2 / 3  # the lab's 4 s session: a read time-out of 2.67 s
KAFKAS = 18.0 * 2 / 3  # Kafka's own 18 s: half the read time-out is 6 s


def test_a_ping_is_due_by_the_java_clients_arithmetic():
    """``timeToNextPing``: half the read time-out after the last send, one second sooner at a turn
    after a second's quiet; at the lab's 4 s timeout any turn after a second pings."""
    assert ping_delay(0.0, FOUR_S) == pytest.approx(4 / 3)
    assert ping_delay(0.99, FOUR_S) == pytest.approx(4 / 3 - 0.99)  # not yet: 0.34 s to go
    assert ping_delay(1.01, FOUR_S) < 0  # a turn after a second's quiet pings
    assert ping_delay(0.5, KAFKAS) == pytest.approx(5.5)
    assert ping_delay(2.0, KAFKAS) == pytest.approx(3.0)  # woken after a second: due at 5 s, not 6
    assert ping_delay(5.0, KAFKAS) <= 0
    assert ping_due(now=11.0, last_send=0.5, read_timeout=60.0)  # MAX_SEND_PING_INTERVAL
    assert not ping_due(now=100.9, last_send=100.0, read_timeout=FOUR_S)
    assert ping_due(now=101.3, last_send=100.0, read_timeout=FOUR_S, early=0.05)  # 1.33 s less the margin


def test_the_connection_times_out_on_silence_not_on_an_unanswered_ping():
    assert not timed_out(now=102.6, last_heard=100.0, read_timeout=FOUR_S)
    assert timed_out(now=102.7, last_heard=100.0, read_timeout=FOUR_S)


def test_the_next_turn_is_the_sooner_of_the_ping_and_the_time_out():
    """Only the ping's moment may go early, so the caller is told which it is."""
    when, is_ping = next_turn(now=100.0, last_heard=100.0, last_send=100.0, read_timeout=FOUR_S)
    assert when == pytest.approx(100.0 + 4 / 3) and is_ping
    # Heard nothing for 2 s, just pinged: the time-out (in 0.67 s) comes before the next ping.
    when, is_ping = next_turn(now=102.0, last_heard=100.0, last_send=102.0, read_timeout=FOUR_S)
    assert when == pytest.approx(100.0 + FOUR_S) and not is_ping


def test_a_drop_is_the_labs_own_when_an_on_time_turn_would_not_have_found_the_silence():
    """The record of a broker's dropped connection names the lab's server as the cause only when
    its lateness alone made the silence: an on-time turn would have pinged in time."""
    # The ping was due at 101.33; the loop ran at 102.8, 1.47 s late: 2.8 s of silence, the lab's.
    assert late_enough_to_drop(now=102.8, late=1.47, last_heard=100.0, read_timeout=FOUR_S)
    # The time-out's own turn, on time or a little late: ZooKeeper (or the network) went quiet.
    assert not late_enough_to_drop(now=102.7, late=0.0, last_heard=100.0, read_timeout=FOUR_S)
    assert not late_enough_to_drop(now=102.75, late=0.05, last_heard=100.0, read_timeout=FOUR_S)
    # Heard nothing for 2 s before the turn that should have run at 102.0 came 0.8 s late.
    assert late_enough_to_drop(now=102.8, late=0.8, last_heard=100.0, read_timeout=FOUR_S)


def test_a_quiet_as_long_as_the_read_time_out_is_the_labs_own():
    """ZooKeeper hangs up on a session it expired: when the client had sent nothing for the read
    time-out (its ping was due at half of it), the silence was the lab's."""
    assert sent_too_late(quiet=4.5, read_timeout=FOUR_S) == pytest.approx(4.5 - 4 / 3)
    assert sent_too_late(quiet=1.2, read_timeout=FOUR_S) == 0.0  # on time: ZooKeeper went away
    assert sent_too_late(quiet=2.6, read_timeout=FOUR_S) == 0.0
