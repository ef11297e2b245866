"""AlterIsr (KIP-497, inter.broker.protocol.version ≥ 2.7): a leader asks, the controller writes.

With 2.8's default protocol a partition leader no longer writes its ISR changes into
ZooKeeper: it sends the controller an AlterIsr request (the ISR it wants, the leader epoch and
the state znode version it knows), and the controller decides on its event thread
(``processAlterIsr``):

* the request comes from a broker it does not know at that broker epoch → ``STALE_BROKER_EPOCH``
  for the whole request (the runtime answers ``NOT_CONTROLLER`` when it is not the controller);
* per partition: unknown → ``UNKNOWN_TOPIC_OR_PARTITION``; an older leader epoch than the
  controller's → ``FENCED_LEADER_EPOCH`` (the leader was replaced); already that ISR → the state
  as it is; otherwise the controller writes the state znode itself, at the version the leader
  sent and with its own controller epoch, behind its epoch check — a znode changed since is
  ``INVALID_UPDATE_VERSION``.

Then every broker hears of the partitions (UpdateMetadata). After the answer, a reassignment
waiting for its new replicas to join the ISR may complete (:func:`complete_reassignments`).
The leader epoch never changes: an ISR change is not a leader change.
"""

from __future__ import annotations

from typing import Mapping

from ..model import LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition
from ..records import Record
from ..subjects import partition_subject
from . import reassignment
from .context import ControllerContext
from .plan import UpdatePartitionState
from .program import Done, Program, attempt, emit
from .request_batch import update_metadata

STALE_BROKER_EPOCH = "STALE_BROKER_EPOCH"
UNKNOWN_TOPIC_OR_PARTITION = "UNKNOWN_TOPIC_OR_PARTITION"
FENCED_LEADER_EPOCH = "FENCED_LEADER_EPOCH"
INVALID_UPDATE_VERSION = "INVALID_UPDATE_VERSION"
UNKNOWN_SERVER_ERROR = "UNKNOWN_SERVER_ERROR"
WRITE_ERRORS = {"bad_version": INVALID_UPDATE_VERSION}
"""A write's outcome as the partition's error (any other failure is ``UNKNOWN_SERVER_ERROR``)."""

PartitionResult = tuple[str, LeaderAndIsr | None]
"""``("NONE", the state now)`` or ``(error, None)``: one partition of the answer."""


def check_request(ctx: ControllerContext, broker_id: int, broker_epoch: int) -> str | None:
    """The whole request's error, or ``None``: the sender must be a live broker at that epoch."""
    broker = ctx.live_brokers.get(broker_id)
    return STALE_BROKER_EPOCH if broker is None or broker.epoch != broker_epoch else None


def decide(ctx: ControllerContext, proposed: Mapping[TopicPartition, LeaderAndIsr]
           ) -> tuple[dict[TopicPartition, PartitionResult], dict[TopicPartition, LeaderAndIsr]]:
    """Per partition: answered now (an error, or already in that state), or to be written."""
    answered: dict[TopicPartition, PartitionResult] = {}
    to_write: dict[TopicPartition, LeaderAndIsr] = {}
    for tp, new in proposed.items():
        current = ctx.partition_leadership_info.get(tp)
        if current is None:
            answered[tp] = (UNKNOWN_TOPIC_OR_PARTITION, None)
        elif new.leader_epoch < current.leader_and_isr.leader_epoch:
            answered[tp] = (FENCED_LEADER_EPOCH, None)
        elif (new.leader, new.leader_epoch, tuple(new.isr)) == (current.leader, current.leader_and_isr.leader_epoch,
                                                                 tuple(current.isr)):
            answered[tp] = ("NONE", current.leader_and_isr)  # equalsIgnoreZk: nothing to write
        else:
            to_write[tp] = new
    return answered, to_write


def process_alter_isr(ctx: ControllerContext, broker_id: int, proposed: Mapping[TopicPartition, LeaderAndIsr]
                      ) -> Program:
    """Returns ``Done(ctx, {partition: PartitionResult})``; the request's own check is done."""
    answered, to_write = decide(ctx, proposed)
    order = sorted(to_write)
    writes = [UpdatePartitionState(tp, LeaderIsrAndControllerEpoch(to_write[tp], ctx.epoch)) for tp in order]
    outcomes = yield from attempt(writes)
    written: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
    records = []
    for tp, outcome in zip(order, outcomes):
        if not outcome.ok:
            answered[tp] = (WRITE_ERRORS.get(outcome.outcome, UNKNOWN_SERVER_ERROR), None)
            continue
        new = to_write[tp].with_zk_version(outcome.zk_version)
        written[tp] = LeaderIsrAndControllerEpoch(new, ctx.epoch)
        answered[tp] = ("NONE", new)
        records.append(_isr_record(ctx, broker_id, tp, ctx.partition_leadership_info[tp].isr, new))
    ctx = ctx.with_leadership(written)
    yield from emit(records, update_metadata(ctx, ctx.live_or_shutting_down_broker_ids, sorted(proposed)))
    return Done(ctx, answered)


def complete_reassignments(ctx: ControllerContext, answered: Mapping[TopicPartition, PartitionResult]) -> Program:
    """After the answer: a successful ISR change may complete a reassignment (its new replicas
    are now in the ISR)."""
    for tp in sorted(answered):
        if answered[tp][0] == "NONE" and tp in ctx.partitions_being_reassigned:
            ctx, _ = yield from reassignment.maybe_complete_reassignment(ctx, tp)
    return Done(ctx)


def _isr_record(ctx: ControllerContext, leader: int, tp: TopicPartition, previous: tuple[int, ...],
                new: LeaderAndIsr) -> Record:
    how = "expanded" if len(new.isr) > len(previous) else "shrunk"
    return Record(
        kind="isr", subject=partition_subject(tp.topic, tp.partition), to_state=how, outcome="ok",
        controller_id=ctx.controller_id, controller_epoch=ctx.epoch, broker_id=leader, topic=tp.topic,
        partition=tp.partition, leader=new.leader, isr=new.isr, leader_epoch=new.leader_epoch,
        zk_version=new.zk_version,
        note=f"Controller {ctx.controller_id} wrote the ISR {list(new.isr)} of {tp} that leader {leader} asked for "
             f"(AlterIsr), at the znode version the leader knew, with its controller epoch {ctx.epoch}. The leader "
             f"epoch stays {new.leader_epoch}.",
        detail={"previous_isr": list(previous), "written_by": "controller"})
