"""Broker startup and failure decisions (§7) on small literal contexts."""

from backend.core.controller import broker_change
from backend.core.model import NO_LEADER, BrokerInfo, PartitionAndReplica
from backend.core.model import LeaderAndIsr, LeaderIsrAndControllerEpoch
from backend.core.controller.plan import UpdatePartitionState, WriteResult
from backend.core.controller.states import PartitionState as P, ReplicaState as R

from .support import Run, cluster, state_of, tp


def brokers(*ids, bump=()):
    return {b: BrokerInfo(b, epoch=100 + b + (50 if b in bump else 0)) for b in ids}


def test_leader_dies_next_isr_member_in_assignment_order_leads():
    ctx = cluster(live=(1, 2, 3), partitions={"t-0": ([1, 2, 3], 1, [1, 2, 3], 0)})
    run = Run(broker_change.process_broker_change, ctx, brokers(2, 3))
    assert state_of(run.ctx, "t-0") == (2, [2, 3], 1)
    assert run.ctx.partition_state(tp("t-0")) is P.OnlinePartition
    assert run.ctx.replica_state(PartitionAndReplica(tp("t-0"), 1)) is R.OfflineReplica
    # One write only: the OfflineReplica step finds 1 already out of the ISR.
    assert [type(w) for w in run.writes] == [UpdatePartitionState]
    [election] = run.records_of("election")
    assert election.election == "offline" and election.leader == 2 and election.outcome == "ok"
    assert "2 is the first live ISR member in assignment [1,2,3]" in election.note


def test_leader_isr_requests_go_to_live_replicas_and_metadata_to_everybody():
    ctx = cluster(live=(1, 2, 3, 4), partitions={"t-0": ([1, 2, 3], 1, [1, 2, 3])})
    run = Run(broker_change.process_broker_change, ctx, brokers(2, 3, 4))
    leader_and_isr = run.requests_of("LeaderAndIsr")
    # The election's batch, then the OfflineReplica step re-sending the unchanged state (§7.4).
    assert [r.broker_id for r in leader_and_isr] == [2, 3, 2, 3]
    state = leader_and_isr[0].partition_states[0]
    assert (state.leader, state.isr, state.leader_epoch, state.controller_epoch) == (2, (2, 3), 1, ctx.epoch)
    assert {r.broker_id for r in run.requests_of("UpdateMetadata")} == {2, 3, 4}
    assert all(r.controller_epoch == ctx.epoch for r in run.requests)
    assert all(r.broker_epoch == 100 + r.broker_id for r in run.requests)


def test_follower_dies_isr_shrinks_leader_stays_epoch_bumps():
    ctx = cluster(live=(1, 2, 3), partitions={"t-0": ([1, 2, 3], 1, [1, 2, 3], 5)})
    run = Run(broker_change.process_broker_change, ctx, brokers(1, 2))
    assert state_of(run.ctx, "t-0") == (1, [1, 2], 6)
    [isr] = run.records_of("isr")
    assert isr.to_state == "shrunk" and isr.detail["previous_isr"] == [1, 2, 3]
    # StopReplica (no delete) is addressed to the dead broker and dropped: it is not live.
    assert run.requests_of("StopReplica") == []
    assert sorted(r.broker_id for r in run.requests_of("LeaderAndIsr")) == [1, 2]


def test_entire_isr_offline_leader_minus_one_isr_keeps_last_member():
    # ControllerIntegrationTest.testLeaderAndIsrWhenEntireIsrOfflineAndUncleanLeaderElectionDisabled
    ctx = cluster(live=(0, 1), partitions={"t-0": ([0, 1], 0, [0], 3)})
    run = Run(broker_change.process_broker_change, ctx, brokers(1))
    assert state_of(run.ctx, "t-0") == (NO_LEADER, [0], 4)
    assert run.ctx.partition_state(tp("t-0")) is P.OfflinePartition
    [election] = run.records_of("election")
    assert election.outcome == "no_leader" and "unclean leader election is disabled" in election.note


def test_entire_isr_offline_with_unclean_enabled_elects_outside_isr():
    ctx = cluster(live=(0, 1), partitions={"t-0": ([0, 1], 0, [0], 3)},
                  config={"unclean.leader.election.enable": True})
    run = Run(broker_change.process_broker_change, ctx, brokers(1))
    assert state_of(run.ctx, "t-0") == (1, [1], 4)
    [election] = run.records_of("election")
    assert election.election == "offline_unclean"


def test_new_broker_gets_leader_and_isr_for_its_replicas_and_full_metadata():
    ctx = cluster(live=(1, 2), partitions={"t-0": ([1, 2, 3], 1, [1, 2], 2)})
    run = Run(broker_change.process_broker_change, ctx, brokers(1, 2, 3))
    assert run.ctx.replica_state(PartitionAndReplica(tp("t-0"), 3)) is R.OnlineReplica
    [lai] = run.requests_of("LeaderAndIsr", 3)
    assert lai.partition_states[0].leader == 1 and not lai.partition_states[0].is_new
    metadata_to_new = run.requests_of("UpdateMetadata", 3)
    assert any(r.partition_states for r in metadata_to_new)
    # Existing brokers first learn only the new broker (KAFKA-7537: no partitions = brokers only).
    assert run.requests_of("UpdateMetadata", 1)[0].partition_states == ()
    assert [b.id for b in run.requests_of("UpdateMetadata", 1)[0].live_brokers] == [1, 2, 3]
    assert run.writes == []  # the restarted broker does not take leadership back by itself


