"""Fixtures every test may use: a real ZooKeeper, a chroot per test, a kazoo client in it.

``zk_hosts`` is a server started once per test session by our own launcher (tickTime 500 so
1 s sessions are allowed; forceSync off because tests do not need durable writes), unless
``KCLAB_TEST_ZK=HOST:PORT[,...]`` names an existing ensemble. Each test then works below its
own chroot, so tests cannot see each other's znodes and leave nothing behind.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

from backend.zkserver.server import ZooKeeperServer
from tests.support import close_client, delete_tree, sanitize_znode_name, started_client

TEST_ROOT = "/kclab-test"
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--disable-dev-shm-usage"]
EXTERNAL_ZK_ENV = "KCLAB_TEST_ZK"
STATS_SCRIPTS = ("unclean_election_loses_acks1", "zombie_controller_fenced")
"""The recorded logs the statistics tests derive their sessions from, in this order."""


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
    from tests.support import record_script
    scripts = Path(__file__).resolve().parents[1] / "lessons" / "scripts"
    directory = tmp_path_factory.mktemp("protocol-logs")
    logs = {}
    for name in ("zombie_controller_fenced", "unclean_election_loses_acks1"):
        chroot = f"{TEST_ROOT}/protocol-{name}-{uuid.uuid4().hex[:8]}"
        logs[name] = record_script(scripts / f"{name}.yaml", zk_hosts, zk_root_client, chroot, directory).replay_path
    return logs


@pytest.fixture(scope="session")
def stats_replays(protocol_logs, tmp_path_factory):
    """A directory of replay logs for the statistics job: the two recorded ``protocol_logs`` (a
    controller failover each, an offline window after a crash, an unclean election losing acks=1
    messages, a zombie controller's refused write and stale-epoch requests), four sessions derived
    from each (lesson completed, class demo stopped, free play, lesson abandoned), an exported
    and imported copy, a shorter copy, one line damaged, one real log cut mid-line. Tests that
    change logs work on a copy."""
    import random
    import shutil

    from backend.stats.synthetic import derive, load_log, write_log

    replays = tmp_path_factory.mktemp("replays")
    real = [Path(shutil.copy(protocol_logs[name], replays)) for name in STATS_SCRIPTS]
    rng = random.Random(20261121)
    for i, path in enumerate(real):
        template = load_log(path)
        start = template[0]["started_ms"]
        for j, (mode, outcome) in enumerate((("lesson", "completed"), ("class", "stopped"), ("sandbox", None),
                                            ("lesson", "abandoned"))):
            sid = f"derived-{i}-{j}"
            lines = derive(template, session_id=sid, mode=mode, started_ms=start + (i * 4 + j) * 43_200_000, rng=rng,
                           lesson_id="failover_basics" if mode != "sandbox" else None,
                           class_id="class-a" if j % 2 else "class-b", student=f"s{j}" if mode != "class" else None,
                           students=("ann", "bob", "cy", "dee"), stretch=rng.uniform(0.7, 1.5),
                           outcome=outcome or "completed")
            write_log(replays / f"{sid}.jsonl", lines)
    # A session exported and imported again, and a shorter copy of another: each counts once.
    (replays / "derived-1-2.imported.jsonl").write_bytes((replays / "derived-1-2.jsonl").read_bytes())
    whole = (replays / "derived-0-1.jsonl").read_text().splitlines(keepends=True)
    (replays / "derived-0-1.imported-1.jsonl").write_text("".join(whole[: len(whole) // 2]))
    damaged = replays / "derived-0-0.jsonl"
    text = damaged.read_text().splitlines(keepends=True)
    damaged.write_text("".join(text[:20] + ['{"kind": "zk", "subject": "znode:/controller", "seq": \n'] + text[20:]))
    cut = real[1].read_bytes()
    real[1].write_bytes(cut[: len(cut) * 2 // 3 + 17])  # mid-line, most likely; a torn last line either way
    if real[1].read_bytes().endswith(b"\n"):
        real[1].write_bytes(real[1].read_bytes()[:-5])
    return replays
