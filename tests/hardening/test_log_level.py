"""``kclab serve --log-level``: an operator who wants to know why students see ConnectionLoss can
have kazoo say every connection it makes and drops; by default kazoo's warnings stay out of the
server's output (a class drops hundreds, and the page shows each as a fault)."""

from __future__ import annotations

import re

from tests.hardening.server import serve
from tests.support import wait_until
from web.commands.serve import LOG_LEVELS, kazoo_level


def test_at_info_kazoo_says_each_broker_connection_it_makes(tmp_path):
    server = serve(tmp_path, "--log-level", "info")
    connecting = re.compile(r"INFO \d+ kazoo\.client: Connecting to 127\.0\.0\.1")
    try:
        server.out.wait_for(r"INFO \d+ web\.zk_health: ZooKeeper \S+ is connected", 30, server.proc)
        before = sum(1 for line in list(server.out.lines) if connecting.search(line))  # the app's own session
        status, box, _ = server.call("POST", "/api/sandboxes", {"cluster": {"brokers": [0, 1]}})
        assert status == 201, box
        wait_until(lambda: sum(1 for line in list(server.out.lines) if connecting.search(line)) >= before + 2, 30,
                   "a 'Connecting to' line for each of the two brokers' sessions")
    finally:
        server.stop()


def test_by_default_kazoo_says_only_errors():
    assert [kazoo_level(level) for level in LOG_LEVELS] == ["ERROR", "INFO", "DEBUG"]
