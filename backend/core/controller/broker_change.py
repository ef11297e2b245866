"""Brokers joining, dying and bouncing (§7): ``BrokerChange``, ``onBrokerStartup``,
``onBrokerFailure``, ``onReplicasBecomeOffline``.

The controller learns about brokers only from ``/brokers/ids``: a broker is alive exactly as
long as its ephemeral znode exists, i.e. as long as its ZooKeeper session lives. A broker that
restarted between two watch events is *bounced*: same id, larger broker epoch (the czxid of
its new znode). It is handled as a failure followed by a startup, so its stale state is
discarded.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable, Mapping

from ..model import BrokerInfo, PartitionAndReplica
from ..records import Record
from . import reassignment, topic_deletion
from .context import ControllerContext
from .partition_state_machine import handle_state_changes as partition_changes
from .partition_state_machine import trigger_online_partition_state_change
from .program import Done, Program, emit
from .replica_state_machine import handle_state_changes as replica_changes
from .request_batch import update_metadata
from .states import PartitionState, ReplicaState


def process_broker_change(ctx: ControllerContext, current: Mapping[int, BrokerInfo]) -> Program:
    """``current`` is what ``/brokers/ids`` holds now (id → info with czxid as epoch)."""
    known = ctx.live_brokers
    new = sorted(set(current) - set(known))
    dead = sorted(set(known) - set(current))
    bounced = sorted(b for b in set(current) & set(known) if current[b].epoch > known[b].epoch)
    yield from emit([Record(
        kind="controller", subject=f"broker:{ctx.controller_id}", to_state="broker_change",
        controller_id=ctx.controller_id, controller_epoch=ctx.epoch,
        note=_describe(new, dead, bounced, sorted(current)),
        detail={"new": new, "dead": dead, "bounced": bounced, "live": sorted(current)},
    )])
    if new:
        ctx = ctx.evolve(live_brokers={**ctx.live_brokers, **{b: current[b] for b in new}})
        ctx, _ = yield from on_broker_startup(ctx, new)
    if bounced:
        ctx = ctx.evolve(live_brokers={b: i for b, i in ctx.live_brokers.items() if b not in bounced})
        ctx, _ = yield from on_broker_failure(ctx, bounced)
        ctx = ctx.evolve(live_brokers={**ctx.live_brokers, **{b: current[b] for b in bounced}})
        ctx, _ = yield from on_broker_startup(ctx, bounced)
    if dead:
        ctx = ctx.evolve(live_brokers={b: i for b, i in ctx.live_brokers.items() if b not in dead})
        ctx, _ = yield from on_broker_failure(ctx, dead)
    return Done(ctx)


def process_broker_modification(ctx: ControllerContext, broker_id: int, current: BrokerInfo | None) -> Program:
    """``BrokerModifications``: a live broker's registration changed in place. Kafka compares
    the endpoints (and features, which the lab does not model) with what it holds and, when they
    differ, takes the new ones and sends UpdateMetadata to every broker (``onBrokerUpdate``);
    the broker epoch stays, because the znode was not created again."""
    old = ctx.live_brokers.get(broker_id)
    if current is None or old is None or (current.host, current.port) == (old.host, old.port):
        return Done(ctx)
    ctx = ctx.evolve(live_brokers={**ctx.live_brokers, broker_id: replace(current, epoch=old.epoch)})
    yield from emit([Record(
        kind="controller", subject=f"broker:{broker_id}", to_state="broker_updated", broker_id=broker_id,
        controller_id=ctx.controller_id, controller_epoch=ctx.epoch,
        note=f"Broker {broker_id}'s registration changed its endpoint {old.host}:{old.port} → "
             f"{current.host}:{current.port}; the controller tells every broker with UpdateMetadata.")],
        update_metadata(ctx, ctx.live_or_shutting_down_broker_ids))
    return Done(ctx)


def on_broker_startup(ctx: ControllerContext, new_brokers: Iterable[int]) -> Program:
    new_brokers = sorted(new_brokers)
    existing = ctx.live_or_shutting_down_broker_ids - set(new_brokers)
    yield from emit(requests=update_metadata(ctx, existing)
                    + update_metadata(ctx, new_brokers, ctx.partitions_with_leaders()))
    replicas = ctx.replicas_on_brokers(new_brokers)
    ctx, _ = yield from replica_changes(ctx, replicas, ReplicaState.OnlineReplica)
    ctx, _ = yield from trigger_online_partition_state_change(ctx)
    ctx, _ = yield from reassignment.maybe_resume_reassignments(
        ctx, lambda tp, a: any(b in new_brokers for b in a.target_replicas))
    deleting = {r.topic_partition.topic for r in replicas if ctx.is_topic_queued_up_for_deletion(r.topic_partition.topic)}
    if deleting:
        ctx, _ = yield from topic_deletion.resume_deletion_for_topics(ctx, deleting)
    return Done(ctx)


def on_broker_failure(ctx: ControllerContext, dead_brokers: Iterable[int]) -> Program:
    dead_brokers = sorted(dead_brokers)
    ctx = ctx.evolve(shutting_down_broker_ids=ctx.shutting_down_broker_ids - set(dead_brokers))
    return (yield from on_replicas_become_offline(ctx, ctx.replicas_on_brokers(dead_brokers)))


def on_replicas_become_offline(ctx: ControllerContext, replicas: Iterable[PartitionAndReplica]) -> Program:
    replicas = list(replicas)
    for_deletion = [r for r in replicas if ctx.is_topic_queued_up_for_deletion(r.topic_partition.topic)]
    deleting = set(for_deletion)
    not_for_deletion = [r for r in replicas if r not in deleting]
    offline_leader = ctx.partitions_with_offline_leader()
    ctx, _ = yield from partition_changes(ctx, offline_leader, PartitionState.OfflinePartition)
    ctx, _ = yield from trigger_online_partition_state_change(ctx)
    ctx, _ = yield from replica_changes(ctx, not_for_deletion, ReplicaState.OfflineReplica)
    if for_deletion:
        ctx, _ = yield from topic_deletion.fail_replica_deletion(ctx, for_deletion)
    if not offline_leader:
        # Nobody got a new leader, so no UpdateMetadata went out: tell brokers the broker is gone.
        yield from emit(requests=update_metadata(ctx, ctx.live_or_shutting_down_broker_ids))
    return Done(ctx)


def _describe(new, dead, bounced, live) -> str:
    parts = [f"{label} {ids}" for label, ids in (("new", new), ("dead", dead), ("bounced", bounced)) if ids]
    if not parts:
        return f"BrokerChange with nothing new: live brokers {live}."
    return f"Brokers changed — {', '.join(parts)}; live brokers now {live}."
