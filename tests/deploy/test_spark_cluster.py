"""The Spark services of docker-compose.yml, started here with the very commands the compose file
gives them (on loopback ports): the pyspark package's spark-class runs a standalone master and a
worker of the driver's own Spark version, the worker registers, and the pages the compose health
checks read say what those checks expect ("ALIVE" on the master's /json/, the worker's /json/).
Then the compose file's ``stats`` command runs its job on that cluster, as a department's
semester runs, and counts what the plain-Python count counts."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import pyspark

from backend.stats import baseline
from backend.zkserver.server import free_ports
from tests.deploy.conftest import start, stop
from tests.support import kclab_command, wait_until

VENV_BIN = Path(sys.executable).parent  # spark-class, as on the image's PATH


def on_loopback(command: list[str], replace: dict[str, str]) -> list[str]:
    return [replace.get(arg, arg) for arg in command]


NOT_UP_YET = (OSError, ValueError)
"""No answer yet, or — while the master's UI starts — its HTML page where /json/ will be (a
JSONDecodeError, a ValueError): both mean "ask again"."""


def page(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=3) as response:
        return json.loads(response.read())


def test_the_compose_commands_run_a_spark_cluster_of_the_drivers_version_and_the_job_on_it(services, tmp_path,
                                                                                           stats_replays):
    rpc, master_ui, worker_ui = free_ports(3)
    replace = {"spark-master": "127.0.0.1", "7077": str(rpc), "8080": str(master_ui), "8081": str(worker_ui),
               "spark://spark-master:7077": f"spark://127.0.0.1:{rpc}", "/tmp/spark-work": str(tmp_path / "work"),
               "2g": "1g"}
    env = {"PATH": f"{VENV_BIN}:{os.environ['PATH']}", "SPARK_LOCAL_IP": "127.0.0.1",
           **services["spark-master"]["environment"]}
    master, master_out = start(on_loopback(services["spark-master"]["command"], replace), env, tmp_path)
    worker = None
    try:
        # STANDBY for a moment (its recovery), then ALIVE: what the compose health check waits for
        wait_until(lambda: page(f"http://127.0.0.1:{master_ui}/json/")["status"] == "ALIVE", 90,
                   f"the master to say ALIVE; its output: {master_out.lines[-5:]}", retry_on=NOT_UP_YET)
        worker, worker_out = start(on_loopback(services["spark-worker"]["command"], replace), env, tmp_path)
        registered = wait_until(lambda: page(f"http://127.0.0.1:{master_ui}/json/")["aliveworkers"], 90,
                                f"the worker to register; worker output: {worker_out.lines[-5:]}",
                                retry_on=NOT_UP_YET)
        assert registered == 1
        assert page(f"http://127.0.0.1:{worker_ui}/json/")["masterurl"] == f"spark://127.0.0.1:{rpc}"
        assert any(f"version {pyspark.__version__}" in line for line in master_out.lines), master_out.lines[-20:]
        run_the_compose_job_on(services["stats"]["command"], replace, stats_replays, tmp_path)
        apps = page(f"http://127.0.0.1:{master_ui}/json/")["completedapps"]
        assert [app["name"] for app in apps] == ["kclab-stats"], "the job ran on the cluster's executors"
    finally:
        if worker is not None:
            stop(worker)
        stop(master)


def run_the_compose_job_on(command: list[str], replace: dict[str, str], replays: Path, tmp_path: Path) -> None:
    """The ``stats`` service's command, its /data paths and master on loopback: the driver here,
    the executors on the worker, reading the replay logs and writing the table's Parquet in a
    directory both see (the compose file's volume). Its numbers must be the plain count's."""
    shutil.copytree(replays, tmp_path / "replays")
    paths = {"/data/replays": str(tmp_path / "replays"), "/data/stats": str(tmp_path / "stats")}
    args = on_loopback(command, {**replace, **paths})
    assert args[0] == "kclab" and f"spark://127.0.0.1:{replace['7077']}" in args, args
    # SPARK_LOCAL_IP: the executors call the driver back on loopback, where the worker is.
    job = subprocess.run([*kclab_command(), *args[1:]], env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
                         capture_output=True, text=True, timeout=400)
    assert job.returncode == 0, job.stderr[-3000:]
    summary = json.loads((tmp_path / "stats" / "summary.json").read_text())
    expected = baseline.compute(tmp_path / "replays")
    assert summary["spark"]["master"] == f"spark://127.0.0.1:{replace['7077']}"
    assert summary["input"]["records"] == expected["input"]["records"] > 0
    assert summary["malformed"]["by_reason"] == expected["malformed"]["by_reason"] == {"bad_json": 1, "truncated": 1}
    assert baseline.same_numbers(summary["headline"], expected["headline"])
