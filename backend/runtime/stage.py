"""How lessons and faults reach into a controller's work: stage directions and pause points.

Kafka has neither. The lab needs both to make a race teachable, and the controller meets them
at exactly two places, through these two small interfaces — never through its broker or the
cluster:

* :class:`StageDirections` — a lesson's ``direct`` step pins the winner of the next controller
  election (cluster-wide): the other brokers hold back until it has won, so the lesson plays the
  same way every time. The controller asks :meth:`StageDirections.hold_back` before it competes.
* :class:`PausePoint` — a ``pause_broker`` fault with ``during: <event>`` arms a pause for the
  middle of that controller event, right after its first ZooKeeper write (how a long GC pause
  makes a zombie). The controller passes the point after each batch of writes
  (:meth:`PausePoint.reached`); the broker owns the freezing.
"""

from __future__ import annotations

from typing import Callable

from backend.runtime.polling import poll_until

HOLD_BACK_S = 5.0
"""How long the other brokers wait for the pinned winner before the race is open again."""


class StageDirections:
    def __init__(self, is_running: Callable[[int], bool]) -> None:
        """``is_running(broker_id)``: whether that broker of the cluster is running now."""
        self._is_running = is_running
        self.election_winner: int | None = None
        """The broker that wins the next controller election (``None``: an open race)."""

    def pin_winner(self, broker_id: int) -> None:
        self.election_winner = broker_id

    def election_decided(self, winner: int) -> None:
        """``winner`` was elected: a direction for it is spent. One for another broker stays: it
        was given while this election was under way (a lesson's next ``direct`` step can come
        before the winner of the previous one has finished its ZooKeeper transaction), so it is
        for the next election."""
        if self.election_winner == winner:
            self.election_winner = None

    def hold_back(self, broker_id: int, controller_exists: Callable[[], bool]) -> bool:
        """Before ``broker_id`` competes for ``/controller``: wait while another broker is
        pinned to win and has not won yet (for :data:`HOLD_BACK_S` at most, or until it stops
        running). True when this broker held back."""
        winner = self.election_winner
        if winner is None or winner == broker_id:
            return False
        try:
            poll_until(lambda: not self._is_running(winner) or controller_exists(), HOLD_BACK_S,
                       f"broker {winner} to win")
        except TimeoutError:  # the named broker did not win in time: the race is open again
            if self.election_winner == winner:
                self.election_winner = None
        return True


class PausePoint:
    """One broker's pause armed for the middle of a controller event."""

    def __init__(self, freeze: Callable[[str], None]) -> None:
        """``freeze(event_name)`` stops the broker where it stands and returns when it wakes."""
        self._freeze = freeze
        self.during: str | None = None
        """The event whose processing the pause is armed for (``None``: no pause armed)."""

    def arm(self, during: str) -> None:
        self.during = during

    def disarm(self) -> None:
        self.during = None

    def armed_for(self, event_name: str | None) -> bool:
        return bool(self.during) and event_name is not None and event_name == self.during

    def reached(self, event_name: str | None) -> None:
        """The controller thread wrote to ZooKeeper while processing ``event_name``: an armed
        pause strikes now (and this returns only when the broker wakes up)."""
        if self.armed_for(event_name):
            self.during = None
            self._freeze(event_name)
