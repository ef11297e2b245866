"""Fixtures of the statistics tests.

``spark``: one local SparkSession for every stats test (environment notes §5: SPARK_LOCAL_IP,
the venv's Python for workers, 4 shuffle partitions, no UI). It is the process's session
(``backend.stats.session``), so anything in the test process that asks for a session gets it.

``stats_run``: ``kclab stats`` run once over ``stats_replays`` (replay logs from real runs plus
derived sessions, ``tests/conftest.py``) as a subprocess (its own JVM, as a user's run has).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support import kclab_command

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def spark():
    from backend.stats.session import spark_session
    session = spark_session("local[2]")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def stats_run(stats_replays, tmp_path_factory):
    """(replays dir, output dir, the finished ``kclab stats`` process), shared by the end-to-end
    and dashboard tests so the job runs once over ``stats_replays``."""
    replays = stats_replays
    out = tmp_path_factory.mktemp("stats") / "out"
    job = subprocess.run([*kclab_command(), "stats", "--replays", str(replays), "--out", str(out)],
                         capture_output=True, text=True, timeout=400)
    assert job.returncode == 0, job.stderr[-3000:]
    return replays, out, job


@pytest.fixture(scope="session")
def stats_data(stats_run, tmp_path_factory):
    """``stats_data()`` -> a fresh DATA_DIR holding the end-to-end run's replay logs and
    statistics where the server keeps them (``replays/``, ``stats/``)."""
    def make() -> Path:
        replays, out, _ = stats_run
        data = tmp_path_factory.mktemp("data")
        shutil.copytree(replays, data / "replays")
        shutil.copytree(out, data / "stats")
        return data
    return make
