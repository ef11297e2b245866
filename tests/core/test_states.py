"""Every cell of both transition tables, restating Kafka's PartitionStateMachineTest and
ReplicaStateMachineTest (the tables are written out here, not derived from the code)."""

import pytest

from backend.core.controller.states import PartitionState as P, ReplicaState as R, is_valid_transition, state_by_name

PARTITION_TABLE = {  # (from, to): valid?  — Kafka 2.8, §10.1
    (P.NonExistentPartition, P.NewPartition): True,   # testNonexistentPartitionToNewPartitionTransition
    (P.NonExistentPartition, P.OnlinePartition): False,  # testInvalidNonexistentPartitionToOnlinePartitionTransition
    (P.NonExistentPartition, P.OfflinePartition): False,  # testInvalidNonexistentPartitionToOfflinePartitionTransition
    (P.NonExistentPartition, P.NonExistentPartition): False,
    (P.NewPartition, P.NewPartition): False,
    (P.NewPartition, P.OnlinePartition): True,  # testNewPartitionToOnlinePartitionTransition
    (P.NewPartition, P.OfflinePartition): True,  # testNewPartitionToOfflinePartitionTransition
    (P.NewPartition, P.NonExistentPartition): False,  # testInvalidNewPartitionToNonexistentPartitionTransition
    (P.OnlinePartition, P.NewPartition): False,  # testInvalidOnlinePartitionToNewPartitionTransition
    (P.OnlinePartition, P.OnlinePartition): True,  # testOnlinePartitionToOnlineTransition
    (P.OnlinePartition, P.OfflinePartition): True,  # testOnlinePartitionToOfflineTransition
    (P.OnlinePartition, P.NonExistentPartition): False,  # testInvalidOnlinePartitionToNonexistentPartitionTransition
    (P.OfflinePartition, P.NewPartition): False,  # testInvalidOfflinePartitionToNewPartitionTransition
    (P.OfflinePartition, P.OnlinePartition): True,  # testOfflinePartitionToOnlinePartitionTransition
    (P.OfflinePartition, P.OfflinePartition): True,
    (P.OfflinePartition, P.NonExistentPartition): True,  # testOfflinePartitionToNonexistentPartitionTransition
}

_VALID_REPLICA = {  # to: valid previous states — Kafka 2.3+, §12.1
    R.NewReplica: {R.NonExistentReplica},
    R.OnlineReplica: {R.NewReplica, R.OnlineReplica, R.OfflineReplica, R.ReplicaDeletionIneligible},
    R.OfflineReplica: {R.NewReplica, R.OnlineReplica, R.OfflineReplica, R.ReplicaDeletionIneligible},
    R.ReplicaDeletionStarted: {R.OfflineReplica},
    R.ReplicaDeletionSuccessful: {R.ReplicaDeletionStarted},
    R.ReplicaDeletionIneligible: {R.OfflineReplica, R.ReplicaDeletionStarted},
    R.NonExistentReplica: {R.ReplicaDeletionSuccessful},
}
REPLICA_TABLE = {(f, t): f in _VALID_REPLICA[t] for f in R for t in R}


def test_tables_cover_every_cell():
    assert len(PARTITION_TABLE) == 16 and len(REPLICA_TABLE) == 49
    assert sum(REPLICA_TABLE.values()) == 14


@pytest.mark.parametrize("edge,valid", sorted(PARTITION_TABLE.items(), key=lambda kv: (kv[0][0].value, kv[0][1].value)),
                         ids=lambda v: f"{v[0].name}->{v[1].name}" if isinstance(v, tuple) else str(v))
def test_partition_transition(edge, valid):
    assert is_valid_transition(*edge) is valid


@pytest.mark.parametrize("edge,valid", sorted(REPLICA_TABLE.items(), key=lambda kv: (kv[0][0].value, kv[0][1].value)),
                         ids=lambda v: f"{v[0].name}->{v[1].name}" if isinstance(v, tuple) else str(v))
def test_replica_transition(edge, valid):
    assert is_valid_transition(*edge) is valid


def test_kafka_byte_codes():
    assert [s.value for s in P] == [0, 1, 2, 3]
    assert [s.value for s in R] == [1, 2, 3, 4, 5, 6, 7]


def test_states_of_different_machines_never_form_a_transition():
    assert not is_valid_transition(P.NewPartition, R.NewReplica)
    assert not is_valid_transition(R.OfflineReplica, P.OfflinePartition)


def test_state_by_name():
    assert state_by_name("OnlineReplica") is R.OnlineReplica
    assert state_by_name("OfflinePartition") is P.OfflinePartition
    with pytest.raises(ValueError, match="Onlinepartition"):
        state_by_name("Onlinepartition")
