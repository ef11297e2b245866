"""What students did in lessons: predictions, time per step, completion.

The ``lesson`` records come from the lesson runner (``backend/lessons/runner.py``):
``started`` / ``finished`` (subject ``lesson:<id>``, ``detail.completed`` on ``finished``),
``step_started`` / ``step_finished`` (``step``, ``op``), and ``answered`` (``step`` of the
``predict`` step, ``student`` — absent in a solo lesson —, ``answer``, ``correct`` — absent for
"I'm not sure" —, ``question``, the predict's id, and ``misconception``, the author's sentence for
the wrong choice picked). Functions take the usable records and return one row per event keyed
by the session key ``sk``.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

LESSON_SUBJECT = r"^lesson:(.+)$"


def _lesson(records: DataFrame, *states: str) -> DataFrame:
    return records.where((F.col("kind") == "lesson") & F.col("to_state").isin(*states))


def lesson_ids(records: DataFrame) -> DataFrame:
    """The lesson id a session's ``started`` record names (``lesson:<id>``), for sessions whose
    header has none. Columns: sk, started_lesson_id."""
    return (_lesson(records, "started")
            .groupBy("sk").agg(F.min(F.nullif(F.regexp_extract("subject", LESSON_SUBJECT, 1), F.lit("")))
                               .alias("started_lesson_id")))


def answers(records: DataFrame) -> DataFrame:
    """One row per answer to a ``predict`` step. ``answer_key`` is the answer trimmed and in
    lower case, so "Broker 1" and "broker 1 " count as one wrong answer. ``question`` is the
    predict's id (logs from before it was recorded: ``step N``); ``unsure``: "I'm not sure".
    Columns: sk, seq, step, question, answer_student, answer, answer_key, correct, unsure, misconception."""
    return (_lesson(records, "answered")
            .select("sk", "seq", "step",
                    F.coalesce("question", F.concat(F.lit("step "), F.col("step").cast("string"))).alias("question"),
                    F.col("student").alias("answer_student"), "answer",
                    F.lower(F.trim(F.coalesce("answer", F.lit("")))).alias("answer_key"), "correct",
                    F.col("correct").isNull().alias("unsure"), "misconception"))


def step_durations(records: DataFrame) -> DataFrame:
    """Time per lesson step: each ``step_started`` to the next record of the same step if that is
    its ``step_finished`` (a step that failed or was stopped has no duration and is left out).
    Columns: sk, step, op, started_seq, duration_ms."""
    steps = _lesson(records, "step_started", "step_finished")
    w = Window.partitionBy("sk", "step").orderBy("seq")
    paired = (steps.withColumn("next_state", F.lead("to_state").over(w))
              .withColumn("next_ts", F.lead("ts_ms").over(w)))
    return (paired.where((F.col("to_state") == "step_started") & (F.col("next_state") == "step_finished"))
            .select("sk", "step", "op", F.col("seq").alias("started_seq"),
                    (F.col("next_ts") - F.col("ts_ms")).alias("duration_ms")))


def lesson_progress(records: DataFrame) -> DataFrame:
    """Per session with lesson records: did the lesson start, finish, and finish completed
    (``detail.completed`` true on its ``finished`` record)? Columns: sk, started, finished, completed."""
    lesson = records.where(F.col("kind") == "lesson")
    return lesson.groupBy("sk").agg(
        F.max((F.col("to_state") == "started").cast("int")).cast("boolean").alias("started"),
        F.max((F.col("to_state") == "finished").cast("int")).cast("boolean").alias("finished"),
        F.coalesce(F.max(F.coalesce(F.col("completed"), F.lit(False)).cast("int")), F.lit(0))
        .cast("boolean").alias("completed"),
    )


def steps_reached(records: DataFrame) -> DataFrame:
    """For the completion funnel: each (session, step) that was started, and whether it finished.
    Columns: sk, step, reached (always true), step_finished."""
    steps = _lesson(records, "step_started", "step_finished")
    return steps.groupBy("sk", "step").agg(
        F.max((F.col("to_state") == "step_started").cast("int")).cast("boolean").alias("reached"),
        F.max((F.col("to_state") == "step_finished").cast("int")).cast("boolean").alias("step_finished"),
    ).where("reached")
