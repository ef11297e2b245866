"""Topic creation, partition expansion (§9) and deletion (§14)."""

from backend.core.controller import topic_change, topic_deletion
from backend.core.model import PartitionAndReplica, ReplicaAssignment
from backend.core.controller.plan import CreatePartitionState, DeleteTopicDeletionFlags, DeleteTopicZnodes, SetTopicAssignment
from backend.core.controller.states import PartitionState as P, ReplicaState as R

from .support import Run, cluster, state_of, tp


def assignment(**partitions):
    return {int(p[1:]): ReplicaAssignment(tuple(r)) for p, r in partitions.items()}


def test_topic_creation_first_live_replica_leads_isr_is_all_live():
    ctx = cluster(live=(0, 1, 2))
    run = Run(topic_change.process_topic_change, ctx, {"t"}, {"t": assignment(p0=[1, 2, 0], p1=[2, 0, 1])})
    assert state_of(run.ctx, "t-0") == (1, [1, 2, 0], 0)
    assert state_of(run.ctx, "t-1") == (2, [2, 0, 1], 0)
    assert [type(w) for w in run.writes] == [CreatePartitionState, CreatePartitionState]
    assert run.ctx.partition_state(tp("t-0")) is P.OnlinePartition
    assert run.ctx.replica_state(PartitionAndReplica(tp("t-0"), 0)) is R.OnlineReplica
    lai = run.requests_of("LeaderAndIsr", 0)[0]
    assert all(s.is_new for s in lai.partition_states)
    # The records tell the whole NonExistent -> New -> Online story in order.
    states = [(r.from_state, r.to_state) for r in run.records_of("partition") if r.subject == "partition:t-0"]
    assert states == [("NonExistentPartition", "NewPartition"), ("NewPartition", "OnlinePartition")]


def test_topic_creation_with_an_offline_replica():  # ControllerIntegrationTest.testTopicCreationWithOfflineReplica
    ctx = cluster(live=(0, 1))
    run = Run(topic_change.process_topic_change, ctx, {"t"}, {"t": assignment(p0=[2, 0, 1])})
    assert state_of(run.ctx, "t-0") == (0, [0, 1], 0)
    assert {r.broker_id for r in run.requests_of("LeaderAndIsr")} == {0, 1}


def test_topic_creation_with_no_live_replica_stays_new():
    ctx = cluster(live=(0,))
    run = Run(topic_change.process_topic_change, ctx, {"t"}, {"t": assignment(p0=[1, 2])})
    assert run.ctx.partition_state(tp("t-0")) is P.NewPartition
    assert run.writes == []
    [failed] = [r for r in run.records_of("partition") if r.outcome == "no_leader"]
    assert "No replica in assignment [1, 2] is alive" in failed.note


def test_partition_expansion():  # ControllerIntegrationTest.testTopicPartitionExpansion
    ctx = cluster(live=(0, 1), partitions={"t-0": ([0, 1], 0, [0, 1], 2)})
    run = Run(topic_change.process_partition_modifications, ctx, "t", assignment(p0=[0, 1], p1=[1, 0]))
    assert state_of(run.ctx, "t-1") == (1, [1, 0], 0)
    assert state_of(run.ctx, "t-0") == (0, [0, 1], 2)


def test_topic_removed_from_brokers_topics_is_forgotten():
    ctx = cluster(live=(0, 1), partitions={"t-0": ([0, 1], 0, [0, 1]), "u-0": ([1], 1, [1])})
    run = Run(topic_change.process_topic_change, ctx, {"u"}, {})
    assert run.ctx.all_topics == {"u"} and tp("t-0") not in run.ctx.partition_assignments


def test_expansion_of_a_topic_being_deleted_restores_the_assignment():
    ctx = cluster(live=(0, 1), partitions={"t-0": ([0, 1], 0, [0, 1])}).evolve(topics_to_be_deleted=frozenset({"t"}))
    run = Run(topic_change.process_partition_modifications, ctx, "t", assignment(p0=[0, 1], p1=[1, 0]))
    [write] = run.writes
    assert isinstance(write, SetTopicAssignment) and list(write.assignment) == [0]


def _deleting(ctx):
    return Run(topic_deletion.process_topic_deletion, ctx, {"t"})


def test_topic_deletion_happy_path():
    ctx = cluster(live=(0, 1), partitions={"t-0": ([0, 1], 0, [0, 1])})
    started = _deleting(ctx)
    ctx = started.ctx
    assert ctx.partition_state(tp("t-0")) is P.NonExistentPartition
    assert ctx.replica_state(PartitionAndReplica(tp("t-0"), 0)) is R.ReplicaDeletionStarted
    stops = started.requests_of("StopReplica")
    assert any(s.partition_states[0].delete_partition and s.partition_states[0].leader_epoch == -2 for s in stops)
    assert any(p.leader == -2 for r in started.requests_of("UpdateMetadata") for p in r.partition_states)
    # Broker 0 answers first: nothing is deleted yet.
    first = Run(topic_deletion.process_stop_replica_response, ctx, 0, [(tp("t-0"), "NONE")])
    assert first.writes == [] and "t" in first.ctx.all_topics
    done = Run(topic_deletion.process_stop_replica_response, first.ctx, 1, [(tp("t-0"), "NONE")])
    assert done.writes == [DeleteTopicZnodes("t")]
    assert "t" not in done.ctx.all_topics and not done.ctx.partition_assignments
    assert not done.ctx.replica_states and "t" not in done.ctx.topics_to_be_deleted


def test_topic_deletion_waits_for_a_dead_replica_and_resumes_when_it_returns():
    from backend.core.controller import broker_change
    from backend.core.model import BrokerInfo
    ctx = cluster(live=(0,), partitions={"t-0": ([0, 1], 0, [0])})
    started = _deleting(ctx)
    assert "t" in started.ctx.topics_ineligible_for_deletion
    assert started.ctx.replica_state(PartitionAndReplica(tp("t-0"), 1)) is R.ReplicaDeletionIneligible
    ctx = Run(topic_deletion.process_stop_replica_response, started.ctx, 0, [(tp("t-0"), "NONE")]).ctx
    assert "t" in ctx.all_topics
    back = Run(broker_change.process_broker_change, ctx, {0: BrokerInfo(0, 100), 1: BrokerInfo(1, 101)})
    assert back.ctx.replica_state(PartitionAndReplica(tp("t-0"), 1)) is R.ReplicaDeletionStarted
    done = Run(topic_deletion.process_stop_replica_response, back.ctx, 1, [(tp("t-0"), "NONE")])
    assert done.writes == [DeleteTopicZnodes("t")]


def test_deleting_unknown_topic_or_with_deletion_disabled_removes_the_request():
    ctx = cluster(live=(0,), partitions={"t-0": ([0], 0, [0])})
    assert Run(topic_deletion.process_topic_deletion, ctx, {"nope"}).writes == [DeleteTopicDeletionFlags(("nope",))]
    disabled = cluster(live=(0,), partitions={"t-0": ([0], 0, [0])}, config={"delete.topic.enable": False})
    run = Run(topic_deletion.process_topic_deletion, disabled, {"t"})
    assert run.writes == [DeleteTopicDeletionFlags(("t",))] and "t" in run.ctx.all_topics
