"""What an operator can ask a running server to say. ``kclab serve --log-level``: kazoo's every
connection made and dropped, to see why students get ConnectionLoss (by default kazoo's warnings
stay out of the server's output: a class drops hundreds, and the page shows each as a fault).
``kill -USR2`` on a worker: its threads' Python stacks (the newest 100)."""

from __future__ import annotations

import os
import re

import pytest

from tests.hardening.server import serve
from tests.support import wait_until
from web.commands.serve import LOG_LEVELS, kazoo_level
from web.gunicorn_app import DUMP_SIGNAL


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """One server for both questions (each start costs an embedded ZooKeeper)."""
    served = serve(tmp_path_factory.mktemp("diagnostics"), "--log-level", "info")
    yield served
    served.stop()


def test_at_info_kazoo_says_each_broker_connection_it_makes(server):
    connecting = re.compile(r"INFO \d+ kazoo\.client: Connecting to 127\.0\.0\.1")
    server.out.wait_for(r"INFO \d+ web\.zk_health: ZooKeeper \S+ is connected", 30, server.proc)
    before = sum(1 for line in list(server.out.lines) if connecting.search(line))  # the app's own session
    status, box, _ = server.call("POST", "/api/sandboxes", {"cluster": {"brokers": [0, 1]}})
    assert status == 201, box
    wait_until(lambda: sum(1 for line in list(server.out.lines) if connecting.search(line)) >= before + 2, 30,
               "a 'Connecting to' line for each of the two brokers' sessions")


def test_by_default_kazoo_says_only_errors():
    assert [kazoo_level(level) for level in LOG_LEVELS] == ["ERROR", "INFO", "DEBUG"]


def test_usr2_prints_the_workers_threads_and_the_worker_lives_on(server):
    """An operator's way into a stuck worker (web/gunicorn_app.py): ``kill -USR2`` dumps its
    threads' Python stacks to the server's output, and the worker goes on serving."""
    worker = server.worker_pid()
    os.kill(worker, DUMP_SIGNAL)
    server.out.wait_for(r'File ".*gunicorn/workers/', 30, server.proc)  # the worker's own threads
    assert server.worker_pid() == worker
    assert server.call("GET", "/healthz")[0] == 200
