"""``kclab serve --workers 2`` starts a redis-server of its own, as its child, and never leaks it
(not even after ``kill -9``); a machine without redis-server runs one worker and says why."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess

from backend.zkserver.server import free_ports
from tests.support import LineReader, child_pids, kclab_command, pid_alive, wait_until


def _serve(zk_hosts, tmp_path, env=None):
    port = free_ports(1)[0]
    proc = subprocess.Popen([*kclab_command(), "serve", "--zk", zk_hosts, "--port", str(port), "--workers", "2",
                             "--data-dir", str(tmp_path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env={**os.environ, "KCLAB_INSTRUCTOR_TOKEN": "serve-test-instructor-token", **(env or {})},
                            start_new_session=True)
    return proc, LineReader(proc.stdout)


def test_the_workers_redis_is_a_child_that_dies_with_the_app(zk_hosts, tmp_path):
    proc, out = _serve(zk_hosts, tmp_path)
    try:
        out.wait_for(r"Workers: 2 \(message queue redis://127\.0\.0\.1:\d+/0\)", 60, proc)
        [redis] = wait_until(lambda: child_pids(proc.pid, "redis-server") or None, 20, "the redis-server child")
        proc.send_signal(signal.SIGKILL)  # no finally, no atexit: only the kernel's death signal is left
        proc.wait(10)
        wait_until(lambda: not pid_alive(redis), 20, "the redis-server to die with its parent")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)


def test_without_redis_server_the_app_runs_one_worker_and_says_why(zk_hosts, tmp_path):
    bare = tmp_path / "bin"  # a PATH without redis-server (the kclab command names its interpreter itself)
    bare.mkdir()
    for tool in ("java",):
        if shutil.which(tool):
            (bare / tool).symlink_to(shutil.which(tool))
    proc, out = _serve(zk_hosts, tmp_path / "data", {"PATH": str(bare)})
    try:
        out.wait_for("redis-server is not installed, so the app runs 1 worker instead of 2", 60, proc)
        out.wait_for(r"^Workers: 1$", 60, proc)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
