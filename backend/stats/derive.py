"""Per-session event tables: what every dataset starts from, derived once per log at ingest.

Each metric is two steps: a *transform* that turns one session's records into event rows (its
failovers, offline windows, answers, step times …; ``cluster_metrics``, ``lesson_metrics``,
``sandbox_metrics``) and an *aggregation* of those rows over sessions, per scope
(``backend.stats.metrics``). The first step reads the records and needs only one session at a
time; a log, once ingested, never changes. So the ingest (``backend.stats.ingest``) runs every
transform once, over the logs it has just read, and stores the event rows beside the lines
(``events/<name>/batch=B``). The transforms run in the driver with Arrow (``pyarrow.compute``),
one day's kept lines at a time: for a class's day of logs they are ~20,000 rows, and the dozen
window-heavy Spark queries they used to be cost seconds of planning alone (issue 16,
docs/performance.md). A run then aggregates these small tables — a few percent of the
records — instead of reading, caching and attributing a million kept records again: that is what
makes the dashboard's Run over a semester of logs take seconds.

``EVENTS`` is the table from event table to transform; every transform takes the usable records
of some sessions (``records_of``, with their faults attributed, ``backend.stats.events``) and
returns rows keyed by ``sk``; ``SCHEMAS`` gives every table's columns and types (those the
Spark transforms had: the datasets read the same columns). Two more tables come from the ingest
itself, not from the records: ``violations`` (the rules' fold over each whole session,
``backend.stats.violations``) and ``malformed`` (the lines set aside).
"""

from __future__ import annotations

from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc
from pyarrow.compute import field

from backend.stats import cluster_metrics as cm
from backend.stats import lesson_metrics as lm
from backend.stats import sandbox_metrics as sm
from backend.stats.events import attribute_faults
from backend.stats.load import FILE_COLUMNS


def _user_faults(records: pa.Table) -> pa.Table:
    return sm.user_faults(records, cm.offline_windows(records))


EVENTS: dict[str, Callable[[pa.Table], pa.Table]] = {
    "lesson_ids": lm.lesson_ids,
    "failovers": cm.failovers,
    "offline_windows": cm.offline_windows,
    "elections": cm.elections,
    "data_losses": cm.data_losses,
    "fenced": cm.fenced,
    "answers": lm.answers,
    "step_durations": lm.step_durations,
    "lesson_progress": lm.lesson_progress,
    "steps_reached": lm.steps_reached,
    "user_faults": _user_faults,
}

NAMES = (*EVENTS, "violations", "malformed")
"""Every event table the ingest stores."""


def _schema(*fields: str) -> pa.Schema:
    """``"name:type"``, ``!`` after the type: never null."""
    types = {"long": pa.int64(), "int": pa.int32(), "str": pa.string(), "bool": pa.bool_()}
    out = []
    for f in fields:
        name, kind = f.split(":")
        out.append(pa.field(name, types[kind.rstrip("!")], nullable=not kind.endswith("!")))
    return pa.schema(out)


_EFFECT_COUNTS = [f"{e}:long!" for e in sm.EFFECTS]
SCHEMAS: dict[str, pa.Schema] = {
    "lesson_ids": _schema("sk:long", "started_lesson_id:str"),
    "failovers": _schema("sk:long", "deleted_seq:long", "elected_seq:long", "controller_epoch:int", "failover_ms:long"),
    "offline_windows": _schema("sk:long", "topic:str", "partition:int", "start_seq:long", "start_ts:long",
                               "end_seq:long", "duration_ms:long", "closed:bool!", "fault:str!", "fault_seq:long",
                               "fault_source:str"),
    "elections": _schema("sk:long", "seq:long", "election:str", "unclean:bool"),
    "data_losses": _schema("sk:long", "seq:long", "acks:str!", "messages:long!"),
    "fenced": _schema("sk:long", "seq:long", "what:str!"),
    "answers": _schema("sk:long", "seq:long", "step:int", "question:str", "answer_student:str", "answer:str",
                       "answer_key:str!", "correct:bool", "unsure:bool!", "misconception:str"),
    "step_durations": _schema("sk:long", "step:int", "op:str", "started_seq:long", "duration_ms:long"),
    "lesson_progress": _schema("sk:long", "started:bool", "finished:bool", "completed:bool!"),
    "steps_reached": _schema("sk:long", "step:int", "reached:bool", "step_finished:bool"),
    "user_faults": _schema("sk:long", "seq:long", "op:str", "applied:bool", *_EFFECT_COUNTS),
    "violations": _schema("sk:long", "rule:str", "violations:long"),
    "malformed": _schema("sk:long", "file:str", "line:int", "reason:str", "excerpt:str"),
}
"""Every event table's columns (``malformed``: a line set aside — its file's key and path,
1-based line number, reason, first characters)."""


def records_of(kept: pa.Table) -> pa.Table:
    """The usable records of kept lines (``backend.stats.load.kept_lines``): first lines and
    malformed lines left out, and the file's columns."""
    records = kept.filter(field("reason").is_null() & (field("line") > 0))
    return records.drop_columns([c for c in ("reason", "file", "excerpt", "line", *(c for c, _ in FILE_COLUMNS))
                                 if c in records.column_names])


def malformed_of(kept: pa.Table) -> pa.Table:
    """Lines set aside, as the ``malformed`` table."""
    bad = kept.filter(field("reason").is_valid())
    return pa.table({"sk": bad["sk"], "file": bad["file"], "line": pc.add(bad["line"], 1), "reason": bad["reason"],
                     "excerpt": bad["excerpt"]}).cast(SCHEMAS["malformed"])


def derive(kept: pa.Table) -> dict[str, pa.Table]:
    """Every event table but ``violations`` of some sessions' kept lines (all of each session's)."""
    records = attribute_faults(records_of(kept))
    out = {name: transform(records).select(SCHEMAS[name].names).cast(SCHEMAS[name])
           for name, transform in EVENTS.items()}
    return {**out, "malformed": malformed_of(kept)}
