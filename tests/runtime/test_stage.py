"""A lesson's ``direct`` step pins the winner of the next controller election
(``backend.runtime.stage.StageDirections``). Pure: the brokers are a set of running ids."""

from __future__ import annotations

from backend.runtime.stage import StageDirections


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
    assert stage.hold_back(0, lambda: False) is False  # the pinned broker competes at once
    running.discard(0)  # it stopped: the others may go
    assert stage.hold_back(2, lambda: False) is True
    assert stage.election_winner == 0  # spent only by its own win or a timed-out hold-back
