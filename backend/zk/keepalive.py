"""The clocks of a live ZooKeeper connection, as ZooKeeper's Java client keeps them (Kafka's).

``ClientCnxn.SendThread.run`` decides at every turn of its loop whether the connection is dead
(nothing heard for the read time-out, two thirds of the session timeout) and whether a ping is
due, and how long it may sleep before deciding again. Here that decision is arithmetic on the
moments it is given, with no clock and no socket: ``session_loop.LoopConnection._step`` runs it
at every timer, queued request and answer, and does what it says (issue 14's fortieth round;
docs/fidelity.md).
"""

from __future__ import annotations

MAX_SEND_PING_INTERVAL_S = 10.0
"""``ClientCnxn``'s ``MAX_SEND_PING_INTERVAL``: a ping at least this often, however long the
session timeout."""


def ping_delay(idle_send: float, read_timeout: float) -> float:
    """``ClientCnxn``'s ``timeToNextPing``: how long until a ping is due, when the connection has
    sent nothing for ``idle_send`` seconds (a ping is due at 0 or less). Half the read time-out
    after the last send; but a turn of the loop more than a second after it pings one second
    sooner than that, "to prevent race condition missing to send the second ping" (ZooKeeper's
    comment): at the lab's 4 s session timeout (half the read time-out is 1.33 s), any turn after
    a second's quiet pings."""
    return read_timeout / 2.0 - idle_send - (1.0 if idle_send > 1.0 else 0.0)


def timed_out(now: float, last_heard: float, read_timeout: float) -> bool:
    """Nothing heard for the read time-out: the connection is dead ("Client session timed out,
    have not heard from server")."""
    return now - last_heard >= read_timeout


def ping_due(now: float, last_send: float, read_timeout: float, early: float = 0.0) -> bool:
    """Is a ping due at this turn, or within ``early`` seconds of it (the loop's liberty:
    ``session_loop.PING_EARLY_S``)?"""
    idle = now - last_send
    return ping_delay(idle, read_timeout) <= early or idle > MAX_SEND_PING_INTERVAL_S


def next_turn(now: float, last_heard: float, last_send: float, read_timeout: float) -> tuple[float, bool]:
    """When to decide again, had nothing else woken the connection: the ping's moment or the
    time-out's, whichever is sooner, and whether it is the ping's (only a ping may go early)."""
    ping_at = now + ping_delay(now - last_send, read_timeout)
    drop_at = last_heard + read_timeout
    return (ping_at, True) if ping_at < drop_at else (drop_at, False)

