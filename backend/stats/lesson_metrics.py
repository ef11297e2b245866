"""What students did in lessons: predictions, time per step, completion.

The ``lesson`` records come from the lesson runner (``backend/lessons/runner.py``):
``started`` / ``finished`` (subject ``lesson:<id>``, ``detail.completed`` on ``finished``),
``step_started`` / ``step_finished`` (``step``, ``op``), and ``answered`` (``step`` of the
``predict`` step, ``student`` — absent in a solo lesson —, ``answer``, ``correct`` — absent for
"I'm not sure" —, ``question``, the predict's id, and ``misconception``, the author's sentence for
the wrong choice picked). Functions take the usable records and return one row per event keyed
by the session key ``sk`` (Arrow tables, as in ``cluster_metrics``).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from pyarrow.compute import field

from backend.stats.arrow_ops import group, lead, partitioned, true

LESSON_SUBJECT = r"^lesson:(?<lesson_id>.+)$"


def _lesson(records: pa.Table, *states: str) -> pa.Table:
    return records.filter((field("kind") == "lesson") & field("to_state").isin(list(states)))


def lesson_ids(records: pa.Table) -> pa.Table:
    """The lesson id a session's ``started`` record names (``lesson:<id>``), for sessions whose
    header has none. Columns: sk, started_lesson_id."""
    started = _lesson(records, "started")
    ids = pc.struct_field(pc.extract_regex(started["subject"], LESSON_SUBJECT), "lesson_id")  # null: no match
    return group(pa.table({"sk": started["sk"], "started_lesson_id": ids}), ["sk"], {"started_lesson_id": "min"})


def answers(records: pa.Table) -> pa.Table:
    """One row per answer to a ``predict`` step. ``answer_key`` is the answer trimmed and in
    lower case, so "Broker 1" and "broker 1 " count as one wrong answer. ``question`` is the
    predict's id (logs from before it was recorded: ``step N``); ``unsure``: "I'm not sure".
    Columns: sk, seq, step, question, answer_student, answer, answer_key, correct, unsure, misconception."""
    rows = _lesson(records, "answered")
    step_n = pc.binary_join_element_wise("step ", pc.cast(rows["step"], pa.string()), "")
    return pa.table({"sk": rows["sk"], "seq": rows["seq"], "step": rows["step"],
                     "question": pc.coalesce(rows["question"], step_n), "answer_student": rows["student"],
                     "answer": rows["answer"],
                     "answer_key": pc.utf8_lower(pc.utf8_trim(pc.fill_null(rows["answer"], ""), " ")),
                     "correct": rows["correct"], "unsure": pc.is_null(rows["correct"]),
                     "misconception": rows["misconception"]})


def step_durations(records: pa.Table) -> pa.Table:
    """Time per lesson step: each ``step_started`` to the next record of the same step if that is
    its ``step_finished`` (a step that failed or was stopped has no duration and is left out).
    Columns: sk, step, op, started_seq, duration_ms."""
    steps, starts = partitioned(_lesson(records, "step_started", "step_finished"), ["sk", "step"])
    paired = true(pc.and_kleene(pc.equal(steps["to_state"], "step_started"),
                                pc.equal(lead(steps["to_state"], starts), "step_finished")))
    duration = pc.subtract(lead(steps["ts_ms"], starts), steps["ts_ms"].combine_chunks())
    rows = steps.filter(paired)
    return pa.table({"sk": rows["sk"], "step": rows["step"], "op": rows["op"], "started_seq": rows["seq"],
                     "duration_ms": duration.filter(paired)})


def _any(rows: pa.Table, keys: list[str], flags: dict[str, pa.Array]) -> pa.Table:
    """Per group of ``keys``: is any of each flag true (null when all are null, as Spark's
    ``max`` of them)."""
    table = rows.select(keys)
    for name, flag in flags.items():
        table = table.append_column(name, flag)
    return group(table, keys, {name: "any" for name in flags})


def lesson_progress(records: pa.Table) -> pa.Table:
    """Per session with lesson records: did the lesson start, finish, and finish completed
    (``detail.completed`` true on its ``finished`` record)? Columns: sk, started, finished, completed."""
    lesson = records.filter(field("kind") == "lesson")
    state = lesson["to_state"]
    return _any(lesson, ["sk"], {"started": pc.equal(state, "started"), "finished": pc.equal(state, "finished"),
                                 "completed": pc.fill_null(lesson["completed"], False)})


def steps_reached(records: pa.Table) -> pa.Table:
    """For the completion funnel: each (session, step) that was started, and whether it finished.
    Columns: sk, step, reached (always true), step_finished."""
    steps = _lesson(records, "step_started", "step_finished")
    state = steps["to_state"]
    flags = _any(steps, ["sk", "step"], {"reached": pc.equal(state, "step_started"),
                                         "step_finished": pc.equal(state, "step_finished")})
    return flags.filter(true(flags["reached"]))
