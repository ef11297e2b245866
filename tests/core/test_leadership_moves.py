"""Controlled shutdown (§8), preferred election and auto rebalance (§13)."""

import pytest

from backend.core.controller import controlled_shutdown, leader_balance
from backend.core.errors import BrokerNotAvailableException, StaleBrokerEpochException
from backend.core.controller.plan import DeletePreferredReplicaElection

from .support import Run, cluster, state_of, tp


def test_controlled_shutdown_kafka_vector():  # ControllerIntegrationTest.testControlledShutdown
    ctx = cluster(live=(0, 1, 2), partitions={"t-0": ([0, 1, 2], 0, [0, 1, 2])})
    run = Run(controlled_shutdown.do_controlled_shutdown, ctx, 2, 102)
    ctx, remaining = run.value
    assert remaining == [] and state_of(ctx, "t-0") == (0, [0, 1], 1)
    ctx, remaining = Run(controlled_shutdown.do_controlled_shutdown, ctx, 1, 101).value
    assert remaining == [] and state_of(ctx, "t-0")[:2] == (0, [0])
    ctx, remaining = Run(controlled_shutdown.do_controlled_shutdown, ctx, 0, 100).value
    assert remaining == [tp("t-0")] and state_of(ctx, "t-0")[0] == 0


def test_controlled_shutdown_moves_leaders_and_tells_the_shutting_broker():
    ctx = cluster(live=(0, 1, 2), partitions={"t-0": ([0, 1, 2], 0, [0, 1, 2], 3)})
    run = Run(controlled_shutdown.do_controlled_shutdown, ctx, 0, 100)
    ctx, remaining = run.value
    assert remaining == [] and state_of(ctx, "t-0") == (1, [1, 2], 4)
    assert 0 in ctx.shutting_down_broker_ids and not ctx.is_replica_online(0)
    assert {r.broker_id for r in run.requests_of("LeaderAndIsr")} >= {0, 1, 2}


def test_controlled_shutdown_refusals_name_kafkas_exceptions():
    ctx = cluster(live=(0, 1))
    with pytest.raises(StaleBrokerEpochException, match="old broker epoch 5"):
        Run(controlled_shutdown.do_controlled_shutdown, ctx, 1, 5)
    with pytest.raises(BrokerNotAvailableException, match="Broker id 7 does not exist"):
        Run(controlled_shutdown.do_controlled_shutdown, ctx, 7, -1)


def test_preferred_replica_election():  # ControllerIntegrationTest.testPreferredReplicaLeaderElection
    ctx = cluster(live=(0, 1), partitions={"t-0": ([0, 1], 1, [1, 0], 2), "t-1": ([1, 0], 1, [1, 0])})
    run = Run(leader_balance.process_replica_leader_election, ctx, [tp("t-0"), tp("t-1"), tp("x-0")])
    ctx, results = run.value
    assert state_of(ctx, "t-0") == (0, [1, 0], 3)
    assert results == {tp("t-0"): 0, tp("t-1"): "ELECTION_NOT_NEEDED", tp("x-0"): "UNKNOWN_TOPIC_OR_PARTITION"}
    assert run.writes[-1] == DeletePreferredReplicaElection()


def test_preferred_election_fails_when_preferred_replica_not_in_isr_and_znode_still_deleted():
    ctx = cluster(live=(0, 1), partitions={"t-0": ([0, 1], 1, [1], 2)})
    run = Run(leader_balance.process_replica_leader_election, ctx, [tp("t-0")])
    assert run.value[1] == {tp("t-0"): "PREFERRED_LEADER_NOT_AVAILABLE"}
    assert state_of(run.ctx, "t-0") == (1, [1], 2)
    assert run.writes == [DeletePreferredReplicaElection()]


def _ten_partitions_preferring_0(led_elsewhere: int):
    parts = {f"t-{i}": ([0, 1], 1 if i < led_elsewhere else 0, [0, 1]) for i in range(10)}
    return cluster(live=(0, 1), partitions=parts)


def test_auto_rebalance_ignores_ten_percent_imbalance():
    run = Run(leader_balance.check_and_trigger_auto_leader_rebalance, _ten_partitions_preferring_0(1))
    assert run.writes == []


def test_auto_rebalance_moves_leaders_back_above_ten_percent():
    run = Run(leader_balance.check_and_trigger_auto_leader_rebalance, _ten_partitions_preferring_0(2))
    assert [state_of(run.ctx, f"t-{i}")[0] for i in range(10)] == [0] * 10
    assert len(run.writes) == 2  # no znode to delete for an auto-triggered election
    [note] = [r for r in run.records_of("controller") if r.to_state == "imbalanced"]
    assert "imbalance 2/10 = 20.0% > 10%" in note.note


def test_auto_rebalance_skips_when_preferred_replica_not_in_isr():
    ctx = cluster(live=(0, 1), partitions={f"t-{i}": ([0, 1], 1, [1]) for i in range(3)})
    assert Run(leader_balance.check_and_trigger_auto_leader_rebalance, ctx).writes == []
