"""Kafka's PartitionLeaderElectionAlgorithmsTest, and the batch form against table §11.5."""

import pytest

from backend.core.controller.election import (
    ControlledShutdownPartitionLeaderElectionStrategy as ControlledShutdown,
    OfflinePartitionLeaderElectionStrategy as Offline,
    PreferredReplicaPartitionLeaderElectionStrategy as Preferred,
    ReassignPartitionLeaderElectionStrategy as Reassign,
    elect_leaders,
)
from backend.core.controller.election_algorithms import (
    controlled_shutdown_partition_leader_election,
    offline_partition_leader_election,
    preferred_replica_partition_leader_election,
    reassign_partition_leader_election,
)
from backend.core.model import ReplicaAssignment

from .support import cluster, tp


@pytest.mark.parametrize("assignment,isr,live,unclean,expected", [
    ([2, 4], [2, 4], {4}, False, 4),     # testOfflinePartitionLeaderElection
    ([2, 4], [2], {4}, False, None),     # ...LastIsrOfflineUncleanLeaderElectionDisabled
    ([2, 4], [2], {4}, True, 4),         # ...LastIsrOfflineUncleanLeaderElectionEnabled
    ([1, 2, 3], [3, 2], {2, 3}, False, 2),  # assignment order, not ISR order
    ([1, 2, 3], [3, 2], {2, 3}, True, 2),   # clean first even when unclean is allowed
])
def test_offline(assignment, isr, live, unclean, expected):
    assert offline_partition_leader_election(assignment, isr, live, unclean) == expected


@pytest.mark.parametrize("reassignment,isr,live,expected", [
    ([2, 4], [2, 4], {2, 4}, 2),  # testReassignPartitionLeaderElection
    ([2, 4], [2], set(), None),   # testReassignPartitionLeaderElectionWithNoLiveIsr
    ([2], [], {2}, None),         # testReassignPartitionLeaderElectionWithEmptyIsr
    ([4, 2], [2, 4], {2, 4}, 4),  # target order
])
def test_reassign(reassignment, isr, live, expected):
    assert reassign_partition_leader_election(reassignment, isr, live) == expected


@pytest.mark.parametrize("assignment,isr,live,expected", [
    ([2, 4], [2, 4], {2, 4}, 2),  # testPreferredReplicaPartitionLeaderElection
    ([2, 4], [2], set(), None),   # ...PreferredReplicaInIsrNotLive
    ([2, 4], [4], {2, 4}, None),  # ...PreferredReplicaNotInIsrLive (never falls back to 4)
    ([2, 4], [], set(), None),    # ...PreferredReplicaNotInIsrNotLive
])
def test_preferred(assignment, isr, live, expected):
    assert preferred_replica_partition_leader_election(assignment, isr, live) == expected


@pytest.mark.parametrize("assignment,isr,live,shutting,expected", [
    ([2, 4], [2, 4], {2, 4}, {2}, 4),        # testControlledShutdownPartitionLeaderElection
    ([2, 4], [2], {2, 4}, {2}, None),        # ...LastIsrShuttingDown
    ([2, 4], [2, 4], {2, 4}, {2, 4}, None),  # ...AllIsrSimultaneouslyShutdown
])
def test_controlled_shutdown(assignment, isr, live, shutting, expected):
    assert controlled_shutdown_partition_leader_election(assignment, isr, live, shutting) == expected


def test_choosers_accept_any_iterables():
    assert offline_partition_leader_election((1, 2), (2,), iter([2]), False) == 2
    assert controlled_shutdown_partition_leader_election([1, 2], [1, 2], (1, 2), iter([1])) == 2


# -- the batch form: table §11.5 -----------------------------------------------------------------
def _one(ctx, strategy, name="t-0"):
    [result] = elect_leaders(ctx, strategy, {tp(name): ctx.partition_leadership_info[tp(name)]})
    return result


def test_offline_clean_keeps_live_isr_members_and_bumps_epoch():
    ctx = cluster(live=(2, 3), partitions={"t-0": ([1, 2, 3], 1, [1, 2, 3], 4)})
    result = _one(ctx, Offline())
    lai = result.leader_and_isr.leader_and_isr
    assert (lai.leader, lai.isr, lai.leader_epoch) == (2, (2, 3), 5)
    assert result.leader_and_isr.controller_epoch == ctx.epoch
    assert result.recipients == (2, 3) and result.election == "offline" and not result.unclean
    assert "2 is the first live ISR member in assignment [1,2,3]" in result.note


def test_offline_unclean_when_topic_allows_it():
    ctx = cluster(live=(2, 3), partitions={"t-0": ([1, 2, 3], 1, [1], 7)},
                  config={"unclean.leader.election.enable": True})
    result = _one(ctx, Offline())
    lai = result.leader_and_isr.leader_and_isr
    assert (lai.leader, lai.isr, lai.leader_epoch) == (2, (2,), 8)
    assert result.unclean and "may be lost" in result.note


def test_offline_topic_config_overrides_broker_default():
    ctx = cluster(live=(2,), partitions={"t-0": ([1, 2], 1, [1])}, config={"unclean.leader.election.enable": True})
    ctx = ctx.evolve(topic_configs={"t": {"unclean.leader.election.enable": "false"}})
    result = _one(ctx, Offline())
    assert result.leader_and_isr is None and "unclean leader election is disabled" in result.note


def test_offline_no_leader_explains_why():
    ctx = cluster(live=(2, 3), partitions={"t-0": ([1, 2, 3], 1, [1])})
    result = _one(ctx, Offline())
    assert result.leader_and_isr is None and result.election == "offline"
    assert "No ISR member of [1] is alive" in result.note


def test_admin_unclean_election_allows_unclean():
    ctx = cluster(live=(3,), partitions={"t-0": ([1, 3], 1, [1])})
    assert _one(ctx, Offline(allow_unclean=True)).leader_and_isr.leader == 3


def test_preferred_keeps_isr_and_notifies_whole_assignment():
    ctx = cluster(live=(1, 2, 3), partitions={"t-0": ([1, 2, 3], 2, [2, 3, 1], 3)})
    result = _one(ctx, Preferred())
    lai = result.leader_and_isr.leader_and_isr
    assert (lai.leader, lai.isr, lai.leader_epoch) == (1, (2, 3, 1), 4)
    assert result.recipients == (1, 2, 3)


def test_reassign_uses_target_replicas():
    ctx = cluster(live=(1, 2, 3, 4), partitions={"t-0": ([4, 1], 1, [1, 4], 2)})
    ctx = ctx.with_assignments({tp("t-0"): ReplicaAssignment((4, 1), (4,), (1,))})
    result = _one(ctx, Reassign())
    assert result.leader_and_isr.leader_and_isr.leader == 4
    assert result.leader_and_isr.leader_and_isr.isr == (1, 4)
    assert result.recipients == (4,)


def test_controlled_shutdown_removes_shutting_brokers_from_isr_and_tells_them():
    ctx = cluster(live=(0, 1, 2), partitions={"t-0": ([0, 1, 2], 0, [0, 1, 2], 1)}, shutting_down=(0,))
    result = _one(ctx, ControlledShutdown())
    lai = result.leader_and_isr.leader_and_isr
    assert (lai.leader, lai.isr, lai.leader_epoch) == (1, (1, 2), 2)
    assert result.recipients == (0, 1, 2)  # the shutting-down broker is told too (2.1+)
