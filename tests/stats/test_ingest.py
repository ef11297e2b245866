"""The ingested table: each log parsed once; later runs read only what is new or changed, and
forget what was removed — always with the numbers of a plain-Python count of the directory as
it is. Runs in this process, on the suite's SparkSession, over the logs of the end-to-end run
(real scripts, derived sessions, a damaged line, a torn log, two copies of sessions)."""

from __future__ import annotations

import json
import os
import shutil

import pyarrow.parquet as pq
import pytest

from backend.stats import baseline, ingest, table, violations
from backend.stats.job import WARM_UP_LOGS, run_job, warm_up
from backend.stats.output import read_json_dataset
from backend.stats.synthetic import load_log, write_log


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
        assert baseline.same_numbers(summary["headline"][key], want), f"{key}: {summary['headline'][key]} != {want}"


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


def test_a_log_that_grows_while_it_is_read_is_read_again_at_the_next_run(spark, replays, tmp_path, monkeypatch):
    """The app appends to a running session's log between the driver's look at its ends and
    Spark's read: Spark sees lines the driver did not, so the log counts as read but is marked to
    be read again, and the next run counts it as the plain count does."""
    header, records = load_log(replays / "derived-0-2.jsonl")
    live = replays / "live.jsonl"
    write_log(live, [dict(header, session_id="live"), *[dict(r, session_id="live") for r in records[:40]]])
    edges_table = ingest.edges_table

    def read_then_append(directory, names):
        ends = edges_table(directory, names)
        with live.open("a") as f:  # the session goes on
            f.write(json.dumps(dict(records[40], session_id="live"), separators=(",", ":")) + "\n")
        return ends

    monkeypatch.setattr(ingest, "edges_table", read_then_append)
    run(spark, replays, tmp_path)
    manifest = table.Table(tmp_path / "out-table").load()
    known = manifest.known()
    assert known["live.jsonl"][1] == -1, "a log seen to change while it was read must be read again"
    assert all(mtime != -1 for name, (_, mtime) in known.items() if name != "live.jsonl")
    monkeypatch.setattr(ingest, "edges_table", edges_table)
    again = run(spark, replays, tmp_path)
    assert again["ingest"]["read_files"] == 1
    assert_counts_like_python(again, replays)


def test_a_log_whose_name_needs_quoting_in_a_uri_counts(spark, replays, tmp_path):
    """Spark names a file by its URI ("a b" is "a%20b"): the manifest must name the log itself,
    or its sessions silently drop out while the plain count keeps them."""
    (replays / "derived-0-2.jsonl").rename(replays / "day 1 100% é.jsonl")
    (replays / "derived-0-0.jsonl").rename(replays / "day 0 50% é.jsonl")  # it has a damaged line
    summary = run(spark, replays, tmp_path)
    assert_counts_like_python(summary, replays)
    # The malformed lines name the file as it is on disk, not by its URI.
    files = {r["file"] for r in read_json_dataset(tmp_path / "out", "malformed")}
    assert str(replays / "day 0 50% é.jsonl") in files, files


def test_the_rules_fold_in_the_driver_and_on_the_executors_gives_the_same_rows(spark, replays, tmp_path, monkeypatch):
    """Local mode or a small batch folds in the driver, a cluster's semester on the executors:
    each must give the same rows (and some rule is broken in these logs, so the comparison says
    something)."""
    in_driver = []
    fold_logs = violations.fold_logs
    monkeypatch.setattr(violations, "fold_logs", lambda *args: in_driver.append(1) or fold_logs(*args))
    folded = {}
    for where, decide in (("driver", ingest.folds_in_driver), ("executors", lambda master, size: False)):
        monkeypatch.setattr(ingest, "folds_in_driver", decide)
        t = table.Table(tmp_path / where)
        ingest.ingest(lambda: spark, replays, t)
        rows = pq.read_table(t.event_batch("violations", 0))
        folded[where] = sorted(zip(*(rows[c].to_pylist() for c in rows.column_names)))
    assert in_driver == [1], "the local run was folded in the driver, the other not"
    assert folded["driver"] and folded["driver"] == folded["executors"]


def test_a_semester_on_a_cluster_is_folded_on_the_executors_and_everything_local_in_the_driver():
    big = ingest.FOLD_IN_DRIVER_BYTES + 1
    assert ingest.folds_in_driver("local[2]", big) and ingest.folds_in_driver("local", 10 * big)
    assert not ingest.folds_in_driver("spark://spark-master:7077", big)
    assert ingest.folds_in_driver("spark://spark-master:7077", ingest.FOLD_IN_DRIVER_BYTES)


def test_the_dashboards_warm_up_parses_a_few_logs_and_leaves_nothing_behind(spark, replays, tmp_path, monkeypatch):
    """Opening /stats runs the parse once on copies of the smallest logs, in a scratch directory:
    the directory of logs, and every table and output, stay as they were."""
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path / "scratch"))
    (tmp_path / "scratch").mkdir()
    (replays / "empty.jsonl").write_bytes(b"")  # no lines: nothing to warm with
    before = sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in replays.iterdir())
    summary = warm_up(spark, replays)
    assert summary["ingest"]["read_files"] == WARM_UP_LOGS and summary["input"]["records"] > 0
    smallest = sorted(p.stat().st_size for p in replays.iterdir() if p.stat().st_size)[:WARM_UP_LOGS]
    assert summary["input"]["bytes"] == sum(smallest)
    assert sorted((p.name, p.stat().st_size, p.stat().st_mtime_ns) for p in replays.iterdir()) == before
    assert list((tmp_path / "scratch").iterdir()) == [] and not (tmp_path / "out-table").exists()
    assert warm_up(spark, tmp_path / "no such directory") is None
    (tmp_path / "none").mkdir()
    assert warm_up(spark, tmp_path / "none") is None


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
