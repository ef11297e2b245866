"""A broker's network cable to ZooKeeper, which a fault can pause or cut: a state of its connection.

A *paused* broker is a process that stopped (a long GC pause, SIGSTOP): it sends no heart-beats,
but its TCP connection stays open, so ZooKeeper only expires its session after the session
timeout. A *crashed* broker's cable is cut: the operating system closes its connection, no
``closeSession`` is sent, and ZooKeeper expires the session after the timeout too. Every
simulated broker lives in one Python process, so neither can be done to a process; both are done
to the broker's ZooKeeper connection (``session_loop.LoopConnection``), on the one thread that
serves every session of the process:

* **paused** — the traffic is blackholed. What the client sends is dropped, what ZooKeeper sends
  is read and dropped, so nothing is answered: a ping goes unanswered, the client gives up on the
  connection and dials again, and a connection dialled meanwhile gets no answer to its handshake.
  A connection that ZooKeeper closes (the session expired) is seen closed.
* **resumed** — the connections of the pause are dead: each is closed (before the broker wakes),
  and the client dials again, hearing whether its session survived (the moment a zombie learns
  it is one).
* **cut** — every connection closed; every new one refused, until the session is stopped.

Until the nineteenth round of issue 14 this was a TCP proxy on loopback per broker and server,
with the same three rules: every byte of every broker's traffic was read and written twice, six
system calls a round trip instead of two (docs/performance.md). ZooKeeper sees the same thing:
the bytes it would have been sent, the closes it would have seen, when it would have seen them.
"""

from __future__ import annotations

import threading
from typing import Protocol

WHOLE, PAUSED, CUT = "whole", "paused", "cut"


class Connection(Protocol):
    """What a cable acts on: a session's connection on the loop (``LoopConnection``)."""

    def on_cable_changed(self, done: threading.Event) -> None:
        """From any thread: the cable was resumed or cut; close what it held (``done`` set after)."""


class Cable:
    """One broker's cable to the whole ensemble (a paused broker hears from no server)."""

    def __init__(self) -> None:
        self.state = WHOLE
        self._connection: Connection | None = None

    def attach(self, connection: Connection) -> None:
        """The session this cable carries (``session_loop.use_session_loop``)."""
        self._connection = connection

    def detach(self, connection: Connection) -> None:
        """``connection`` has stopped: the cable no longer holds it (``teardown.unlink``)."""
        if self._connection is connection:
            self._connection = None

    @property
    def paused(self) -> bool:
        return self.state == PAUSED

    @property
    def cut(self) -> bool:
        return self.state == CUT

    def pause(self) -> None:
        """Blackhole the traffic from the next byte on (the loop reads the state at each)."""
        if self.state == WHOLE:
            self.state = PAUSED

    def resume(self) -> None:
        """Reconnect the cable: the connections of the pause are dead, so they are closed — and
        closed when this returns, so that the client is told (``SUSPENDED``) while its owner is
        still frozen and notices nothing. A Kafka broker woken from a short pause still has its
        TCP connection and says nothing of ZooKeeper; told after its owner woke, the lab's
        broker said it "lost its connection" and "reached ZooKeeper again" right after it "woke
        up" (a lesson's 2 s pause showed it now and then)."""
        if self.state == PAUSED:
            self.state = WHOLE
            self._hang_up()

    def close(self) -> None:
        """Cut the cable: the connection is closed when this returns, and no new one is made."""
        if self.state == CUT:
            return
        self.state = CUT
        self._hang_up()

    def _hang_up(self) -> None:
        """Have the connection closed under its client, and wait until it is (bounded: never
        called on the loop's own thread, but a stuck loop must not hold a fault for ever)."""
        if self._connection is not None:
            done = threading.Event()
            self._connection.on_cable_changed(done)
            done.wait(5)
