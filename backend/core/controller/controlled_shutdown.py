"""Controlled shutdown (§8): a stopping broker asks the controller to move its leaders first.

Without it, a broker that stops makes all of its partitions leaderless until the controller
notices the session is gone and elects new leaders. With it, the controller marks the broker
*shutting down* (it stops being electable), moves the leaders it holds to the next ISR member
in assignment order, takes it out of every ISR, and answers with the partitions it still leads
— empty means "safe to stop now".
"""

from __future__ import annotations

from ..errors import BrokerNotAvailableException, StaleBrokerEpochException
from ..model import PartitionAndReplica
from ..records import Record
from .context import ControllerContext
from .election import ControlledShutdownPartitionLeaderElectionStrategy
from .partition_state_machine import handle_state_changes as partition_changes
from .program import Done, Program, emit
from .replica_state_machine import handle_state_changes as replica_changes
from .request_batch import RequestBatch
from .states import PartitionState, ReplicaState


def do_controlled_shutdown(ctx: ControllerContext, broker_id: int, broker_epoch: int) -> Program:
    """Returns ``(ctx, partitions still led by the broker)``; raises Kafka's exception when the
    request must be refused (the runtime answers the broker with it)."""
    known = ctx.live_brokers.get(broker_id)
    if broker_epoch != -1 and known is not None and broker_epoch < known.epoch:
        raise StaleBrokerEpochException(
            f"Received controlled shutdown request from an old broker epoch {broker_epoch} for broker "
            f"{broker_id}; current broker epoch is {known.epoch}.")
    if known is None:
        raise BrokerNotAvailableException(f"Broker id {broker_id} does not exist.")
    ctx = ctx.evolve(shutting_down_broker_ids=ctx.shutting_down_broker_ids | {broker_id})
    to_act_on = [
        tp for tp in ctx.partitions_on_broker(broker_id)
        if len(ctx.partition_replica_assignment(tp)) > 1 and tp in ctx.partition_leadership_info
        and not ctx.is_topic_queued_up_for_deletion(tp.topic)
    ]
    led = [tp for tp in to_act_on if ctx.partition_leadership_info[tp].leader == broker_id]
    led_set = set(led)
    followed = [tp for tp in to_act_on if tp not in led_set]
    yield from emit([Record(
        kind="controller", subject=f"broker:{broker_id}", to_state="shutting_down",
        controller_id=ctx.controller_id, controller_epoch=ctx.epoch, broker_id=broker_id,
        note=f"Broker {broker_id} asked for a controlled shutdown: it is no longer electable; the controller "
             f"moves the {len(led)} leader(s) it holds and takes it out of {len(followed)} ISR(s).",
        detail={"led": [str(tp) for tp in led], "followed": [str(tp) for tp in followed]},
    )])
    ctx, _ = yield from partition_changes(ctx, led, PartitionState.OnlinePartition,
                                          ControlledShutdownPartitionLeaderElectionStrategy())
    batch = RequestBatch()
    for tp in followed:
        batch.add_stop_replica_request_for_brokers(ctx, [broker_id], tp, delete_partition=False)
    yield from emit(requests=batch.requests(ctx))
    ctx, _ = yield from replica_changes(ctx, [PartitionAndReplica(tp, broker_id) for tp in followed],
                                     ReplicaState.OfflineReplica)
    remaining = ctx.partition_leaders_on_broker(broker_id)
    yield from emit([Record(
        kind="controller", subject=f"broker:{broker_id}", to_state="controlled_shutdown_answered",
        controller_id=ctx.controller_id, controller_epoch=ctx.epoch, broker_id=broker_id,
        outcome="ok" if not remaining else "error",
        note=(f"Controlled shutdown of broker {broker_id}: it leads nothing with RF > 1 any more, so it may stop."
              if not remaining else
              f"Controlled shutdown of broker {broker_id}: it still leads {[str(tp) for tp in remaining]} because "
              f"no other ISR member is available."),
        detail={"remaining": [str(tp) for tp in remaining]},
    )])
    return Done(ctx, remaining)
