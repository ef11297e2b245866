"""A real ``redis-server`` as a child process, for ``kclab serve --workers N`` without ``--redis``.

Started the way the embedded ZooKeeper is (``backend/zkserver/server.py``): Debian's binary on a
free loopback port, with a directory of its own, no persistence (the message queue and the
routing table live only as long as the app), and it never outlives us — the kernel kills it when
its parent thread dies (``PR_SET_PDEATHSIG``), ``atexit`` stops it on a normal exit, and it runs
in its own process group so a terminal's Ctrl-C reaches only Python. ``Supervisor`` (the
ZooKeeper one: it only needs ``running``, ``stopped`` and ``start``) starts it again if it dies.
"""

from __future__ import annotations

import atexit
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from backend.zkserver.server import LOOPBACK, _die_with_parent, _signal_group, free_ports

REDIS_SERVER = "redis-server"


class RedisStartError(RuntimeError):
    pass


def redis_available() -> bool:
    return shutil.which(REDIS_SERVER) is not None


class RedisServer:
    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_ports(1)[0]
        self.base_dir: Path | None = None
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()
        self.stopped = True

    @property
    def url(self) -> str:
        return f"redis://{LOOPBACK}:{self.port}/0"

    @property
    def hosts(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self.running else None

    def start(self, timeout: float = 15.0) -> "RedisServer":
        with self._lock:
            if not self.running:
                self.stopped = False
                self.base_dir = self.base_dir or Path(tempfile.mkdtemp(prefix=f"kclab-redis-{self.port}-"))
                command = [shutil.which(REDIS_SERVER) or REDIS_SERVER, "--bind", LOOPBACK, "--port", str(self.port),
                           "--dir", str(self.base_dir), "--save", "", "--appendonly", "no",
                           "--protected-mode", "yes", "--daemonize", "no", "--loglevel", "warning"]
                with open(self.base_dir / "redis.log", "ab") as log:
                    self._proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=log,
                                                  stderr=subprocess.STDOUT, cwd=self.base_dir, process_group=0,
                                                  preexec_fn=_die_with_parent())
                _LIVE.add(self)
        deadline = time.monotonic() + timeout
        while not self._answers():
            if not self.running or time.monotonic() > deadline:
                log = (self.base_dir / "redis.log").read_text(errors="replace")[-2000:]
                self.stop()
                raise RedisStartError(f"redis-server on {self.hosts} did not start:\n{log}")
            time.sleep(0.05)
        return self

    def _answers(self) -> bool:
        try:
            with socket.create_connection((LOOPBACK, self.port), timeout=1) as sock:
                sock.sendall(b"PING\r\n")
                return sock.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def stop(self, grace: float = 5.0, kill: bool = False) -> None:
        with self._lock:
            self.stopped = True
            proc, self._proc = self._proc, None
            _LIVE.discard(self)
            if proc is not None and proc.poll() is None:
                _signal_group(proc, signal.SIGKILL if kill else signal.SIGTERM)
                try:
                    proc.wait(grace)
                except subprocess.TimeoutExpired:
                    _signal_group(proc, signal.SIGKILL)
                    proc.wait()
            if self.base_dir is not None:
                shutil.rmtree(self.base_dir, ignore_errors=True)
                self.base_dir = None

    def __enter__(self) -> "RedisServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


_LIVE: set[RedisServer] = set()


@atexit.register
def _stop_all_at_exit() -> None:
    for server in list(_LIVE):
        server.stop(grace=2.0)
