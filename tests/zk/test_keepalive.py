"""A live connection's clocks (``backend/zk/keepalive.py``): ZooKeeper's Java client's arithmetic,
without a server. ``test_session_loop.py`` checks them on a real connection."""

from __future__ import annotations

import pytest

from backend.zk.keepalive import next_turn, ping_delay, ping_due, timed_out

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

