"""A statistics run with nothing new starts no JVM (issue 16): the datasets are aggregated in the
driver with Arrow from the ingested table, so only logs to parse (or batches to merge) need
Spark. Runs the job in a fresh interpreter, as ``kclab stats`` does, over a copy of the shared
end-to-end run's logs and table, and asks that interpreter whether a SparkContext exists."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

from backend.stats.output import read_json_dataset
from tests.stats.conftest import ROOT

PROBE = """
import sys
from backend.stats.job import main
status = main(sys.argv[1:])
from pyspark import SparkContext
from pyspark.sql import SparkSession
print("SPARK", SparkContext._active_spark_context is not None or SparkSession.getActiveSession() is not None)
sys.exit(status)
"""


def run_in_fresh_process(*args) -> tuple[bool, str]:
    job = subprocess.run([sys.executable, "-c", PROBE, "--master", "local[2]", *map(str, args)], cwd=ROOT,
                         capture_output=True, text=True, timeout=400)
    assert job.returncode == 0, job.stderr[-3000:]
    return job.stdout.splitlines()[-1] == "SPARK True", job.stderr


def test_a_run_with_nothing_new_starts_no_spark_and_writes_the_same_datasets(stats_run, tmp_path):
    replays, out, _ = stats_run
    shutil.copytree(out.with_name(out.name + "-table"), tmp_path / "table")
    again = tmp_path / "again"
    started, stderr = run_in_fresh_process("--replays", replays, "--out", again, "--table", tmp_path / "table")
    assert not started, "a run with nothing to parse started a SparkSession"
    first, second = (json.loads((d / "summary.json").read_text()) for d in (out, again))
    assert second["ingest"]["read_files"] == 0 and second["timings_s"]["spark_session"] == 0
    assert second["spark"]["default_parallelism"] is None and second["spark"]["master"] == "local[2]"
    assert second["spark"].keys() == first["spark"].keys() and second["timings_s"].keys() == first["timings_s"].keys()
    for key in ("input", "malformed", "headline", "misconceptions", "filters", "datasets"):
        assert second[key] == first[key], key
    for name in first["datasets"]:
        assert read_json_dataset(again, name) == read_json_dataset(out, name), name
    phases = len(first["datasets"]) + 3  # ingest, load, the datasets, summary
    assert f"stats [{phases}/{phases}] summary: done in" in stderr  # the progress reached its end


def test_a_run_with_a_new_log_starts_spark_to_parse_it(stats_run, tmp_path):
    replays, out, _ = stats_run
    shutil.copytree(out.with_name(out.name + "-table"), tmp_path / "table")
    shutil.copytree(replays, tmp_path / "replays")
    shutil.copy(tmp_path / "replays" / "derived-0-2.jsonl", tmp_path / "replays" / "new-copy.jsonl")
    started, _ = run_in_fresh_process("--replays", tmp_path / "replays", "--out", tmp_path / "again",
                                      "--table", tmp_path / "table")
    summary = json.loads((tmp_path / "again" / "summary.json").read_text())
    assert started and summary["ingest"]["read_files"] == 1 and summary["timings_s"]["spark_session"] > 0
    assert summary["spark"]["default_parallelism"] == 2
    assert summary["input"]["duplicate_copies"] == json.loads((out / "summary.json").read_text())["input"]["duplicate_copies"] + 1
