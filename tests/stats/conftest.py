"""Fixtures of the statistics tests.

``spark``: one local SparkSession for every stats test (environment notes §5: SPARK_LOCAL_IP,
the venv's Python for workers, 4 shuffle partitions, no UI). It is the process's session
(``backend.stats.session``), so anything in the test process that asks for a session gets it.

``stats_run``: replay logs from real runs plus derived sessions, and ``kclab stats`` run once
over them as a subprocess (its own JVM, as a user's run has).
"""

from __future__ import annotations

import io
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support import kclab_command, record_script

ROOT = Path(__file__).resolve().parents[2]
# Between them: a controller failover each, an offline window after a crash, an unclean election
# losing acks=1 messages, a zombie controller's refused write and stale-epoch requests.
SCRIPTS = ("unclean_election_loses_acks1", "zombie_controller_fenced")
BAD_LINE = '{"kind": "zk", "subject": "znode:/controller", "seq": \n'


@pytest.fixture(scope="session")
def spark():
    from backend.stats.session import spark_session
    session = spark_session("local[2]")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def stats_run(tmp_path_factory, zk_hosts, zk_root_client):
    """(replays dir, output dir, the finished ``kclab stats`` process), shared by the end-to-end
    and dashboard tests so the job runs once: two fault scripts run against the test
    ZooKeeper (a chroot per run), four sessions derived from each (lesson completed, class demo
    stopped, free play, lesson abandoned), one line damaged, one real log cut mid-line."""
    from backend.stats.synthetic import derive, load_log, write_log

    replays = tmp_path_factory.mktemp("replays")
    chroot = f"/kclab-test/stats-e2e-{random.Random().getrandbits(32):08x}"
    real = [record_script(ROOT / "lessons" / "scripts" / f"{name}.yaml", zk_hosts, zk_root_client, f"{chroot}-run{i}",
                          replays, log=io.StringIO()).replay_path for i, name in enumerate(SCRIPTS)]
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
    damaged.write_text("".join(text[:20] + [BAD_LINE] + text[20:]))
    cut = real[1].read_bytes()
    real[1].write_bytes(cut[: len(cut) * 2 // 3 + 17])  # mid-line, most likely; a torn last line either way
    if real[1].read_bytes().endswith(b"\n"):
        real[1].write_bytes(real[1].read_bytes()[:-5])
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
