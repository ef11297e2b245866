"""Scopes, distributions and the "most common" ranking, computed in the driver with Arrow
(``backend.stats.aggregate``, ``backend.stats.metrics``), on small literal tables: the percentile
against the plain-Python baseline's, the grouping against hand-counted rows."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.compute as pc

from backend.stats import baseline
from backend.stats import sandbox_metrics as sm
from backend.stats.aggregate import Agg, count_where, distribution, rows, scoped
from backend.stats.metrics import EFFECTS, Metrics

DIM_TYPES = [("date", pa.string()), ("mode", pa.string()), ("class_id", pa.string()), ("lesson_id", pa.string()),
             ("student", pa.string())]


def _table(rows_: list[tuple], extra: list[tuple[str, pa.DataType]]) -> pa.Table:
    schema = pa.schema([*DIM_TYPES, *extra])
    return pa.Table.from_pylist([dict(zip(schema.names, r)) for r in rows_], schema=schema)


def test_scoped_aggregates_once_per_scope_with_the_other_dimensions_null():
    t = _table([("2026-11-20", "lesson", "A", "l1", "s1", 10), ("2026-11-20", "lesson", "A", "l1", "s2", 30),
                ("2026-11-21", "sandbox", "B", None, "s3", 50)], [("ms", pa.int64())])
    got = scoped(t, [rows("n"), Agg("total", "sum", "ms")], scopes=("overall", "class", "lesson"))
    assert got.column_names == ["scope", "date", "mode", "class_id", "lesson_id", "student", "n", "total"]
    assert sorted(got.to_pylist(), key=str) == sorted([
        dict(scope="overall", date=None, mode=None, class_id=None, lesson_id=None, student=None, n=3, total=90),
        dict(scope="class", date=None, mode=None, class_id="A", lesson_id=None, student=None, n=2, total=40),
        dict(scope="class", date=None, mode=None, class_id="B", lesson_id=None, student=None, n=1, total=50),
        dict(scope="lesson", date=None, mode=None, class_id=None, lesson_id="l1", student=None, n=2, total=40),
        dict(scope="lesson", date=None, mode=None, class_id=None, lesson_id=None, student=None, n=1, total=50)],
        key=str)
    assert got.schema.field("n").type == got.schema.field("total").type == pa.int64()


def test_scoped_total_over_by_adds_an_all_row_and_by_columns_follow_the_dimensions():
    t = _table([(None, None, None, None, None, "crash_broker", 10), (None, None, None, None, None, "crash_broker", 30),
                (None, None, None, None, None, "expire_session", 50)], [("fault", pa.string()), ("ms", pa.int64())])
    got = scoped(t, [rows("n"), Agg("total_ms", "sum0", "ms")], by=["fault"], scopes=("overall",),
                 total_over_by=True)
    assert got.column_names[-3:] == ["fault", "n", "total_ms"]
    assert {(r["fault"], r["n"], r["total_ms"]) for r in got.to_pylist()} == {
        ("crash_broker", 2, 40), ("expire_session", 1, 50), ("(all)", 3, 90)}


def test_scoped_over_no_rows_gives_no_rows_with_the_columns():
    t = _table([], [("ms", pa.int64())])
    got = scoped(t, distribution("ms"))
    assert got.num_rows == 0 and got.column_names[-5:] == ["count", "mean_ms", "p50_ms", "p95_ms", "max_ms"]


def test_distributions_equal_the_baselines_percentile_per_group_with_nulls_ignored():
    rng = random.Random(7)
    data = [(None, None, f"c{rng.randrange(5)}", None, None, rng.choice([None, rng.randrange(1000)]))
            for _ in range(400)] + [(None, None, "only-nulls", None, None, None)]
    got = scoped(_table(data, [("ms", pa.int64())]), distribution("ms"), scopes=("class",))
    for row in got.to_pylist():
        values = [ms for _, _, c, _, _, ms in data if c == row["class_id"] and ms is not None]
        want = baseline.distribution(values)
        assert row["count"] == want["count"] and row["max_ms"] == want["max_ms"], row
        for key in ("mean_ms", "p50_ms", "p95_ms"):
            assert (row[key] is None) == (want[key] is None) and (
                want[key] is None or abs(row[key] - want[key]) <= 1e-9 * max(1.0, abs(want[key]))), (key, row, want)
    assert {r["class_id"] for r in got.to_pylist() if r["count"] == 0} == {"only-nulls"}


def test_count_where_counts_a_null_condition_as_not_met():
    t = _table([(None,) * 5 + (True,), (None,) * 5 + (False,), (None,) * 5 + (None,)], [("ok", pa.bool_())])
    got = scoped(t, [count_where(lambda x: x["ok"], "yes"), count_where(lambda x: pc.invert(x["ok"]), "no")],
                 scopes=("overall",))
    assert got.select(["yes", "no"]).to_pylist() == [{"yes": 1, "no": 1}]


def test_most_common_ranks_by_count_then_value_and_keeps_the_top_n():
    picks = [("l1", "q", "b")] * 3 + [("l1", "q", "a")] * 3 + [("l1", "q", "c")] * 5 + [("l1", "q", "d")] + [
        ("l2", "q", "a")] * 2
    n = len(picks)
    t = pa.table({"date": [None] * n, "mode": ["lesson"] * n, "class_id": ["A"] * n, "student": ["s"] * n,
                  "lesson_id": [p[0] for p in picks], "question": [p[1] for p in picks],
                  "answer": [p[2] for p in picks]})
    got = Metrics._most_common(t, [], ["question", "answer"], 3)
    lesson = [(r["lesson_id"], r["answer"], r["count"], r["rank"]) for r in got.to_pylist() if r["scope"] == "lesson"]
    assert lesson == [("l1", "c", 5, 1), ("l1", "a", 3, 2), ("l1", "b", 3, 3), ("l2", "a", 2, 1)]
    assert {r["class_id"] for r in got.to_pylist() if r["scope"] == "class"} == {"A"}


def test_the_effects_named_here_are_the_sandbox_transforms():
    assert EFFECTS == sm.EFFECTS
