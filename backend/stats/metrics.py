"""The datasets the job writes, one per metric, each aggregated from the event tables.

``DATASETS`` lists them in the order the job computes them. Raw tables (one row per event,
with the session's dimensions) serve histograms and ad-hoc questions; aggregated tables have a
``scope`` column (``backend.stats.aggregate``). Every definition is stated once, in the
transform's docstring (the transforms made the event tables, ``backend.stats.derive``); the
README of the output is this table.

The event tables of a semester are a few hundred thousand rows, so the datasets are computed in
the driver with Arrow (``backend.stats.aggregate`` says why); no Spark job runs here.
"""

from __future__ import annotations

from functools import cached_property
from urllib.parse import unquote, urlsplit

import pyarrow as pa
import pyarrow.compute as pc

from backend.stats.aggregate import DIMS, SCOPES, Agg, count_where, distribution, ratio, rows, scoped

EFFECTS = ("elections", "offline_windows", "data_losses", "messages_lost", "fenced_writes", "stale_rejections")
"""``backend.stats.sandbox_metrics.EFFECTS`` (a test checks they agree; this module needs no pyspark)."""

DATASETS: dict[str, str] = {
    "sessions": "one row per replay log with a valid header: session_id, dimensions, lines, records, malformed",
    "failover_times": "raw: one row per /controller deletion, failover_ms null when no controller followed",
    "failover": "controller failover time: count, unresolved, mean/p50/p95/max ms, per scope",
    "offline_windows": "raw: one row per partition offline window, with the fault it is attributed to",
    "unavailability": "offline windows per fault type and (all): windows, open, closed, total/mean/p50/p95/max ms, per scope",
    "elections": "leader elections that elected a leader, per strategy and scope",
    "data_loss": "acknowledged messages lost (log records with outcome data_loss), per acks and scope",
    "fencing": "zombie writes fenced by ZooKeeper and requests rejected for a stale epoch, per scope",
    "violations": "Kafka's rules broken (the invariant panel's checks): sessions and violations per rule, per scope",
    "predictions": "answers to predict steps: answers, correct, wrong, accuracy per lesson and step, per scope",
    "wrong_answers": "the 3 most common wrong answers per lesson step (per lesson, per class)",
    "choices": "answers to each question per choice: answers, right (the cluster's answer), unsure, per scope",
    "misconceptions": "the 5 most common misconceptions per lesson: the wrong choice and its sentence (per lesson, "
                      "per class)",
    "step_times": "time per lesson step (step_started to step_finished), per lesson, step and op",
    "completion": "lessons started, finished, finished completed, completion rate, per scope",
    "funnel": "sessions that reached (started) and finished each lesson step, per scope",
    "sandbox_faults": "free play: faults students injected and what followed each before the next fault",
    "malformed": "lines set aside: file, line, reason, excerpt",
}


