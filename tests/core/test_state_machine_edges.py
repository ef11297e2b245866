"""Invalid transitions are never applied and never raise: they become records (§10.1, §12.1)."""

from backend.core.model import PartitionAndReplica
from backend.core.controller.partition_state_machine import handle_state_changes as partition_changes
from backend.core.controller.replica_state_machine import handle_state_changes as replica_changes
from backend.core.controller.states import PartitionState as P, ReplicaState as R

from .support import Run, cluster, tp


def test_invalid_partition_transition_is_recorded_and_changes_nothing():
    ctx = cluster(live=(0, 1), partitions={"t-0": ([0, 1], 0, [0, 1])})
    run = Run(partition_changes, ctx, [tp("t-0")], P.NewPartition)
    assert run.ctx.partition_state(tp("t-0")) is P.OnlinePartition
    [record] = run.records_of("partition")
    assert (record.from_state, record.to_state, record.outcome) == ("OnlinePartition", "NewPartition", "invalid_transition")
    assert "NewPartition can only be entered from NonExistentPartition" in record.note


def test_invalid_replica_transition_in_a_batch_leaves_the_rest_going():
    ctx = cluster(live=(0, 1), partitions={"t-0": ([0, 1], 0, [0, 1]), "t-1": ([1, 0], 1, [1, 0])})
    ctx = ctx.with_replica_states({PartitionAndReplica(tp("t-1"), 0): R.OfflineReplica})
    replicas = [PartitionAndReplica(tp("t-0"), 0), PartitionAndReplica(tp("t-1"), 0)]
    run = Run(replica_changes, ctx, replicas, R.ReplicaDeletionStarted)
    assert run.ctx.replica_state(replicas[0]) is R.OnlineReplica
    assert run.ctx.replica_state(replicas[1]) is R.ReplicaDeletionStarted
    outcomes = {r.subject: r.outcome for r in run.records_of("replica")}
    assert outcomes == {"replica:t-0/0": "invalid_transition", "replica:t-1/0": "ok"}


def test_new_replica_that_is_the_leader_is_an_error():
    ctx = cluster(live=(0, 1), partitions={"t-0": ([0, 1], 0, [0, 1])})
    ctx = ctx.with_replica_states({}, removed=[PartitionAndReplica(tp("t-0"), 0)])
    run = Run(replica_changes, ctx, [PartitionAndReplica(tp("t-0"), 0)], R.NewReplica)
    [record] = run.records_of("replica")
    assert record.outcome == "error" and "is the partition's leader" in record.note
    assert run.ctx.replica_state(PartitionAndReplica(tp("t-0"), 0)) is R.NonExistentReplica


def test_two_replicas_of_one_partition_offline_are_two_isr_writes():
    ctx = cluster(live=(0, 1, 2), partitions={"t-0": ([0, 1, 2], 0, [0, 1, 2], 0)})
    run = Run(replica_changes, ctx, [PartitionAndReplica(tp("t-0"), 1), PartitionAndReplica(tp("t-0"), 2)],
                              R.OfflineReplica)
    assert len(run.writes) == 2
    info = run.ctx.partition_leadership_info[tp("t-0")]
    assert info.isr == (0,) and info.leader_and_isr.leader_epoch == 2
