"""Fixtures every test may use: a real ZooKeeper, a chroot per test, a kazoo client in it.

``zk_hosts`` is a server started once per test session by our own launcher (tickTime 500 so
1 s sessions are allowed; forceSync off because tests do not need durable writes), unless
``KCLAB_TEST_ZK=HOST:PORT[,...]`` names an existing ensemble. Each test then works below its
own chroot, so tests cannot see each other's znodes and leave nothing behind.
"""

from __future__ import annotations

import os
import uuid

import pytest

from backend.zkserver.server import ZooKeeperServer
from tests.support import close_client, delete_tree, sanitize_znode_name, started_client

TEST_ROOT = "/kclab-test"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--disable-dev-shm-usage"]
EXTERNAL_ZK_ENV = "KCLAB_TEST_ZK"


@pytest.fixture(scope="session")
def zk_hosts():
    """Connect string of the session's ZooKeeper (no chroot)."""
    external = os.environ.get(EXTERNAL_ZK_ENV)
    if external:
        yield external
        return
    server = ZooKeeperServer(tick_time_ms=500, force_sync=False).start()
    try:
        yield server.hosts
    finally:
        server.stop()


@pytest.fixture(scope="session")
def zk_root_client(zk_hosts):
    """A client at the root of ``zk_hosts``: for fixtures' bookkeeping, and tests that look
    across chroots."""
    client = started_client(zk_hosts)
    yield client
    close_client(client)


@pytest.fixture
def chroot(request, zk_root_client):
    """A fresh znode path for this test, e.g. ``/kclab-test/test_foo-1a2b3c4d``, deleted after."""
    path = f"{TEST_ROOT}/{sanitize_znode_name(request.node.name)}-{uuid.uuid4().hex[:8]}"
    zk_root_client.ensure_path(path)
    yield path
    delete_tree(zk_root_client, path)


@pytest.fixture
def zk_client(zk_hosts, chroot):
    """A started ``KazooClient`` confined to this test's chroot; stopped and closed after."""
    client = started_client(zk_hosts + chroot)
    yield client
    close_client(client)


@pytest.fixture(scope="session")
def browser():
    """The system Chromium (never a downloaded one), once for the whole run: Playwright's sync
    API allows one instance per thread, so every browser test shares this one."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def protocol_logs(zk_hosts, zk_root_client, tmp_path_factory):
    """Replay logs of the zombie-controller and unclean-election scripts, recorded once per test
    session (the invariant checks, their JS port, the diagram and the panel all read them):
    ``{script name: path}``."""
    from pathlib import Path

    from tests.support import record_script
    scripts = Path(__file__).resolve().parents[1] / "lessons" / "scripts"
    directory = tmp_path_factory.mktemp("protocol-logs")
    logs = {}
    for name in ("zombie_controller_fenced", "unclean_election_loses_acks1"):
        chroot = f"{TEST_ROOT}/protocol-{name}-{uuid.uuid4().hex[:8]}"
        logs[name] = record_script(scripts / f"{name}.yaml", zk_hosts, zk_root_client, chroot, directory).replay_path
    return logs
