"""Why a connection dropped (``backend/zk/drop_cause.py``): the rules, without a server.
``tests/runtime/test_late_server.py`` checks them on real connections and real records."""

from __future__ import annotations

import pytest

from backend.zk.drop_cause import DropCause, late_enough_to_drop, sent_too_late

FOUR_S = 4.0 * 2 / 3  # the lab's 4 s session: a read time-out of 2.67 s


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


def test_a_connection_keeps_the_cause_of_its_last_drop_until_the_next_is_up():
    drop = DropCause()
    drop.sending(now=103.0, last_send=100.0, read_timeout=FOUR_S)  # a ping 3 s after the last send
    drop.hung_up(now=103.2, last_send=103.0, read_timeout=FOUR_S)  # then ZooKeeper hangs up
    assert drop.late_s == pytest.approx(3.0 - 4 / 3) and not drop.silent
    drop.connected()
    assert (drop.late_s, drop.silent) == (0.0, False)
    # Its own time-out on time, ZooKeeper silent; a hang-up after it does not overwrite that.
    drop.timed_out(now=102.7, late=0.0, last_heard=100.0, last_send=101.4, read_timeout=FOUR_S,
                   answer_waiting=lambda: False)
    assert drop.silent and drop.late_s == 0.0
    drop.hung_up(now=110.0, last_send=101.4, read_timeout=FOUR_S)
    assert drop.silent and drop.late_s == 0.0
    # The same time-out with ZooKeeper's answer unread in the socket: the lab's, from the last send.
    drop.connected()
    drop.timed_out(now=102.7, late=0.0, last_heard=100.0, last_send=101.4, read_timeout=FOUR_S,
                   answer_waiting=lambda: True)
    assert drop.late_s == pytest.approx(1.3) and not drop.silent


def test_a_hang_up_long_after_a_late_send_is_not_the_labs():
    """A send that came late a read time-out ago or more explains nothing about this hang-up."""
    drop = DropCause()
    drop.sending(now=103.0, last_send=100.0, read_timeout=FOUR_S)
    drop.hung_up(now=106.0, last_send=105.5, read_timeout=FOUR_S)
    assert (drop.late_s, drop.silent) == (0.0, False)
