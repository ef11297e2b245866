"""ISR changes made by partition leaders (§16): ``processIsrChangeNotification``.

The controller never shrinks an ISR because a follower is slow — the partition's *leader*
does. Below inter.broker.protocol.version 2.7 it rewrites the state znode itself (same leader
and leader epoch, new ISR) and then drops a sequential znode under ``/isr_change_notification``
listing what changed (from 2.7 it asks the controller instead: ``alter_isr.py``). The
controller re-reads those partitions, tells every broker (UpdateMetadata), checks whether a
reassignment waiting for its new replicas to join the ISR can now complete, and deletes the
notifications it handled.
"""

from __future__ import annotations

from typing import Mapping

from ..model import LeaderIsrAndControllerEpoch, TopicPartition
from ..records import Record
from . import reassignment
from .context import ControllerContext
from .plan import DeleteIsrChangeNotifications
from .program import Done, Program, attempt, emit
from .request_batch import update_metadata


def process_isr_change_notification(
    ctx: ControllerContext, sequence_numbers: tuple[str, ...],
    states: Mapping[TopicPartition, LeaderIsrAndControllerEpoch],
) -> Program:
    """``states``: the partitions named by the notifications, as read from ZooKeeper now."""
    known = {tp: s for tp, s in states.items() if tp in ctx.partition_assignments}
    if known:
        changed = {tp: s for tp, s in known.items() if ctx.partition_leadership_info.get(tp) != s}
        ctx = ctx.with_leadership(known)
        yield from emit([Record(
            kind="controller", subject=f"broker:{ctx.controller_id}", to_state="isr_change_notification",
            controller_id=ctx.controller_id, controller_epoch=ctx.epoch,
            note=f"Leaders changed the ISR of {sorted(str(tp) for tp in known)}: the controller re-read them "
                 f"and tells every broker.",
            detail={str(tp): list(s.isr) for tp, s in sorted(changed.items())})],
            update_metadata(ctx, ctx.live_or_shutting_down_broker_ids, sorted(known)))
        for tp in sorted(known):
            if tp in ctx.partitions_being_reassigned:
                ctx, _ = yield from reassignment.maybe_complete_reassignment(ctx, tp)
    if sequence_numbers:
        yield from attempt([DeleteIsrChangeNotifications(tuple(sequence_numbers))])
    return Done(ctx)
