"""A lesson's ``direct`` step pins the winner of the next controller election
(``backend.runtime.stage.StageDirections``). Pure: the brokers are a set of running ids."""

from __future__ import annotations

from backend.runtime import stage as stage_module
from backend.runtime.stage import COMPETES, GAVE_UP, HELD, StageDirections


def test_a_direction_given_while_an_election_finishes_is_kept_for_the_next_one():
    """control_plane_queue: ``direct winner 1``, the controller stops, ``direct winner 0`` — and
    broker 1 finishes its ZooKeeper transaction only then. Its win spends its own direction, not
    the one for broker 0 (which the lesson's next election needs)."""
    stage = StageDirections(lambda broker_id: True)
    stage.pin_winner(1)
    stage.pin_winner(0)
    stage.election_decided(1)
    assert stage.election_winner == 0
    stage.election_decided(0)
    assert stage.election_winner is None


def test_others_hold_back_for_the_pinned_broker_until_it_stops_running():
    running = {0, 2}
    stage = StageDirections(lambda broker_id: broker_id in running)
    stage.pin_winner(0)
    assert stage.hold_back(0, lambda: False) == (COMPETES, None)  # the pinned broker competes at once
    running.discard(0)  # it stopped: the others may go
    assert stage.hold_back(2, lambda: False) == (COMPETES, None)
    assert stage.election_winner == 0  # spent only by its own win or a timed-out hold-back


def test_a_broker_holding_back_waits_for_a_direction_given_meanwhile():
    """The course test's failure (control_plane_queue): broker 2 holds back for broker 1; between
    two of its looks broker 1 wins, the lesson directs broker 0 to win the next election, and
    broker 1 stops. Broker 2 must go on holding back — now for broker 0 — not take the race
    because "the broker it waited for stopped"."""
    running = {0, 1, 2}
    stage = StageDirections(lambda broker_id: broker_id in running)
    stage.pin_winner(1)
    looks = []

    def controller_exists() -> bool:
        looks.append(stage.election_winner)
        if len(looks) == 1:  # while broker 2 sleeps between looks
            stage.election_decided(1)
            stage.pin_winner(0)
            running.discard(1)
            return False
        return len(looks) == 3  # broker 0 has won by broker 2's third look
    assert stage.hold_back(2, controller_exists) == (HELD, 0)
    assert looks == [1, 0, 0]


def test_the_others_give_up_on_a_pinned_broker_that_never_wins(monkeypatch):
    """The bound: a pinned broker that runs but never competes opens the race again once
    ``HOLD_BACK_S`` has passed (the controller then says so in a record)."""
    monkeypatch.setattr(stage_module, "HOLD_BACK_S", 0.2)
    stage = StageDirections(lambda broker_id: True)
    stage.pin_winner(0)
    assert stage.hold_back(2, lambda: False) == (GAVE_UP, 0)
    assert stage.election_winner is None
    assert stage.hold_back(1, lambda: False) == (COMPETES, None)  # the race is open for the next one


def test_a_direction_for_the_broker_itself_or_no_one_means_it_competes_at_once():
    stage = StageDirections(lambda broker_id: True)
    assert stage.hold_back(2, lambda: False) == (COMPETES, None)
    stage.pin_winner(2)
    assert stage.hold_back(2, lambda: False) == (COMPETES, None)
