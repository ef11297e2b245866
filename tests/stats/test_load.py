"""Reading replay logs: every line's number, reason and columns, from real files, and the
positional rules (the header is line 1, a last line without a newline is torn) — counted as the
plain-Python reader counts them, also for odd files."""

from __future__ import annotations

import json

import pytest
from pyspark.sql import Row
from pyspark.sql import functions as F
from pyspark.testing import assertDataFrameEqual

from backend.stats import baseline
from backend.stats.ingest import ingest
from backend.stats.edges import edges_table
from backend.stats.load import KEPT_SCHEMA, kept_lines, read_ends, read_lines
from backend.stats.session import one_split_per_file
from backend.stats.table import Table

HEADER = '{"kind":"session","v":1,"session_id":"s1","mode":"lesson","started_ms":1795251311958,"lesson_id":"l1",' \
         '"cluster":{"brokers":[0]},"app_version":"0.1.0"}'
GOOD = '{"kind":"zk","subject":"znode:/controller","v":1,"session_id":"s1","seq":0,"ts_ms":5,"to_state":"deleted"}'
NOISE = '{"kind":"replica","subject":"replica:t-0/1","v":1,"session_id":"s1","seq":1,"ts_ms":6,"to_state":"OnlineReplica"}'


def load(spark, directory, batch=0):
    """The kept lines of the logs in ``directory`` (small files: Spark splits none of them)."""
    names = sorted(p.name for p in directory.glob("*.jsonl"))
    lines = read_lines(spark, str(directory))
    ends = read_ends(spark, edges_table(directory, names), lines, directory.with_name(directory.name + "-edges.parquet"))
    return kept_lines(lines, ends, batch)


def test_parse_lines_sets_damaged_lines_aside_with_a_reason(spark, tmp_path):
    text = "\n".join([HEADER, GOOD, NOISE, "{not json", "", GOOD.replace('"seq":0', '"seq":"x"'),
                      GOOD.replace('"kind":"zk",', ""), GOOD.replace('"v":1', '"v":2'),
                      GOOD.replace('"zk"', '"session"'), GOOD.replace('"s1"', '"s2"'), GOOD[:40]])
    (tmp_path / "a.jsonl").write_text(text)
    (tmp_path / "b.jsonl").write_text(GOOD + "\n" + GOOD + "\n")
    lines = load(spark, tmp_path)
    got = lines.where(F.col("reason").isNotNull()).select(
        F.regexp_extract("file", r"/(\w)\.jsonl$", 1).alias("f"), (F.col("line") + 1).alias("line"), "reason")
    assertDataFrameEqual(got, [
        Row(f="a", line=4, reason="bad_json"), Row(f="a", line=5, reason="bad_json"),
        Row(f="a", line=6, reason="wrong_type"), Row(f="a", line=7, reason="missing_field"),
        Row(f="a", line=8, reason="bad_version"), Row(f="a", line=9, reason="unknown_kind"),
        Row(f="a", line=10, reason="other_session"), Row(f="a", line=11, reason="truncated"),
        Row(f="b", line=1, reason="missing_header"), Row(f="b", line=2, reason="missing_header")])
    header = lines.where("header_ok").select("line", "session_id", "mode", "lesson_id", "date", "n_lines")
    assert header.collect() == [Row(line=0, session_id="s1", mode="lesson", lesson_id="l1", date="2026-11-21",
                                    n_lines=11)]
    records = lines.where(F.col("reason").isNull() & (F.col("line") > 0)).select("line", "kind", "subject").collect()
    assert records == [Row(line=1, kind="zk", subject="znode:/controller")]  # the replica record feeds no metric
    assert [(f.name, f.dataType) for f in lines.schema] == [(f.name, f.dataType) for f in KEPT_SCHEMA if f.name != "batch"]


