"""Why a ZooKeeper connection dropped: the lab's own lateness, ZooKeeper's silence, or neither.

In a class one thread carries every broker's session (``session_loop.py``); when the worker
falls behind, brokers nobody touched drop their connections and lose their sessions, and a
student should be told it was the server's load, not a fault of theirs (issue 14, forty-first
round; ``backend/runtime/broker/connection_notes.py`` words it). :class:`DropCause` keeps what a
connection needs to say so, as arithmetic on the moments it is given — no clock, no socket:
``LoopConnection`` tells it of each connection, send, time-out and hang-up.
"""

from __future__ import annotations

from typing import Callable


def late_enough_to_drop(now: float, late: float, last_heard: float, read_timeout: float) -> bool:
    """Did the loop's own lateness time the connection out? ``late``: how long past its moment
    the turn that found the silence ran. Had that turn run on time, it would have pinged (or
    read) before the read time-out ran out, and a live ZooKeeper answers a ping in milliseconds:
    the silence is then the lab's — its server too busy to send this session's heart-beats on
    time — not ZooKeeper's nor the network's. A turn that was due at the time-out itself (the
    silence was there before any lateness) is not."""
    return late > 0 and (now - late) - last_heard < read_timeout


def sent_too_late(quiet: float, read_timeout: float) -> float:
    """How late a connection's ping was that came (or is still missing) after ``quiet`` seconds
    of sending nothing: 0 unless the quiet lasted the read time-out — an on-time connection
    pings at half of it, and a quiet that long is what lets ZooKeeper, hearing nothing for the
    session timeout, expire the session and hang up."""
    return quiet - read_timeout / 2.0 if quiet >= read_timeout else 0.0


class DropCause:
    """Why one connection last dropped, kept until the next connection is up, so that an expiry
    learned on the reconnection is told the same cause.

    ``late_s``: the loop's lateness, when it explains the drop — the lab's server was too busy to
    send the session's pings on time (or to read ZooKeeper's answer). ``silent``: the connection
    timed out with the loop on time — ZooKeeper did not answer heart-beats that went out when due
    (the server away, cut off, or itself running late). Neither: ZooKeeper closed the connection
    while the client was keeping its clocks (a server stopped)."""

    def __init__(self) -> None:
        self.late_s = 0.0
        self.silent = False
        self._late_send = (0.0, 0.0)
        """(how late, when) of the last send that came after a quiet as long as the read time-out."""

    def connected(self) -> None:
        """A connection is up: what the last one said is done with."""
        self.late_s, self.silent, self._late_send = 0.0, False, (0.0, 0.0)

    def sending(self, now: float, last_send: float, read_timeout: float) -> None:
        """The connection sends at ``now``, having last sent at ``last_send``."""
        late = sent_too_late(now - last_send, read_timeout)
        if late:
            self._late_send = (late, now)

    def timed_out(self, now: float, late: float, last_heard: float, last_send: float, read_timeout: float,
                  answer_waiting: Callable[[], bool]) -> None:
        """The connection's own time-out, found by a turn ``late`` seconds past its moment.
        ``answer_waiting()`` (asked only when the lateness does not explain it): an answer reached
        the socket unread — an on-time loop reads a socket as soon as it is ready, so the silence
        is the lab's all the same, counted from the last send."""
        if not late_enough_to_drop(now, late, last_heard, read_timeout):
            late = now - last_send if answer_waiting() else 0.0
        self.late_s, self.silent = late, not late

    def hung_up(self, now: float, last_send: float, read_timeout: float) -> None:
        """ZooKeeper ended the connection (the end of the stream, or a broken pipe found by the
        next send), unless the connection's own time-out has said why already: perhaps on a
        session it expired for the client's silence — still going on, or ended by a send less
        than a read time-out ago (the late loop read a watch's event and pinged at once)."""
        if self.late_s or self.silent:
            return
        late, at = self._late_send
        recent = late if now - at < read_timeout else 0.0
        self.late_s = max(recent, sent_too_late(now - last_send, read_timeout))