class Metrics:
    """The datasets of one job run. ``events`` are the event tables of the counted sessions
    (``backend.stats.derive``: name -> Arrow rows keyed by ``sk``), ``sessions`` one row per
    counted log with a valid header (``backend.stats.table.Table.sessions``)."""

    def __init__(self, events: dict[str, pa.Table], sessions: pa.Table) -> None:
        self.events = events
        self._sessions_input = sessions

    def build(self, name: str) -> pa.Table:
        if name not in DATASETS:
            raise KeyError(f"no dataset {name!r}; the datasets are {', '.join(DATASETS)}")
        return getattr(self, f"_{name}")()

    # -- shared pieces -------------------------------------------------------------------------
    @cached_property
    def dims(self) -> pa.Table:
        """sk -> session_id and the dimensions; a lesson session whose header names no lesson
        takes the id from its ``started`` record's subject."""
        named = self._sessions_input.join(self.events["lesson_ids"].select(["sk", "started_lesson_id"]), "sk",
                                          join_type="left outer")
        lesson = pc.coalesce(named["lesson_id"], named["started_lesson_id"])
        named = named.set_column(named.column_names.index("lesson_id"), "lesson_id", lesson)
        return named.select(["sk", "session_id", *DIMS])

    def with_dims(self, events: pa.Table) -> pa.Table:
        """``events`` with their session's dimensions (an inner join on ``sk``, which is unique in
        ``dims``), in the events' order. Looked up by position rather than with a hash join: on a
        10M table the 11 joins cost a warm Run ~0.3 CPU-s, the lookups a tenth of it (issue 16)."""
        at = pc.index_in(events["sk"], value_set=self.dims["sk"])
        found = pc.is_valid(at)
        rows, at = events.filter(found), at.filter(found)
        for name, column in zip(self.dims.column_names[1:], self.dims.drop_columns(["sk"]).take(at).columns):
            rows = rows.append_column(name, column)
        return rows

    @cached_property
    def failover_events(self) -> pa.Table:
        return self.with_dims(self.events["failovers"])

    @cached_property
    def windows(self) -> pa.Table:
        return self.with_dims(self.events["offline_windows"])

    @cached_property
    def answer_events(self) -> pa.Table:
        answers = self.with_dims(self.events["answers"])
        student = pc.coalesce(answers["answer_student"], answers["student"])
        return answers.set_column(answers.column_names.index("student"), "student", student)

    # -- the datasets ----------------------------------------------------------------------------
    def _sessions(self) -> pa.Table:
        """Records of a session = its lines - the header - its malformed lines."""
        bad = self.events["malformed"].group_by("sk").aggregate([("sk", "count")]).rename_columns(["sk", "malformed"])
        base = self._sessions_input.select(["sk", "session_id", *[d for d in DIMS if d != "lesson_id"], "file",
                                            "lines"]).join(self.dims.select(["sk", "lesson_id"]), "sk",
                                                                     join_type="inner")
        joined = base.join(bad, "sk", join_type="left outer")
        malformed = pc.fill_null(joined["malformed"], 0)
        return pa.table({**{c: joined[c] for c in ("session_id", *DIMS, "file", "lines")},
                         "records": pc.subtract(pc.subtract(joined["lines"], 1), malformed), "malformed": malformed})

    def _failover_times(self) -> pa.Table:
        return self.failover_events.select(["session_id", *DIMS, "deleted_seq", "elected_seq", "controller_epoch",
                                            "failover_ms"])

    def _failover(self) -> pa.Table:
        return scoped(self.failover_events,
                      [*distribution("failover_ms"), count_where(lambda t: pc.is_null(t["failover_ms"]), "unresolved")])

    def _offline_windows(self) -> pa.Table:
        return self.windows.select(["session_id", *DIMS, "topic", "partition", "fault", "start_seq", "end_seq",
                                    "duration_ms", "closed"])

    def _unavailability(self) -> pa.Table:
        """Per fault type, plus ``fault = (all)``: the distribution over every window."""
        aggs = [rows("windows"), count_where(lambda t: pc.invert(t["closed"]), "open"),
                *distribution("duration_ms", count_name="closed"), Agg("total_ms", "sum0", "duration_ms")]
        return scoped(self.windows, aggs, by=["fault"], total_over_by=True)

    def _elections(self) -> pa.Table:
        return scoped(self.with_dims(self.events["elections"]), [rows("elections")], by=["election"])

    def _data_loss(self) -> pa.Table:
        return scoped(self.with_dims(self.events["data_losses"]),
                      [rows("events"), Agg("messages_lost", "sum", "messages")], by=["acks"])

    def _fencing(self) -> pa.Table:
        return scoped(self.with_dims(self.events["fenced"]),
                      [count_where(lambda t: pc.equal(t["what"], "zombie_write"), "zombie_writes_fenced"),
                       count_where(lambda t: pc.equal(t["what"], "stale_request"), "stale_epoch_rejections")])

    def _violations(self) -> pa.Table:
        return scoped(self.with_dims(self.events["violations"]),
                      [rows("sessions"), Agg("violations", "sum", "violations")], by=["rule"])

    def _predictions(self) -> pa.Table:
        out = scoped(self.answer_events,
                     [rows("answers"), count_where(lambda t: t["correct"], "correct"),
                      count_where(lambda t: pc.invert(t["correct"]), "wrong")],
                     by=["lesson_id", "step"], scopes=("lesson", "class", "student", "cell"))
        graded = pc.add(out["correct"], out["wrong"])  # "I'm not sure" is neither: it does not count here
        return out.append_column("accuracy", ratio(out["correct"], graded))

    def _wrong_answers(self) -> pa.Table:
        wrong = self.answer_events.filter(pc.fill_null(pc.invert(self.answer_events["correct"]), False))
        top = self._most_common(wrong, ["step"], ["answer_key"], 3)
        return top.rename_columns(["answer" if c == "answer_key" else c for c in top.column_names])

    def _choices(self) -> pa.Table:
        return scoped(self.answer_events, [rows("answers"), count_where(lambda t: t["correct"], "right"),
                                           count_where(lambda t: t["unsure"], "unsure")],
                      by=["lesson_id", "question", "answer"], scopes=("lesson", "class", "cell"))

    def _misconceptions(self) -> pa.Table:
        with_one = self.answer_events.filter(pc.is_valid(self.answer_events["misconception"]))
        return self._most_common(with_one, [], ["question", "answer", "misconception"], 5)

    @staticmethod
    def _most_common(events: pa.Table, within: list[str], what: list[str], n: int) -> pa.Table:
        """The ``n`` most frequent values of ``what`` per lesson (and ``within``), per lesson and per
        class: columns scope, the dimensions, lesson_id, ``within``, ``what``, count, rank (ties
        broken by ``what``, ascending, nulls first)."""
        parts = []
        for scope in ("lesson", "class"):
            keys = list(dict.fromkeys([*SCOPES[scope], "lesson_id", *within]))
            counts = events.group_by([*keys, *what], use_threads=False).aggregate([([], "count_all")])
            ordered = counts.sort_by([*[(k, "ascending", "at_start") for k in keys], ("count_all", "descending"),
                                      *[(w, "ascending", "at_start") for w in what]])
            ranks, previous, rank = [], None, 0
            for group in zip(*[ordered[k].to_pylist() for k in keys]):
                rank = rank + 1 if group == previous else 1
                previous = group
                ranks.append(rank)
            top = ordered.append_column("rank", pa.array(ranks, pa.int32())).filter(
                pc.less_equal(pa.array(ranks, pa.int32()), n))
            m = top.num_rows
            dims = {d: top[d] if d in keys else pa.nulls(m, pa.string()) for d in DIMS if d != "lesson_id"}
            parts.append(pa.table({"scope": pa.array([scope] * m, pa.string()), **dims, "lesson_id": top["lesson_id"],
                                   **{c: top[c] for c in [*within, *what]}, "count": top["count_all"],
                                   "rank": top["rank"]}))
        return pa.concat_tables(parts)

    def _step_times(self) -> pa.Table:
        return scoped(self.with_dims(self.events["step_durations"]), distribution("duration_ms"),
                      by=["lesson_id", "step", "op"], scopes=("lesson", "class"))

    def _completion(self) -> pa.Table:
        out = scoped(self.with_dims(self.events["lesson_progress"]),
                     [count_where(lambda t: t["started"], "started"), count_where(lambda t: t["finished"], "finished"),
                      count_where(lambda t: t["completed"], "completed")])
        return out.append_column("completion_rate", ratio(out["completed"], out["started"]))

    def _funnel(self) -> pa.Table:
        return scoped(self.with_dims(self.events["steps_reached"]),
                      [rows("reached"), count_where(lambda t: t["step_finished"], "finished")],
                      by=["lesson_id", "step"], scopes=("lesson", "class", "cell"))

    def _sandbox_faults(self) -> pa.Table:
        faults = self.with_dims(self.events["user_faults"])
        faults = faults.filter(pc.fill_null(pc.equal(faults["mode"], "sandbox"), False))
        return scoped(faults, [rows("injected"), count_where(lambda t: t["applied"], "applied"),
                               *[Agg(e, "sum", e) for e in EFFECTS]],
                      by=["op"], scopes=("overall", "class", "student", "cell"))

    def _malformed(self) -> pa.Table:
        bad = self.events["malformed"].select(["file", "line", "reason", "excerpt"])
        files = bad["file"].combine_chunks().dictionary_encode()  # a log's lines share one path
        paths = pa.array([log_path(uri) for uri in files.dictionary.to_pylist()], pa.string())
        return bad.set_column(0, "file", pc.take(paths, files.indices))


def log_path(uri: str | None) -> str | None:
    """A replay log as an instructor names it: Spark calls a local file by its URI
    (``file:/srv/replays/day%201.jsonl``); the path is what ``ls`` shows (``/srv/replays/day
    1.jsonl``). A cluster's file (``hdfs://…``) keeps its URI, the only name it has."""
    if uri is None:
        return None
    parts = urlsplit(uri)
    return unquote(parts.path) if parts.scheme == "file" else uri
