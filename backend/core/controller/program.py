"""A controller handler as a *sans-I/O program*, and running one (§20).

A program is a generator: it yields :class:`~.plan.Plan` values, receives the write outcomes
(or, for a plan that reads, the partition states read), and returns :class:`Done` — the
context after it and its result. The runtime drives it against ZooKeeper and the brokers
(``backend.runtime.controller``); the tests drive it with literal answers. ``emit``,
``put_events``, ``read_partition_states`` and ``attempt`` are the primitives programs are written with.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Generator, NamedTuple

from .plan import Plan

if TYPE_CHECKING:
    from .context import ControllerContext


class Done(NamedTuple):
    """What every program over the context returns: the context after it, and its result
    (``None`` when it has none). One shape, so neither a caller nor the runtime has to guess."""

    ctx: ControllerContext
    value: Any = None


Program = Generator[Plan, Any, Any]
"""A handler: yields plans, receives write outcomes (or read states), returns :class:`Done`.
The primitives below (``emit``, ``read_partition_states``, ``attempt``) return what they got."""


def emit(records=(), requests=()) -> Program:
    """Hand records and requests to the runtime (no writes)."""
    if records or requests:
        yield Plan(records=tuple(records), requests=tuple(requests))


def put_events(*events) -> Program:
    """Put controller events on the controller's own queue, processed after this one."""
    yield Plan(events=tuple(events))


def read_partition_states(partitions) -> Program:
    """Kafka's ``getTopicPartitionStates``: what ZooKeeper holds now (``None``: no znode),
    each state carrying its znode version as ``zk_version``."""
    partitions = tuple(partitions)
    if not partitions:
        return {}
    states = yield Plan(reads=partitions)
    return dict(states)


def attempt(writes) -> Program:
    """Attempt ``writes``; returns their outcomes in order."""
    writes = tuple(writes)
    if not writes:
        return ()
    outcomes = yield Plan(writes=writes)
    return tuple(outcomes)


# -- running a program ------------------------------------------------------------------------
@dataclass
class Finished:
    """How a program ended: its :class:`Done`, or ``controller_moved`` if a write was fenced."""

    value: Done | None = None
    controller_moved: bool = False


def run_program(program: Program, execute: Callable[[Plan], Any]) -> Finished:
    """Drive ``program``: ``execute`` carries out each plan and returns its write outcomes
    (or, for a plan that reads, the states read).

    The runtime passes an ``execute`` that talks to ZooKeeper and the brokers; tests pass one
    that answers from a table. A fenced write (``rejected_stale_epoch``) ends the program, as
    Kafka's ``ControllerMovedException`` ends the event's processing.
    """
    finished = Finished()
    try:
        plan = next(program)
        while True:
            if plan.reads and plan.writes:
                raise ValueError("a plan reads or writes, never both")
            answer = execute(plan)
            if not plan.reads:
                answer = tuple(answer)
                if len(answer) != len(plan.writes):
                    raise ValueError(f"{len(plan.writes)} writes planned but {len(answer)} outcomes given")
                if any(o.outcome == "rejected_stale_epoch" for o in answer):
                    program.close()
                    finished.controller_moved = True
                    return finished
            plan = program.send(answer)
    except StopIteration as stop:
        if not isinstance(stop.value, Done):
            raise TypeError(f"a program must return Done(ctx, value), not {stop.value!r:.80}") from None
        finished.value = stop.value
        return finished
