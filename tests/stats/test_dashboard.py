"""The statistics dashboard's HTTP side (Flask test client): empty states, the API serving the
job's real output (from the end-to-end run), filters, and one run at a time."""

from __future__ import annotations

import shutil
import threading

import pytest

from tests.support import running_app, wait_until


class BlockingJob:
    """A stand-in for the Spark job that reports progress and waits until released."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.started = threading.Event()
        self.fail = False

    def __call__(self, replays, out, progress):
        self.started.set()
        progress({"phase": "failover", "phase_index": 3, "phases": 17, "fraction": 0.2,
                  "stages": [{"id": 7, "name": "parquet", "tasks": 4, "done": 1, "active": 2, "failed": 0}]})
        assert self.release.wait(30), "the test never released the job"
        if self.fail:
            raise RuntimeError("disk full")
        return {"input": {"records": 42}, "timings_s": {"total": 1.5}}


INSTRUCTOR = "stats-instructor-token"


def stats_app(zk_hosts, data_dir, **config):
    """An app for the statistics pages: the instructor's token, no broadcaster."""
    return running_app(zk_hosts, data_dir, START_BROADCASTER=False, INSTRUCTOR_TOKEN=INSTRUCTOR, **config)


def instructor_client(app):
    """A test client that sends the instructor's token with every request."""
    client = app.test_client()
    client.environ_base["HTTP_X_INSTRUCTOR_TOKEN"] = INSTRUCTOR
    return client


@pytest.fixture
def empty(zk_hosts, tmp_path):
    with stats_app(zk_hosts, tmp_path, STATS_RUN=BlockingJob()) as app:
        yield instructor_client(app)


@pytest.fixture(scope="module")
def served(zk_hosts, stats_data):
    """An app whose DATA_DIR holds the end-to-end run's replay logs and statistics."""
    data = stats_data()
    job = BlockingJob()
    with stats_app(zk_hosts, data, STATS_RUN=job) as app:
        yield instructor_client(app), job, app
        job.release.set()


def test_without_replay_logs_the_page_and_api_say_so(empty):
    page = empty.get("/stats")
    assert page.status_code == 200 and b'src="/vendor/plotly.min.js"' in page.data and b"stats.js" in page.data
    summary = empty.get("/api/stats/summary")
    assert summary.status_code == 404 and summary.get_json()["replay_logs"] == 0
    assert empty.get("/api/stats/failover").status_code == 404
    run = empty.post("/api/stats/run")
    assert run.status_code == 400 and "no replay logs yet" in run.get_json()["error"]
    assert empty.get("/api/stats/progress").get_json()["state"] == "idle"


def test_statistics_are_for_the_instructor_only(served):
    """They name students and their answers: no token, or a wrong one, gets 403 and no data."""
    _, _, app = served
    anonymous = app.test_client()
    assert anonymous.get("/stats").status_code == 200  # the page itself asks for the token
    for method, url in (("get", "/api/stats/summary"), ("get", "/api/stats/predictions"),
                        ("get", "/api/stats/progress"), ("post", "/api/stats/run")):
        for headers in ({}, {"X-Instructor-Token": "guess"}):
            # As JSON, as the page sends it: a plain form is refused before anything (415, web/security.py)
            answer = getattr(anonymous, method)(url, headers={"Content-Type": "application/json", **headers})
            assert answer.status_code == 403 and "instructor token" in answer.get_json()["error"], (url, headers)


def test_the_summary_is_the_jobs_summary(served, stats_run):
    client, _, _ = served
    summary = client.get("/api/stats/summary").get_json()
    assert summary["replay_logs"] == 12 and summary["input"]["files"] == 12
    assert summary["filters"]["class_ids"] == ["class-a", "class-b"]
    assert "failover_basics" in summary["filters"]["lesson_ids"]
    assert summary["malformed"]["lines"] == 2


