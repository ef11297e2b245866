"""A ZooKeeper ensemble (three servers by default) on loopback, for quorum lessons and tests.

Each member is a ``ZooKeeperServer`` with its own client, quorum and election port, data
directory and ``myid``. Members keep their data directories across ``stop_server`` /
``start_server``, like a real machine that reboots, so a restarted server rejoins with its
history; the whole tree is removed by ``stop()`` unless ``data_dir`` was given.

With equal histories the highest ``myid`` wins the first election, so a fresh ensemble's leader
is usually the last server; ask ``leader()`` rather than assume it.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

from backend.zkserver.classpath import ZooKeeperClasspath, find_zookeeper_classpath
from backend.zkserver.server import LOOPBACK, ZooKeeperServer, ZooKeeperStartError, free_ports

SERVING_MODES = ("leader", "follower")


class ZooKeeperEnsemble:
    """``servers`` ZooKeeper servers that form one quorum."""

    def __init__(self, servers: int = 3, *, base_port: int | None = None,
                 data_dir: str | os.PathLike | None = None, tick_time_ms: int = 500,
                 max_session_timeout_ms: int = 60_000, force_sync: bool = True,
                 classpath: ZooKeeperClasspath | None = None):
        if servers < 1:
            raise ValueError("an ensemble needs at least one server")
        ids = range(1, servers + 1)
        ports = free_ports(3 * servers)
        client_ports = [base_port + i for i in range(servers)] if base_port else ports[:servers]
        peers = {f"server.{myid}": f"{LOOPBACK}:{ports[servers + 2 * i]}:{ports[servers + 2 * i + 1]}"
                 for i, myid in enumerate(ids)}
        self._keep_dir = data_dir is not None
        self.base_dir = Path(data_dir) if data_dir else Path(tempfile.mkdtemp(prefix="kclab-zk-ensemble-"))
        classpath = classpath or find_zookeeper_classpath()
        self.servers: dict[int, ZooKeeperServer] = {
            myid: ZooKeeperServer(
                client_ports[i], data_dir=self.base_dir / f"zk{myid}", myid=myid,
                tick_time_ms=tick_time_ms, max_session_timeout_ms=max_session_timeout_ms,
                force_sync=force_sync, classpath=classpath, extra_config=peers)
            for i, myid in enumerate(ids)
        }

    @property
    def hosts(self) -> str:
        """All client addresses, comma-separated: what a client's connect string lists."""
        return ",".join(server.hosts for server in self.servers.values())

    @property
    def classpath(self) -> ZooKeeperClasspath:
        return next(iter(self.servers.values())).classpath

    def modes(self) -> dict[int, str | None]:
        """myid -> ``srvr`` Mode (``leader``/``follower``), None when down or not serving."""
        return {myid: server.mode() for myid, server in self.servers.items()}

    def leader(self) -> int | None:
        return next((myid for myid, mode in self.modes().items() if mode == "leader"), None)

    def start(self, timeout: float = 30.0) -> "ZooKeeperEnsemble":
        """Launch every member together (none can serve alone) and wait for the quorum."""
        try:
            for server in self.servers.values():
                server.launch()
            self.wait_for_quorum(timeout)
        except BaseException:
            self.stop()
            raise
        return self

    def stop_server(self, myid: int, kill: bool = False) -> None:
        """Stop one member (SIGKILL at once if ``kill``: a crash rather than a shutdown)."""
        self.servers[myid].stop(kill=kill)

    def start_server(self, myid: int, timeout: float | None = 30.0) -> None:
        """Restart one member; wait until it serves unless ``timeout`` is None.

        It can serve only if a quorum of members runs, so pass ``timeout=None`` when it will be
        the first of a majority to come back.
        """
        server = self.servers[myid]
        server.launch()
        if timeout is not None:
            server.wait_until_serving(timeout)

    def wait_for_quorum(self, timeout: float = 30.0) -> int:
        """Wait until one running member leads and every running member serves; return the leader."""
        deadline = time.monotonic() + timeout
        while True:
            running = [myid for myid, server in self.servers.items() if server.running]
            modes = self.modes()
            leaders = [myid for myid, mode in modes.items() if mode == "leader"]
            if len(leaders) == 1 and all(modes[myid] in SERVING_MODES for myid in running):
                return leaders[0]
            if time.monotonic() >= deadline:
                tails = "\n".join(f"--- server {myid} ({server.log_path}):\n{server.log_tail(15)}"
                                  for myid, server in self.servers.items() if modes[myid] is None)
                raise ZooKeeperStartError(
                    f"ZooKeeper ensemble {self.hosts} has no quorum after {timeout:g} s "
                    f"(modes: {modes}; running: {running}).\n{tails}")
            time.sleep(0.05)

    def stop(self) -> None:
        """Stop every member (idempotent) and remove the data unless ``data_dir`` was given."""
        for server in self.servers.values():
            server.stop()
        if not self._keep_dir:
            shutil.rmtree(self.base_dir, ignore_errors=True)

    def __enter__(self) -> "ZooKeeperEnsemble":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
