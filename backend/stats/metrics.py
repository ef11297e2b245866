"""The datasets the job writes, one per metric, each aggregated from the event tables.

``DATASETS`` lists them in the order the job computes them. Raw tables (one row per event,
with the session's dimensions) serve histograms and ad-hoc questions; aggregated tables have a
``scope`` column (``backend.stats.aggregate``). Every definition is stated once, in the
transform's docstring (the transforms made the event tables, ``backend.stats.derive``); the
README of the output is this table.
"""

from __future__ import annotations

from functools import cached_property

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from backend.stats import sandbox_metrics as sm
from backend.stats.aggregate import DIMS, SCOPES, count_where, distribution, ratio, scoped

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
    (``backend.stats.derive``: name -> rows keyed by ``sk``), ``sessions`` one row per counted
    log with a valid header (``backend.stats.table.Table.sessions``); the event tables joined
    with the sessions' dimensions that several datasets read are cached."""

    def __init__(self, events: dict[str, DataFrame], sessions: DataFrame) -> None:
        self.events = events
        self._sessions_input = sessions
        self._cached: list[DataFrame] = []

    def build(self, name: str) -> DataFrame:
        if name not in DATASETS:
            raise KeyError(f"no dataset {name!r}; the datasets are {', '.join(DATASETS)}")
        return getattr(self, f"_{name}")()

    def prepare(self) -> None:
        """Build the shared intermediate frames now, in this thread, before datasets are built
        in several threads at once (each is then only read), and fill the cache of the records
        and the session dimensions once rather than in several threads at the same time."""
        for name in ("dims", "failover_events", "windows", "answer_events"):
            getattr(self, name)
        self.dims.count()

    def release(self) -> None:
        for df in self._cached:
            df.unpersist()
        self._cached.clear()

    def _cache(self, df: DataFrame) -> DataFrame:
        self._cached.append(df.cache())
        return df

    # -- shared pieces -------------------------------------------------------------------------
    @cached_property
    def dims(self) -> DataFrame:
        """sk -> session_id and the dimensions; a lesson session whose header names no lesson
        takes the id from its ``started`` record's subject."""
        named = self._sessions_input.join(self.events["lesson_ids"], "sk", "left").withColumn(
            "lesson_id", F.coalesce("lesson_id", "started_lesson_id"))
        return self._cache(named.select("sk", "session_id", *DIMS))

    def with_dims(self, events: DataFrame) -> DataFrame:
        return events.join(F.broadcast(self.dims), "sk")

    @cached_property
    def failover_events(self) -> DataFrame:
        return self._cache(self.with_dims(self.events["failovers"]))

    @cached_property
    def windows(self) -> DataFrame:
        return self._cache(self.with_dims(self.events["offline_windows"]))

    @cached_property
    def answer_events(self) -> DataFrame:
        answers = self.with_dims(self.events["answers"])
        return self._cache(answers.withColumn("student", F.coalesce("answer_student", "student")))

    # -- the datasets ----------------------------------------------------------------------------
    def _sessions(self) -> DataFrame:
        """Records of a session = its lines - the header - its malformed lines."""
        bad = self.events["malformed"].groupBy("sk").agg(F.count(F.lit(1)).alias("malformed"))
        base = self._sessions_input.drop("lesson_id").join(self.dims.select("sk", "lesson_id"), "sk")
        malformed = F.coalesce("malformed", F.lit(0))
        return base.join(bad, "sk", "left").select(
            "session_id", *DIMS, "file", "lines", (F.col("lines") - 1 - malformed).alias("records"),
            malformed.alias("malformed"))

    def _failover_times(self) -> DataFrame:
        return self.failover_events.select("session_id", *DIMS, "deleted_seq", "elected_seq",
                                           "controller_epoch", "failover_ms")

    def _failover(self) -> DataFrame:
        return scoped(self.failover_events,
                      [*distribution("failover_ms"), count_where(F.col("failover_ms").isNull(), "unresolved")])

    def _offline_windows(self) -> DataFrame:
        return self.windows.select("session_id", *DIMS, "topic", "partition", "fault", "start_seq", "end_seq",
                                   "duration_ms", "closed")

    def _unavailability(self) -> DataFrame:
        """Per fault type, plus ``fault = (all)``: the distribution over every window."""
        aggs = [F.count(F.lit(1)).alias("windows"), count_where(~F.col("closed"), "open"),
                *distribution("duration_ms", count_name="closed"),
                F.coalesce(F.sum("duration_ms"), F.lit(0)).alias("total_ms")]
        return scoped(self.windows, aggs, by=["fault"], total_over_by=True)

    def _elections(self) -> DataFrame:
        return scoped(self.with_dims(self.events["elections"]), [F.count(F.lit(1)).alias("elections")],
                      by=["election"])

    def _data_loss(self) -> DataFrame:
        return scoped(self.with_dims(self.events["data_losses"]),
                      [F.count(F.lit(1)).alias("events"), F.sum("messages").alias("messages_lost")], by=["acks"])

    def _fencing(self) -> DataFrame:
        return scoped(self.with_dims(self.events["fenced"]),
                      [count_where(F.col("what") == "zombie_write", "zombie_writes_fenced"),
                       count_where(F.col("what") == "stale_request", "stale_epoch_rejections")])

    def _violations(self) -> DataFrame:
        return scoped(self.with_dims(self.events["violations"]),
                      [F.count(F.lit(1)).alias("sessions"), F.sum("violations").alias("violations")], by=["rule"])

    def _predictions(self) -> DataFrame:
        out = scoped(self.answer_events,
                     [F.count(F.lit(1)).alias("answers"), count_where(F.col("correct"), "correct"),
                      count_where(~F.col("correct"), "wrong")],
                     by=["lesson_id", "step"], scopes=("lesson", "class", "student", "cell"))
        graded = F.col("correct") + F.col("wrong")  # "I'm not sure" is neither: it does not count here
        return out.withColumn("accuracy", F.when(graded > 0, F.col("correct") / graded))

    def _wrong_answers(self) -> DataFrame:
        top = self._most_common(self.answer_events.where(~F.col("correct")), ["step"], ["answer_key"], 3)
        return top.withColumnRenamed("answer_key", "answer")

    def _choices(self) -> DataFrame:
        return scoped(self.answer_events, [F.count(F.lit(1)).alias("answers"), count_where(F.col("correct"), "right"),
                                           count_where(F.col("unsure"), "unsure")],
                      by=["lesson_id", "question", "answer"], scopes=("lesson", "class", "cell"))

    def _misconceptions(self) -> DataFrame:
        with_one = self.answer_events.where(F.col("misconception").isNotNull())
        return self._most_common(with_one, [], ["question", "answer", "misconception"], 5)

    @staticmethod
    def _most_common(events: DataFrame, within: list[str], what: list[str], n: int) -> DataFrame:
        """The ``n`` most frequent values of ``what`` per lesson (and ``within``), per lesson and per
        class: columns scope, the dimensions, lesson_id, ``within``, ``what``, count, rank."""
        parts = []
        for scope in ("lesson", "class"):
            keys = list(dict.fromkeys([*SCOPES[scope], "lesson_id", *within]))
            counts = events.groupBy(*keys, *what).agg(F.count(F.lit(1)).alias("count"))
            rank = F.row_number().over(Window.partitionBy(*keys).orderBy(F.desc("count"), *what))
            top = counts.withColumn("rank", rank).where(F.col("rank") <= n)
            dims = [F.col(d) if d in keys else F.lit(None).cast("string").alias(d) for d in DIMS if d != "lesson_id"]
            parts.append(top.select(F.lit(scope).alias("scope"), *dims, "lesson_id", *within, *what, "count", "rank"))
        return parts[0].unionByName(parts[1])

    def _step_times(self) -> DataFrame:
        return scoped(self.with_dims(self.events["step_durations"]), distribution("duration_ms"),
                      by=["lesson_id", "step", "op"], scopes=("lesson", "class"))

    def _completion(self) -> DataFrame:
        progress = self.with_dims(self.events["lesson_progress"])
        out = scoped(progress, [count_where(F.col("started"), "started"), count_where(F.col("finished"), "finished"),
                                count_where(F.col("completed"), "completed")])
        return out.withColumn("completion_rate", ratio("completed", "started"))

    def _funnel(self) -> DataFrame:
        return scoped(self.with_dims(self.events["steps_reached"]),
                      [F.count(F.lit(1)).alias("reached"), count_where(F.col("step_finished"), "finished")],
                      by=["lesson_id", "step"], scopes=("lesson", "class", "cell"))

    def _sandbox_faults(self) -> DataFrame:
        faults = self.with_dims(self.events["user_faults"]).where(F.col("mode") == "sandbox")
        return scoped(faults, [F.count(F.lit(1)).alias("injected"), count_where(F.col("applied"), "applied"),
                               *[F.sum(e).alias(e) for e in sm.EFFECTS]],
                      by=["op"], scopes=("overall", "class", "student", "cell"))

    def _malformed(self) -> DataFrame:
        return self.events["malformed"].select("file", "line", "reason", "excerpt")
