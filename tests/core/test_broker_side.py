"""The broker's epoch rules (§3 items 3–5): what a zombie's requests run into."""

from backend.core.model import BrokerInfo
from backend.core.broker.replica_manager import (
    BrokerState, handle_leader_and_isr, handle_stop_replica, handle_update_metadata,
)
from backend.core.requests import (
    LeaderAndIsrPartitionState, LeaderAndIsrRequest, StopReplicaPartitionState, StopReplicaRequest,
    UpdateMetadataRequest,
)

from .support import tp


def lai(controller_epoch, leader_epoch, leader=1, broker_epoch=50, replicas=(1, 2)):
    state = LeaderAndIsrPartitionState("t", 0, controller_epoch, leader, leader_epoch, (1, 2), 0, replicas)
    return LeaderAndIsrRequest(9, controller_epoch, 2, broker_epoch, (state,))


def test_leader_and_isr_applied_then_older_controller_rejected():
    state, response, record = handle_leader_and_isr(BrokerState(2, broker_epoch=50), lai(3, 0), 1)
    assert response.error == "NONE" and state.controller_epoch == 3
    assert state.partitions[tp("t-0")].leader == 1 and record.outcome == "ok"
    stale, response, record = handle_leader_and_isr(state, lai(2, 9), 2)
    assert response.error == "STALE_CONTROLLER_EPOCH" and stale == state
    assert record.outcome == "rejected_stale_epoch" and record.subject == "request:LeaderAndIsr#2"
    assert "epoch 2 is older than the epoch 3" in record.note


def test_partition_state_applied_only_with_newer_leader_epoch():
    state, _, _ = handle_leader_and_isr(BrokerState(2, broker_epoch=50), lai(3, 5), 1)
    same, response, record = handle_leader_and_isr(state, lai(3, 5, leader=2), 2)
    assert response.partition_errors == ((tp("t-0"), "STALE_CONTROLLER_EPOCH"),)
    assert same.partitions[tp("t-0")].leader == 1 and record.detail["ignored"]
    newer, _, _ = handle_leader_and_isr(state, lai(3, 6, leader=2), 3)
    assert newer.partitions[tp("t-0")].leader == 2


def test_request_for_an_earlier_incarnation_is_rejected():
    _, response, record = handle_leader_and_isr(BrokerState(2, broker_epoch=50), lai(3, 0, broker_epoch=40), 1)
    assert response.error == "STALE_BROKER_EPOCH" and "STALE_BROKER_EPOCH" in record.note


def test_replica_not_in_assignment_is_refused():
    _, response, _ = handle_leader_and_isr(BrokerState(3, broker_epoch=50), lai(3, 0, replicas=(1, 2)), 1)
    assert response.partition_errors == ((tp("t-0"), "UNKNOWN_TOPIC_OR_PARTITION"),)


def test_update_metadata_from_old_controller_rejected():
    um = lambda epoch: UpdateMetadataRequest(9, epoch, 2, 50, (BrokerInfo(1, 1), BrokerInfo(2, 50)), ())  # noqa: E731
    state, response, _ = handle_update_metadata(BrokerState(2, broker_epoch=50), um(4), 1)
    assert state.metadata_brokers == (1, 2) and state.controller_epoch == 4
    _, response, record = handle_update_metadata(state, um(3), 2)
    assert response.error == "STALE_CONTROLLER_EPOCH" and record.outcome == "rejected_stale_epoch"


def test_stop_replica_needs_a_newer_leader_epoch_or_a_sentinel():
    state, _, _ = handle_leader_and_isr(BrokerState(2, broker_epoch=50), lai(3, 5), 1)
    stop = lambda epoch: StopReplicaRequest(9, 3, 2, 50, (StopReplicaPartitionState("t", 0, epoch, False),))  # noqa: E731
    kept, response, record = handle_stop_replica(state, stop(5), 2)
    assert response.partition_errors == ((tp("t-0"), "FENCED_LEADER_EPOCH"),) and tp("t-0") in kept.partitions
    gone, response, _ = handle_stop_replica(state, stop(-2), 3)
    assert tp("t-0") not in gone.partitions
