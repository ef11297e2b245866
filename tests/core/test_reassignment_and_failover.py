"""Reassignment (§15), failover (§6) and ISR-change notifications (§16)."""

from backend.core.controller import broker_change, failover, isr_change, reassignment
from backend.core.model import (
    BrokerInfo, LeaderAndIsr, LeaderIsrAndControllerEpoch, PartitionAndReplica, ReplicaAssignment,
)
from backend.core.controller.plan import (
    DeleteIsrChangeNotifications, RemoveFromPartitionReassignment, SetTopicAssignment, UpdatePartitionState,
)
from backend.core.controller.states import PartitionState as P, ReplicaState as R

from .support import Run, cluster, state_of, tp


def _isr_caught_up(ctx, name, isr):
    info = ctx.partition_leadership_info[tp(name)]
    lai = info.leader_and_isr
    caught = LeaderIsrAndControllerEpoch(LeaderAndIsr(lai.leader, lai.leader_epoch, tuple(isr), lai.zk_version + 1),
                                         info.controller_epoch)
    # The leader wrote the new ISR to ZooKeeper, then the notification.
    return Run(isr_change.process_isr_change_notification, ctx, ("0000000000",), {tp(name): caught},
               znodes={tp(name): caught})


def test_partition_reassignment_costs_three_leader_epochs():  # ControllerIntegrationTest.testPartitionReassignment
    ctx = cluster(live=(0, 1), partitions={"t-0": ([0], 0, [0], 0)})
    started = Run(reassignment.process_zk_partition_reassignment, ctx, {tp("t-0"): (1,)})
    assignment = started.ctx.partition_assignments[tp("t-0")]
    assert assignment == ReplicaAssignment((1, 0), (1,), (0,))
    assert isinstance(started.writes[0], SetTopicAssignment)
    assert state_of(started.ctx, "t-0") == (0, [0], 1)  # A1
    assert tp("t-0") in started.ctx.partitions_being_reassigned
    new = started.requests_of("LeaderAndIsr", 1)  # A1's batch, then A2's NewReplica
    assert len(new) == 2 and all(r.partition_states[0].is_new for r in new)
    assert new[0].partition_states[0].adding_replicas == (1,)
    assert new[0].partition_states[0].replicas == (1, 0)
    # The leader adds 1 to the ISR once it caught up; the notification completes the move.
    done = _isr_caught_up(started.ctx, "t-0", [0, 1])
    assert state_of(done.ctx, "t-0") == (1, [1], 3)  # +1 election (B3), +1 ISR shrink (B4)
    assert done.ctx.partition_assignments[tp("t-0")] == ReplicaAssignment((1,))
    assert tp("t-0") not in done.ctx.partitions_being_reassigned
    assert PartitionAndReplica(tp("t-0"), 0) not in done.ctx.replica_states
    kinds = [type(w) for w in done.writes]
    assert kinds[-2:] == [RemoveFromPartitionReassignment, DeleteIsrChangeNotifications]
    assert done.writes[-2].partitions == ((tp("t-0"), (1,)),)
    topic_writes = [w for w in done.writes if isinstance(w, SetTopicAssignment)]
    assert topic_writes[-1].assignment[0] == ReplicaAssignment((1,))  # B6 written last


def test_reassignment_halts_on_offline_replica_and_resumes_when_it_returns():
    ctx = cluster(live=(0, 1), partitions={"t-0": ([0, 1], 0, [0, 1])})
    started = Run(reassignment.process_zk_partition_reassignment, ctx, {tp("t-0"): (0, 2)})
    assert started.requests_of("LeaderAndIsr", 2) == []  # broker 2 is down: nothing is delivered
    assert tp("t-0") in started.ctx.partitions_being_reassigned
    back = Run(broker_change.process_broker_change, 
        started.ctx, {b: BrokerInfo(b, 100 + b) for b in (0, 1, 2)})
    assert [r for r in back.requests_of("LeaderAndIsr", 2) if r.partition_states[0].is_new]
    done = _isr_caught_up(back.ctx, "t-0", [0, 1, 2])
    assert done.ctx.partition_assignments[tp("t-0")].replicas == (0, 2)
    assert state_of(done.ctx, "t-0")[:2] == (0, [0, 2])


