"""What UpdateMetadata carries, as Kafka 2.8.2's ``addUpdateMetadataRequestForBrokers`` and
``onBrokerStartup`` build it: the places the lab once differed."""

from dataclasses import replace

from backend.core.controller import broker_change
from backend.core.controller.request_batch import update_metadata
from backend.core.model import LEADER_DURING_DELETE, BrokerInfo

from .support import Run, cluster, tp


def _partition(requests, name):
    [request] = requests
    return next(p for p in request.partition_states if p.topic_partition == tp(name))


def test_a_replica_on_a_broker_in_controlled_shutdown_counts_as_offline():
    ctx = cluster(live=(0, 1, 2), partitions={"t-0": ([0, 1, 2], 0, [0, 1, 2], 3)}, shutting_down=(2,))
    state = _partition(update_metadata(ctx, [0], [tp("t-0")]), "t-0")
    assert state.offline_replicas == (2,)


def test_a_partition_of_a_topic_queued_for_deletion_goes_out_as_leader_during_delete():
    ctx = cluster(live=(0, 1), partitions={"t-0": ([0, 1], 0, [0, 1], 3)})
    ctx = replace(ctx, topics_to_be_deleted=frozenset({"t"}))
    state = _partition(update_metadata(ctx, [0], [tp("t-0")]), "t-0")
    assert (state.leader, state.leader_epoch, state.zk_version, state.isr) == (LEADER_DURING_DELETE, 0, 0, (0, 1))


def test_a_new_broker_is_not_told_about_partitions_of_topics_queued_for_deletion():
    ctx = cluster(live=(0, 1), partitions={"t-0": ([0, 1], 0, [0, 1]), "gone-0": ([0, 1], 0, [0, 1])})
    ctx = replace(ctx, topics_to_be_deleted=frozenset({"gone"}))
    live = {b: BrokerInfo(b, epoch=100 + b) for b in (0, 1, 2)}
    run = Run(broker_change.process_broker_change, ctx, live)
    told = {p.topic_partition for r in run.requests_of("UpdateMetadata", 2) for p in r.partition_states}
    assert tp("t-0") in told and tp("gone-0") not in told
