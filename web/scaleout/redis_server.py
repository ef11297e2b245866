"""A real ``redis-server`` as a child process, for ``kclab serve --workers N`` without ``--redis``.

Started the way the embedded ZooKeeper is (``backend.zkserver.server.ChildServer``): Debian's
binary on a free loopback port, with a directory of its own, no persistence (the message queue
and the routing table live only as long as the app), and it never outlives us — the kernel kills
it when its parent thread dies (``PR_SET_PDEATHSIG``), ``atexit`` stops it on a normal exit, and
it runs in its own process group so a terminal's Ctrl-C reaches only Python. ``Supervisor`` (the
ZooKeeper one: it needs only ``running``, ``stopped`` and ``start``) starts it again if it dies.
"""

from __future__ import annotations

import shutil
import socket
import tempfile
import time
from pathlib import Path

from backend.zkserver.server import LOOPBACK, ChildServer, free_ports

REDIS_SERVER = "redis-server"


class RedisStartError(RuntimeError):
    pass


def redis_available() -> bool:
    return shutil.which(REDIS_SERVER) is not None


class RedisServer(ChildServer):
    def __init__(self, port: int | None = None) -> None:
        super().__init__()
        self.port = port or free_ports(1)[0]

    @property
    def url(self) -> str:
        return f"redis://{LOOPBACK}:{self.port}/0"

    @property
    def hosts(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    def start(self, timeout: float = 15.0) -> "RedisServer":
        with self._lock:
            if not self.running:
                self.stopped = False
                self.base_dir = self.base_dir or Path(tempfile.mkdtemp(prefix=f"kclab-redis-{self.port}-"))
                self._spawn([shutil.which(REDIS_SERVER) or REDIS_SERVER, "--bind", LOOPBACK, "--port", str(self.port),
                             "--dir", str(self.base_dir), "--save", "", "--appendonly", "no", "--protected-mode",
                             "yes", "--daemonize", "no", "--loglevel", "warning"], self.base_dir / "redis.log")
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

    def __enter__(self) -> "RedisServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