def test_reassignment_of_unknown_partition_is_removed_from_the_znode():
    ctx = cluster(live=(0,), partitions={"t-0": ([0], 0, [0])})
    run = Run(reassignment.process_zk_partition_reassignment, ctx, {tp("x-0"): (0,)})
    assert run.writes == [RemoveFromPartitionReassignment(((tp("x-0"), None),))]


def test_failover_rebuilds_context_and_elects_where_leaders_are_dead():
    metadata = failover.ClusterMetadata(
        brokers={1: BrokerInfo(1, 11), 2: BrokerInfo(2, 12)},
        assignments={"t": {0: ReplicaAssignment((0, 1, 2)), 1: ReplicaAssignment((1, 2, 0)),
                           2: ReplicaAssignment((2, 0, 1))}},
        partition_states={
            tp("t-0"): LeaderIsrAndControllerEpoch(LeaderAndIsr(0, 4, (0, 1, 2), 4), 1),
            tp("t-1"): LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 2, (1, 2, 0), 2), 1),
        },
        isr_change_notifications=("0000000003",),
    )
    ctx, elected = failover.become_controller(cluster(live=(), controller_id=1), epoch=2, epoch_zk_version=2)
    assert elected.to_state == "elected" and ctx.epoch == 2
    run = Run(failover.on_controller_failover, ctx, metadata, znodes=metadata.partition_states)
    ctx = run.ctx
    assert run.writes[0] == DeleteIsrChangeNotifications(("0000000003",))
    # Replica 0 leaves the ISR at replica-state-machine startup (leader -1, +1), then 1 is elected (+1).
    assert state_of(ctx, "t-0") == (1, [1, 2], 6)
    assert ctx.partition_leadership_info[tp("t-0")].controller_epoch == 2
    assert state_of(ctx, "t-1") == (1, [1, 2], 3)  # replica 0 goes offline: ISR shrink
    assert state_of(ctx, "t-2") == (2, [2, 1], 0)  # never had a state znode: initialised
    assert ctx.partition_state(tp("t-2")) is P.OnlinePartition
    assert ctx.replica_state(PartitionAndReplica(tp("t-0"), 0)) is R.OfflineReplica
    assert run.requests[0].name == "UpdateMetadata" and run.requests[0].partition_states == ()
    assert all(r.controller_epoch == 2 for r in run.requests)
    assert any(r.to_state == "active" for r in run.records_of("controller"))


def test_failover_resumes_pending_preferred_election():
    metadata = failover.ClusterMetadata(
        brokers={0: BrokerInfo(0, 10), 1: BrokerInfo(1, 11)},
        assignments={"t": {0: ReplicaAssignment((0, 1))}},
        partition_states={tp("t-0"): LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 1, (1, 0), 1), 1)},
        preferred_replica_election=(tp("t-0"),),
    )
    ctx, _ = failover.become_controller(cluster(live=()), epoch=2, epoch_zk_version=2)
    run = Run(failover.on_controller_failover, ctx, metadata, znodes=metadata.partition_states)
    assert state_of(run.ctx, "t-0")[0] == 0


def test_resignation_forgets_everything():
    ctx = cluster(live=(0, 1), partitions={"t-0": ([0, 1], 0, [0, 1])}, epoch=5)
    ctx, record = failover.on_controller_resignation(ctx, "another broker won.")
    assert ctx.epoch == 0 and not ctx.partition_assignments and record.to_state == "resigned"


def test_isr_notification_updates_cache_and_tells_every_broker():
    ctx = cluster(live=(0, 1, 2), partitions={"t-0": ([0, 1, 2], 0, [0, 1, 2], 3)})
    run = _isr_caught_up(ctx, "t-0", [0, 1])
    assert state_of(run.ctx, "t-0") == (0, [0, 1], 3)  # the leader's change does not bump the epoch
    assert {r.broker_id for r in run.requests_of("UpdateMetadata")} == {0, 1, 2}
    assert not [w for w in run.writes if isinstance(w, UpdatePartitionState)]
