"""The states of Kafka's two controller state machines and their valid transitions (§10.1, §12.1).

Kafka declares each state with the set of states it may be entered from
(``validPreviousStates``), and a state machine refuses any other edge: the change is logged
to the state-change log and the state stays as it was. We keep exactly that shape. An unknown
partition or replica is in the ``NonExistent…`` state, as in Kafka.
"""

from __future__ import annotations

from enum import Enum


class PartitionState(Enum):
    """``PartitionStateMachine``'s four states; the values are Kafka's byte codes."""

    NewPartition = 0
    OnlinePartition = 1
    OfflinePartition = 2
    NonExistentPartition = 3

    @property
    def valid_previous_states(self) -> frozenset[PartitionState]:
        return _PARTITION_PREVIOUS[self]


class ReplicaState(Enum):
    """``ReplicaStateMachine``'s seven states; the values are Kafka's byte codes."""

    NewReplica = 1
    OnlineReplica = 2
    OfflineReplica = 3
    ReplicaDeletionStarted = 4
    ReplicaDeletionSuccessful = 5
    ReplicaDeletionIneligible = 6
    NonExistentReplica = 7

    @property
    def valid_previous_states(self) -> frozenset[ReplicaState]:
        return _REPLICA_PREVIOUS[self]


_P = PartitionState
_PARTITION_PREVIOUS = {
    _P.NewPartition: frozenset({_P.NonExistentPartition}),
    _P.OnlinePartition: frozenset({_P.NewPartition, _P.OnlinePartition, _P.OfflinePartition}),
    _P.OfflinePartition: frozenset({_P.NewPartition, _P.OnlinePartition, _P.OfflinePartition}),
    _P.NonExistentPartition: frozenset({_P.OfflinePartition}),
}

_R = ReplicaState
_REPLICA_PREVIOUS = {
    _R.NewReplica: frozenset({_R.NonExistentReplica}),
    _R.OnlineReplica: frozenset(
        {_R.NewReplica, _R.OnlineReplica, _R.OfflineReplica, _R.ReplicaDeletionIneligible}
    ),
    _R.OfflineReplica: frozenset(
        {_R.NewReplica, _R.OnlineReplica, _R.OfflineReplica, _R.ReplicaDeletionIneligible}
    ),
    _R.ReplicaDeletionStarted: frozenset({_R.OfflineReplica}),
    _R.ReplicaDeletionSuccessful: frozenset({_R.ReplicaDeletionStarted}),
    # Kafka 2.3 (KAFKA-8237) added OfflineReplica here; 1.1-2.2 allowed only DeletionStarted.
    _R.ReplicaDeletionIneligible: frozenset({_R.OfflineReplica, _R.ReplicaDeletionStarted}),
    _R.NonExistentReplica: frozenset({_R.ReplicaDeletionSuccessful}),
}


def is_valid_transition(
    from_state: PartitionState | ReplicaState, to_state: PartitionState | ReplicaState
) -> bool:
    """True when ``to_state`` may be entered from ``from_state``.

    Answers for both machines; a partition state and a replica state never form a valid
    pair. Never raises for a state of either machine.
    """
    if type(from_state) is not type(to_state):
        return False
    return from_state in to_state.valid_previous_states


def state_by_name(name: str) -> PartitionState | ReplicaState:
    """The state of either machine called ``name`` (records carry states by name)."""
    for enum in (PartitionState, ReplicaState):
        if name in enum.__members__:
            return enum[name]
    raise ValueError(f"no partition or replica state is called {name!r}")