def test_a_long_log_keeps_its_line_numbers_header_and_torn_end(spark, tmp_path):
    """Each record's line is its seq + 1 (the header is line 1); a line damaged in the middle and
    the torn last line are found where they are; a wrong type in a field no metric reads still
    sets the line aside; the counts equal the plain-Python reader's."""
    records = [json.loads(GOOD) | {"seq": n, "ts_ms": 1000 + n} for n in range(99)]
    lines = [HEADER] + [json.dumps(r, separators=(",", ":")) for r in records]
    lines[57] = lines[57][:30]  # line 58: cut short in the middle of the file
    lines[70] = lines[70].replace('"v":1', '"v":1,"zxid":"x"')  # line 71: zxid is read by no metric
    (tmp_path / "big.jsonl").write_text("\n".join(lines))  # the last line has no newline: torn
    (tmp_path / "small.jsonl").write_text(HEADER.replace('"s1"', '"s9"') + "\n")
    parsed = load(spark, tmp_path)
    rows = parsed.where(F.col("line") > 0).select("line", "seq", "reason").collect()
    firsts = parsed.where(F.col("line") == 0).select("n_lines", "header_ok").collect()
    assert sorted(firsts) == sorted([Row(n_lines=100, header_ok=True), Row(n_lines=1, header_ok=True)])
    usable = [r for r in rows if r.reason is None]
    assert len(usable) == 96 and all(r.line == r.seq + 1 for r in usable)
    assert sorted((r.line + 1, r.reason) for r in rows if r.reason) == [(58, "bad_json"), (71, "wrong_type"),
                                                                      (100, "truncated")]
    expected = baseline.compute(tmp_path)
    assert expected["malformed"]["by_reason"] == {"bad_json": 1, "wrong_type": 1, "truncated": 1}
    assert expected["input"]["lines"] == 101


def test_the_files_spark_reads_are_listed_in_one_call_as_spark_lists_them(spark, tmp_path):
    from backend.stats.load import _input_files
    for name in ("a b%1 é.jsonl", "plain.jsonl", "x+y.jsonl"):
        (tmp_path / name).write_text(HEADER + "\n")
    lines = read_lines(spark, str(tmp_path))
    assert sorted(_input_files(lines)) == sorted(lines.inputFiles()) and len(lines.inputFiles()) == 3


def test_spark_is_told_the_ends_schema_it_would_infer_from_the_drivers_parquet(spark, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "a.jsonl").write_text(HEADER + "\n" + GOOD)
    path = tmp_path / "ends.parquet"
    told = read_ends(spark, edges_table(logs, ["a.jsonl"]), read_lines(spark, str(logs)), path)
    inferred = spark.read.parquet(str(path))
    assert [(f.name, f.dataType) for f in told.schema] == [(f.name, f.dataType) for f in inferred.schema]
    assert told.collect() == inferred.collect()


def test_each_line_and_each_header_is_parsed_once(spark, tmp_path):
    """The plan holds two JSON parses, one of the lines and one of the files' first lines: the
    optimizer copies a parse into every expression that reads it when it may (a filter pushed
    down, projections collapsed), which once made the job parse a line 28 times."""
    (tmp_path / "a.jsonl").write_text(HEADER + "\n" + GOOD + "\n")
    plan = load(spark, tmp_path)._jdf.queryExecution().executedPlan().toString()
    assert plan.count("from_json(") == 2, plan


def test_a_lone_log_larger_than_a_cores_share_is_read_by_one_task(spark, tmp_path):
    """Alone in a batch, a 300 KB log is more than one core's share of it, and Spark would read
    it in two parts, whose lines would be numbered from two tasks' ids: within
    ``one_split_per_file`` it is read whole by one task, and numbered right."""
    records = [json.loads(GOOD) | {"seq": n, "ts_ms": 1000 + n} for n in range(3000)]
    lines = [HEADER] + [json.dumps(r, separators=(",", ":")) for r in records]
    lines[2500] = lines[2500][:30]
    log = tmp_path / "big.jsonl"
    log.write_text("\n".join(lines) + "\n")
    size = log.stat().st_size
    assert read_lines(spark, str(tmp_path)).rdd.getNumPartitions() > 1  # what Spark would do
    with one_split_per_file(spark, [size]):
        assert read_lines(spark, str(tmp_path)).rdd.getNumPartitions() == 1
        rows = load(spark, tmp_path).where(F.col("reason").isNotNull() | (F.col("line") == 0)).select(
            "line", "reason", "n_lines").collect()
    assert sorted(rows) == [Row(line=0, reason=None, n_lines=3001), Row(line=2500, reason="bad_json", n_lines=None)]
    assert spark.conf.get("spark.sql.files.minPartitionNum", None) is None  # Spark's settings are back


@pytest.mark.parametrize("damage", ["", "\n", "\n\n", HEADER, HEADER + "\n" + GOOD + "\r\n"])
def test_odd_files_count_as_the_plain_python_reader_counts_them(spark, tmp_path, damage):
    """Counted as the job counts: parsed, ingested, summed from the manifest."""
    replays = tmp_path / "replays"
    replays.mkdir()
    (replays / "odd.jsonl").write_text(damage)
    (replays / "ok.jsonl").write_text(HEADER.replace('"s1"', '"s7"') + "\n")
    manifest, _ = ingest(lambda: spark, replays, Table(tmp_path / "table"))
    counts, expected = manifest.counts(), baseline.compute(replays)
    assert counts["lines"] == expected["input"]["lines"]
    assert counts["malformed_by_reason"] == expected["malformed"]["by_reason"]