def test_datasets_are_served_with_filters(served):
    client, _, _ = served
    overall = client.get("/api/stats/failover?scope=overall").get_json()
    assert overall["total"] == 1 and overall["rows"][0]["count"] > 0
    times = client.get("/api/stats/failover_times").get_json()["rows"]
    assert len(times) == overall["rows"][0]["count"] + overall["rows"][0]["unresolved"]
    class_a = client.get("/api/stats/failover_times?class_id=class-a").get_json()["rows"]
    assert class_a and all(r["class_id"] == "class-a" for r in class_a) and len(class_a) < len(times)
    cells = client.get("/api/stats/predictions?scope=cell&lesson_id=failover_basics").get_json()["rows"]
    lesson = client.get("/api/stats/predictions?scope=lesson&lesson_id=failover_basics").get_json()["rows"]
    assert sum(r["answers"] for r in cells) == sum(r["answers"] for r in lesson) > 0
    # The chart of choices per question, and the misconceptions under it, filter the same way.
    choices = client.get("/api/stats/choices?scope=cell&lesson_id=failover_basics").get_json()["rows"]
    assert sum(r["answers"] for r in choices) == sum(r["answers"] for r in lesson)
    told = client.get("/api/stats/misconceptions?scope=class&class_id=class-a").get_json()["rows"]
    assert told and all(r["class_id"] == "class-a" and r["misconception"] for r in told)
    limited = client.get("/api/stats/failover_times?limit=2").get_json()
    assert len(limited["rows"]) == 2 and limited["truncated"]
    negative = client.get("/api/stats/failover_times?limit=-5")  # not a silent "all but the last 5"
    assert negative.status_code == 400 and "limit" in negative.get_json()["error"]
    missing = client.get("/api/stats/no_such_metric")
    assert missing.status_code == 404 and "failover" in missing.get_json()["error"]


def test_a_second_run_is_refused_while_one_runs(served):
    client, job, app = served
    assert client.post("/api/stats/run").status_code == 202
    assert job.started.wait(10)
    wait_until(lambda: client.get("/api/stats/progress").get_json().get("phase") == "failover", 5,
               "the progress callback did not reach /api/stats/progress")
    progress = client.get("/api/stats/progress").get_json()
    assert progress["state"] == "running" and progress["fraction"] == 0.2 and progress["stages"][0]["done"] == 1
    again = client.post("/api/stats/run")
    assert again.status_code == 409 and "already running" in again.get_json()["error"]
    job.release.set()
    app.extensions["kclab_stats"].wait(10)
    done = client.get("/api/stats/progress").get_json()
    assert done["state"] == "done" and done["records"] == 42
    job.release.clear()
    job.started.clear()
    job.fail = True
    assert client.post("/api/stats/run").status_code == 202
    job.release.set()
    app.extensions["kclab_stats"].wait(10)
    failed = client.get("/api/stats/progress").get_json()
    assert failed["state"] == "failed" and "disk full" in failed["error"]


def test_the_spark_session_is_one_per_process(spark):
    from backend.stats.session import spark_session
    assert spark_session() is spark and spark_session("local[1]") is spark


def test_opening_the_page_starts_spark_once_in_the_background(tmp_path):
    """The instructor opens /stats, then presses Run: the session is started meanwhile, once."""
    from web.stats_pages import StatsRunner
    calls, started = [], threading.Event()

    def warm():
        calls.append(1)
        started.set()
    runner = StatsRunner(tmp_path / "replays", tmp_path / "stats", BlockingJob(), warm)
    runner.warm()
    runner.warm()
    assert started.wait(10)
    runner.warm()
    assert calls == [1]
    StatsRunner(tmp_path / "replays", tmp_path / "stats", BlockingJob()).warm()  # a test's stand-in: nothing to warm


def test_the_spark_master_comes_from_kclab_spark_master(monkeypatch):
    from backend.stats.session import configured_master
    from web.commands.stats import register
    import argparse
    monkeypatch.delenv("KCLAB_SPARK_MASTER", raising=False)
    assert configured_master() == "local[2]"
    monkeypatch.setenv("KCLAB_SPARK_MASTER", "spark://spark-master:7077")
    assert configured_master() == "spark://spark-master:7077"
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["stats", "--replays", "r", "--out", "o"])
    assert args.master == "spark://spark-master:7077" and args.table is None


def test_run_on_the_real_job_uses_the_one_session_and_the_ingested_table(spark, zk_hosts, tmp_path, stats_run):
    """Not a stand-in: Run starts the real job on the process's session; the progress goes from
    running (with phases, ingest first) to done, and a second Run parses no log again."""
    shutil.copytree(stats_run[0], tmp_path / "replays")
    with stats_app(zk_hosts, tmp_path, STATS_MASTER="local[2]") as app:
        client = instructor_client(app)
        for _ in range(2):
            assert client.post("/api/stats/run").status_code == 202

            def done():
                return client.get("/api/stats/progress").get_json()["state"] != "running"
            wait_until(done, 240, "the statistics run did not finish")
            progress = client.get("/api/stats/progress").get_json()
            assert progress["state"] == "done", progress
        summary = client.get("/api/stats/summary").get_json()
    assert summary["input"]["files"] == 12 and summary["ingest"]["read_files"] == 0
    assert summary["spark"]["master"] == spark.sparkContext.master
    assert (tmp_path / "stats-table" / "manifest.parquet").exists()
