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

# What :meth:`StageDirections.hold_back` did: competes at once, held back, or gave up waiting.
COMPETES, HELD, GAVE_UP = "competes", "held", "gave_up"


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

    def hold_back(self, broker_id: int, controller_exists: Callable[[], bool]) -> tuple[str, int | None]:
        """Before ``broker_id`` competes for ``/controller``: wait while another running broker
        is pinned to win and no controller exists (for :data:`HOLD_BACK_S` at most). Returns
        the outcome — :data:`COMPETES` (no direction for another running broker), :data:`HELD`
        (it waited until a controller existed, or the direction changed to no one else, or its
        broker stopped) or :data:`GAVE_UP` (the time ran out; the race is open again) — and the
        broker it last waited for.

        The direction is read again at every look, not once: a lesson can give the next one while
        this broker still waits for the previous winner (control_plane_queue: broker 1 wins,
        ``direct winner 0``, broker 1 stops — all inside one 20 ms look of broker 2's, which then
        woke to "broker 1 stopped" and took the race from broker 0). After :data:`HELD` the
        controller reads ``/controller`` and, finding none, asks again."""
        waited_for = self.pinned_other(broker_id)
        if waited_for is None:
            return COMPETES, None

        def settled() -> bool:
            nonlocal waited_for
            pinned = self.pinned_other(broker_id)
            if pinned is None:
                return True
            waited_for = pinned
            return controller_exists()
        try:
            poll_until(settled, HOLD_BACK_S, "the pinned broker to win")
        except TimeoutError:  # the named broker did not win in time: the race is open again
            if self.election_winner == waited_for:
                self.election_winner = None
            return GAVE_UP, waited_for
        return HELD, waited_for

    def pinned_other(self, broker_id: int) -> int | None:
        """The broker pinned to win, if it is another than ``broker_id`` and it is running."""
        winner = self.election_winner
        return winner if winner is not None and winner != broker_id and self._is_running(winner) else None


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