def test_restarted_broker_leads_partitions_that_had_no_leader():
    ctx = cluster(live=(0, 1), partitions={"t-0": ([0, 1], NO_LEADER, [0], 4)})
    ctx = ctx.evolve(live_brokers={1: BrokerInfo(1, 101)})
    ctx = ctx.with_partition_states({tp("t-0"): P.OfflinePartition})
    run = Run(broker_change.process_broker_change, ctx, brokers(0, 1))
    assert state_of(run.ctx, "t-0") == (0, [0], 5)


def test_bounced_broker_is_a_failure_then_a_startup():
    ctx = cluster(live=(1, 2), partitions={"t-0": ([1, 2], 1, [1, 2], 0)})
    run = Run(broker_change.process_broker_change, ctx, brokers(1, 2, bump=(1,)))
    kinds = [r for r in run.records_of("controller") if r.to_state == "broker_change"]
    assert kinds[0].detail["bounced"] == [1]
    assert run.ctx.live_brokers[1].epoch == 151
    assert state_of(run.ctx, "t-0") == (2, [2], 1)
    assert run.ctx.replica_state(PartitionAndReplica(tp("t-0"), 1)) is R.OnlineReplica
    # The requests to broker 1 carry its new broker epoch.
    assert all(r.broker_epoch == 151 for r in run.requests if r.broker_id == 1)


def test_bad_version_retries_that_partition_with_what_zookeeper_holds():
    ctx = cluster(live=(1, 2, 3), partitions={"t-0": ([1, 2, 3], 1, [1, 2, 3], 0), "t-1": ([1, 3, 2], 1, [1, 3, 2], 0)})
    attempts = []

    def leader_shrinks_isr_first(run, write):
        """Between the controller's read and its write, the leader of t-0 drops 2 from the ISR."""
        attempts.append(write)
        if write.topic_partition == tp("t-0") and len([a for a in attempts if a.topic_partition == tp("t-0")]) == 1:
            current = run.znodes[tp("t-0")]
            run.znodes[tp("t-0")] = LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 0, (1, 3), 1), current.controller_epoch)

    run = Run(broker_change.process_broker_change, ctx, brokers(2, 3), before_write=leader_shrinks_isr_first)
    assert state_of(run.ctx, "t-0") == (3, [3], 1)  # elected again from the fresh ISR [1, 3]
    assert run.ctx.partition_leadership_info[tp("t-0")].leader_and_isr.zk_version == 2
    assert state_of(run.ctx, "t-1") == (3, [3, 2], 1)
    assert len([w for w in attempts if w.topic_partition == tp("t-1")]) == 1  # only the conflict is retried
    assert run.reads.count(tp("t-0")) >= 2 and run.reads[:2] == [tp("t-0"), tp("t-1")]


def test_stale_cache_is_not_trusted_zookeeper_is_read_first():
    """The leader added 2 back to the ISR but the controller has not heard yet: as in Kafka, the
    state is read before electing, so 2 — not nobody — leads when 1 dies."""
    ctx = cluster(live=(1, 2), partitions={"t-0": ([1, 2], 1, [1], 4)})
    grown = LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 4, (1, 2), 1), 1)
    run = Run(broker_change.process_broker_change, ctx, brokers(2), znodes={tp("t-0"): grown})
    assert state_of(run.ctx, "t-0") == (2, [2], 5)


def test_stale_controller_epoch_stops_the_handler():
    ctx = cluster(live=(1, 2, 3), partitions={"t-0": ([1, 2, 3], 1, [1, 2, 3], 0)})
    run = Run(broker_change.process_broker_change, ctx, brokers(2, 3), answer=lambda w: WriteResult("rejected_stale_epoch"))
    assert run.controller_moved and run.value is None
    assert run.requests_of("LeaderAndIsr") == []


def test_partition_state_written_by_newer_controller_is_not_touched():
    ctx = cluster(live=(1, 2, 3), partitions={"t-0": ([1, 2, 3], 1, [1, 2, 3], 0)}, epoch=3)
    from backend.core.model import LeaderAndIsr, LeaderIsrAndControllerEpoch
    newer = LeaderIsrAndControllerEpoch(LeaderAndIsr(1, 0, (1, 2, 3), 0), 4)
    ctx = ctx.with_leadership({tp("t-0"): newer})
    run = Run(broker_change.process_broker_change, ctx, brokers(2, 3))
    assert run.writes == []
    assert any(r.outcome == "rejected_stale_epoch" for r in run.records_of("election"))
