"""The ingested table: each log parsed once; later runs read only what is new or changed, and
forget what was removed — always with the numbers of a plain-Python count of the directory as
it is. Runs in this process, on the suite's SparkSession, over the logs of the end-to-end run
(real scripts, derived sessions, a damaged line, a torn log, two copies of sessions)."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from backend.stats import baseline, ingest, table
from backend.stats.job import run_job
from backend.stats.synthetic import load_log, write_log
from tests.stats.test_end_to_end import _close


@pytest.fixture
def replays(stats_run, tmp_path):
    directory = tmp_path / "replays"
    shutil.copytree(stats_run[0], directory)
    return directory


def run(spark, replays, tmp_path) -> dict:
    summary = run_job(replays, tmp_path / "out", spark=spark, stream=None)
    assert summary == json.loads((tmp_path / "out" / "summary.json").read_text())
    return summary


def assert_counts_like_python(summary: dict, replays) -> None:
    expected = baseline.compute(replays)
    for key in ("files", "bytes", "lines", "records", "sessions", "sessions_by_mode", "duplicate_copies"):
        assert summary["input"][key] == expected["input"][key], key
    assert summary["malformed"]["by_reason"] == expected["malformed"]["by_reason"]
    for key, want in expected["headline"].items():
        assert _close(summary["headline"][key], want), f"{key}: {summary['headline'][key]} != {want}"


def test_a_second_run_with_nothing_new_reads_no_json(spark, replays, tmp_path):
    """After the first run every log is replaced by garbage of the same size and time: had the
    second run read any of it, its numbers would differ."""
    first = run(spark, replays, tmp_path)
    assert first["ingest"]["read_files"] == 12 and first["ingest"]["table"] == str(tmp_path / "out-table")
    assert_counts_like_python(first, replays)
    for path in replays.iterdir():
        stat = path.stat()
        path.write_bytes(b"x" * stat.st_size)
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    second = run(spark, replays, tmp_path)
    assert second["ingest"]["read_files"] == 0
    assert second["input"] == first["input"] and second["malformed"]["by_reason"] == first["malformed"]["by_reason"]
    assert second["headline"] == first["headline"]


def test_a_growing_log_is_read_again_and_a_removed_log_drops_out(spark, replays, tmp_path):
    header, records = load_log(replays / "derived-0-2.jsonl")
    live = replays / "live.jsonl"
    write_log(live, [dict(header, session_id="live"), *[dict(r, session_id="live") for r in records[:40]]])
    first = run(spark, replays, tmp_path)
    assert_counts_like_python(first, replays)

    write_log(live, [dict(header, session_id="live"), *[dict(r, session_id="live") for r in records]])
    (replays / "zombie_controller_fenced.jsonl").unlink(missing_ok=True)
    for path in replays.glob("*-script-*.jsonl"):  # the real script logs: remove one
        path.unlink()
        break
    (replays / "derived-1-2.jsonl").unlink()  # its imported copy now counts instead
    grown = run(spark, replays, tmp_path)
    assert grown["ingest"]["read_files"] == 1 and grown["ingest"]["removed"] == 2
    assert_counts_like_python(grown, replays)


def test_many_runs_are_merged_into_one_batch(spark, replays, tmp_path, monkeypatch):
    monkeypatch.setattr(ingest, "MAX_BATCHES", 2)
    aside = tmp_path / "aside"
    aside.mkdir()
    names = sorted(p.name for p in replays.glob("derived-*.jsonl"))[:3]
    for name in names:
        shutil.move(replays / name, aside / name)
    summaries = [run(spark, replays, tmp_path)]
    for name in names:  # three more runs, one new log each
        shutil.move(aside / name, replays / name)
        summaries.append(run(spark, replays, tmp_path))
    assert [s["ingest"]["read_files"] for s in summaries] == [9, 1, 1, 1]
    # Over two batches, all but the largest (the first run's) are merged: the small ones, each time.
    assert [s["ingest"]["compacted"] for s in summaries] == [0, 0, 2, 2]
    batches = {p.name for p in (tmp_path / "out-table" / "lines").glob("date=*/batch=*")}
    assert batches == {"batch=0", "batch=5"}, batches  # the first run's and the last merge's
    assert_counts_like_python(summaries[-1], replays)


def test_a_table_written_by_other_rules_is_rebuilt(spark, replays, tmp_path, monkeypatch):
    run(spark, replays, tmp_path)
    monkeypatch.setattr(table, "FORMAT", "another-format")
    rebuilt = run(spark, replays, tmp_path)
    assert rebuilt["ingest"]["read_files"] == 12
    assert_counts_like_python(rebuilt, replays)


def test_the_manifest_names_the_header_columns_the_parse_keeps():
    from backend.stats import load, manifest
    assert manifest.HEADER_COLUMNS == load.HEADER_COLUMNS


def test_the_fold_opens_each_log_by_the_name_spark_gives_it(spark, tmp_path, protocol_logs):
    """Each task of the rules' fold reads its logs itself, by Spark's name for each file: a URI,
    escaped where the name needs it (a space, a "%", an accent). Every log here breaks a rule, so
    a log not found, or read as another, changes the counts."""
    from urllib.parse import unquote

    from backend.stats.load import read_files
    from backend.stats.violations import session_violations, violations_of
    from tests.view.breaking import BREAKS, read_records
    from tests.view.breaking import write_log as write_broken

    want = {}
    for name, stem in (("two_controllers", "a log with spaces"), ("leader_outside_isr", "100% sûr"),
                       ("epoch_goes_down", "plain")):
        log_name, mutate, rule = BREAKS[name]
        path = write_broken(tmp_path / f"{stem}.jsonl", mutate(read_records(protocol_logs[log_name])),
                            protocol_logs[log_name])
        want[path.name] = session_violations(path.read_text(), [])
        assert want[path.name].get(rule, 0) >= 1
    files = [row.file for row in read_files(spark, str(tmp_path)).select("file").collect()]
    got: dict[int, dict] = {}
    for row in violations_of(spark, [(sk, file, []) for sk, file in enumerate(files)]).collect():
        got.setdefault(row.sk, {})[row.rule] = row.violations
    assert {unquote(files[sk].rsplit("/", 1)[-1]): rules for sk, rules in got.items()} == want
