"""The Spark services of docker-compose.yml, started here with the very commands the compose file
gives them (on loopback ports): the pyspark package's spark-class runs a standalone master and a
worker of the driver's own Spark version, the worker registers, and the pages the compose health
checks read say what those checks expect ("ALIVE" on the master's /json/, the worker's /json/)."""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from pathlib import Path

import pyspark

from backend.zkserver.server import free_ports
from tests.deploy.conftest import start, stop
from tests.support import wait_until

VENV_BIN = Path(sys.executable).parent  # spark-class, as on the image's PATH


def on_loopback(command: list[str], replace: dict[str, str]) -> list[str]:
    return [replace.get(arg, arg) for arg in command]


NOT_UP_YET = (OSError, ValueError)
"""No answer yet, or — while the master's UI starts — its HTML page where /json/ will be (a
JSONDecodeError, a ValueError): both mean "ask again"."""


def page(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=3) as response:
        return json.loads(response.read())


def test_the_compose_commands_run_a_spark_cluster_of_the_drivers_version(services, tmp_path):
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
    finally:
        if worker is not None:
            stop(worker)
        stop(master)
