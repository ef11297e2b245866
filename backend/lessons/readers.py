"""Where a lesson question's answer is read, one reader per answer source (a table from name to
function): the cluster's view (a partition's field, the controller, a znode's data), the last
produce's error, the znodes that changed, the timed events of the lesson, a record that came or
not. Each reader gets the runner, the ``answer:`` mapping and what the runner noted when the
question was asked (``since``: the bus's seq then; ``timed``: the records a timed question
compares; ``znodes``: the tree's versions then)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from backend.core.dispatch import dispatch_table
from backend.lessons.answers import matches
from backend.lessons.vocabulary import ANSWER_SOURCES
from backend.zk.znode_decoder import decode_znode

if TYPE_CHECKING:
    from backend.lessons.runner import LessonRunner


def source_of(answer: dict) -> str:
    return next(k for k in ANSWER_READERS if k in answer)


def _read_partition(runner: LessonRunner, source: dict, question: dict) -> Any:
    return runner.cluster.inspect()["partitions"].get(source["partition"], {}).get(source["field"])


def _read_controller(runner: LessonRunner, source: dict, question: dict) -> Any:
    view = runner.cluster.inspect()
    return view["controller"] if source["controller"] == "id" else view["controller_epoch"]


def _read_znode(runner: LessonRunner, source: dict, question: dict) -> Any:
    data = runner.cluster.inspect([source["znode"]])["znodes"].get(source["znode"])
    return None if data is None else decode_znode(data)[0]  # None: no such znode


def _read_produce(runner: LessonRunner, source: dict, question: dict) -> Any:
    return runner.cluster.producer.last_error


def _read_znodes_changed(runner: LessonRunner, source: dict, question: dict) -> Any:
    before, after = question["znodes"], runner.cluster.znode_versions()
    return sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))


def _event_times(question: dict) -> list[float]:
    """The timed records' ``detail.ms``, summed per event (their ``cause_seq``), in order."""
    per_event: dict[int | None, float] = {}
    for record in question["timed"]:
        per_event[record.cause_seq] = per_event.get(record.cause_seq, 0.0) + (record.detail or {}).get("ms", 0.0)
    return list(per_event.values())


def _band(question: dict, bands: list[float], value: float) -> str:
    return question["step"].args["choices"][sum(1 for limit in bands if value >= limit)]


def _read_duration(runner: LessonRunner, source: dict, question: dict) -> Any:
    """The band (a choice) of the first timed event's milliseconds; ``None`` until there is one."""
    times = _event_times(question)
    return _band(question, source["duration"]["bands"], times[0]) if times else None


def _read_speedup(runner: LessonRunner, source: dict, question: dict) -> Any:
    """The band (a choice) of first ÷ last timed event; ``None`` until there are two."""
    times = _event_times(question)
    if len(times) < 2 or times[-1] <= 0:
        return None
    return _band(question, source["speedup"]["bands"], times[0] / times[-1])


def _read_seen(runner: LessonRunner, source: dict, question: dict) -> Any:
    return "yes" if any(matches(r, source["seen"]) for r in runner.bus.since(question["since"])) else "no"


def _read_rule_broken(runner: LessonRunner, source: dict, question: dict) -> Any:
    """The first of Kafka's rules (``backend/view/rules.py``) that broke after the question."""
    return runner.rules.first_broken_since(question["since"]) or "none"


def _read_record(runner: LessonRunner, source: dict, question: dict) -> Any:
    match, field = source["record"]["match"], source["record"]["field"]
    first = next((r for r in runner.bus.since(question["since"]) if matches(r, match)), None)
    return None if first is None else getattr(first, field)


ANSWER_READERS = dispatch_table(ANSWER_SOURCES, {
    "partition": _read_partition, "controller": _read_controller, "znode": _read_znode, "produce": _read_produce,
    "znodes_changed": _read_znodes_changed, "duration": _read_duration, "speedup": _read_speedup, "seen": _read_seen,
    "record": _read_record, "rule_broken": _read_rule_broken}, "answer sources")
