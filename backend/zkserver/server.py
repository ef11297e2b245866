"""Run a real ZooKeeper server (or a three-server ensemble) as a child JVM on loopback.

The lab has no fake ZooKeeper: the app and the tests start ``QuorumPeerMain`` from the jars that
``classpath`` finds, on a free 127.0.0.1 port with its own data directory. Defaults are tuned
for teaching: ``tickTime=500`` lets sessions be as short as 1 s (ZooKeeper clamps sessions to
2..20 ticks) and ``maxSessionTimeout=60000`` lifts the upper clamp to 60 s.

A leaked JVM would hold a port and ~85 MB for ever, so the JVM must never outlive us:

- the child asks the kernel for ``SIGKILL`` when its parent dies (``prctl(PR_SET_PDEATHSIG)``),
  which covers ``kill -9`` of Python, where neither ``atexit`` nor ``finally`` runs;
- ``atexit`` stops every server still running on a normal interpreter exit;
- the JVM runs in its own process group, so a terminal's Ctrl-C reaches only Python, which then
  stops the server in order instead of racing it.

Caveat: Linux delivers PDEATHSIG when the *thread* that forked the child exits, not the process.
Start servers from the main thread or another thread that lives as long as the server; a server
started from a short-lived worker thread would be killed when that thread ends.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

from backend.zkserver.four_letter import four_letter_word, server_mode
from backend.zkserver.classpath import ZooKeeperClasspath, find_zookeeper_classpath

MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"
JVM_OPTIONS = ("-Xmx128m", "-XX:+UseSerialGC", "-Djava.awt.headless=true",
               # The NIO selector thread handles each request itself instead of handing it to a
               # pool of 2 × cores workers: one thread switch fewer per request. Our server has a
               # few local clients on a 2-core laptop, where 2,000 pipelined writes cost the JVM
               # 0.27 CPU-s this way against 0.38 (docs/performance.md §1).
               "-Dzookeeper.nio.numWorkerThreads=0")
LOOPBACK = "127.0.0.1"

# Each jar source logs through a different backend (Debian: log4j 1.2, pyspark: log4j2, Apache
# 3.8+: logback). We write a console config for all three; the JVM's stdout goes to a log file
# whose tail explains a failed start.
_PATTERN = "%d{ISO8601} %-5p [%t] %c{1}: %m%n"
_LOGGING_FILES = {
    "log4j.properties": f"""log4j.rootLogger=INFO, CONSOLE
log4j.appender.CONSOLE=org.apache.log4j.ConsoleAppender
log4j.appender.CONSOLE.layout=org.apache.log4j.PatternLayout
log4j.appender.CONSOLE.layout.ConversionPattern={_PATTERN}
""",
    "log4j2.properties": f"""rootLogger.level = info
rootLogger.appenderRef.console.ref = CONSOLE
appender.console.type = Console
appender.console.name = CONSOLE
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = {_PATTERN}
""",
    "logback.xml": """<configuration>
  <appender name="CONSOLE" class="ch.qos.logback.core.ConsoleAppender">
    <encoder><pattern>%d{ISO8601} %-5level [%thread] %logger{0}: %msg%n</pattern></encoder>
  </appender>
  <root level="INFO"><appender-ref ref="CONSOLE"/></root>
</configuration>
""",
}
_LOGGING_PROPERTIES = {
    "log4j.properties": "-Dlog4j.configuration=file:{}",
    "log4j2.properties": "-Dlog4j2.configurationFile={}",
    "logback.xml": "-Dlogback.configurationFile={}",
}


class ZooKeeperStartError(RuntimeError):
    """The server (or ensemble) did not come up; the message carries the log's tail."""


def free_ports(count: int) -> list[int]:
    """``count`` distinct free loopback ports (all held open together so none repeats)."""
    socks = []
    try:
        for _ in range(count):
            sock = socket.socket()
            sock.bind((LOOPBACK, 0))
            socks.append(sock)
        return [s.getsockname()[1] for s in socks]
    finally:
        for sock in socks:
            sock.close()


def java_executable() -> str:
    home = os.environ.get("JAVA_HOME")
    if home and os.access(os.path.join(home, "bin", "java"), os.X_OK):
        return os.path.join(home, "bin", "java")
    found = shutil.which("java")
    if not found:
        raise ZooKeeperStartError("`java` (17 or newer) is not installed; run `make setup`")
    return found


def _die_with_parent():
    """A ``preexec_fn`` that makes the kernel SIGKILL the child when its parent (thread) dies.

    libc is resolved here, in the parent, so the forked child only makes one C call.
    """
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    parent = os.getpid()

    def preexec():
        prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
        if os.getppid() != parent:  # parent already gone: no death signal would ever come
            os.kill(os.getpid(), signal.SIGKILL)

    return preexec


_LIVE: set["ChildServer"] = set()


@atexit.register
def _stop_all_at_exit():
    for server in list(_LIVE):
        server.stop(grace=2.0)


class ChildServer:
    """A server run as our child process that never outlives us (the module's docstring says
    how), in a directory of its own: ZooKeeper here, Redis for several web workers."""

    def __init__(self, base_dir: Path | None = None, keep_dir: bool = False) -> None:
        self.base_dir, self._keep_dir = base_dir, keep_dir
        self._proc: subprocess.Popen | None = None
        self._lock = threading.Lock()
        self.stopped = True
        """Stopped by :meth:`stop` (on purpose), as opposed to a process that died by itself."""

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self.running else None

    def _spawn(self, command: list[str], log_path: Path) -> None:
        """Start ``command`` (the caller holds ``_lock``), its output appended to ``log_path``."""
        with open(log_path, "ab") as log:
            self._proc = subprocess.Popen(
                command, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                cwd=self.base_dir, process_group=0, preexec_fn=_die_with_parent())
        _LIVE.add(self)

    def stop(self, grace: float = 5.0, kill: bool = False) -> None:
        """SIGTERM, then SIGKILL after ``grace`` seconds (at once if ``kill``); wait; idempotent.

        Removes the directory unless it was given to the constructor.
        """
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
            if not self._keep_dir and self.base_dir is not None:
                shutil.rmtree(self.base_dir, ignore_errors=True)
                self.base_dir = None


class ZooKeeperServer(ChildServer):
    """One ZooKeeper server process; standalone unless ``extra_config`` names peers."""

    def __init__(self, port: int | None = None, *, data_dir: str | os.PathLike | None = None,
                 tick_time_ms: int = 500, max_session_timeout_ms: int = 60_000,
                 force_sync: bool = True, classpath: ZooKeeperClasspath | None = None,
                 myid: int | None = None, extra_config: dict[str, object] | None = None):
        super().__init__(Path(data_dir) if data_dir is not None else None, keep_dir=data_dir is not None)
        self.port = port or free_ports(1)[0]
        self.classpath = classpath or find_zookeeper_classpath()
        self.myid = myid
        self._config = {
            "tickTime": tick_time_ms,
            "initLimit": 10,
            "syncLimit": 5,
            "clientPort": self.port,
            "clientPortAddress": LOOPBACK,
            "maxSessionTimeout": max_session_timeout_ms,
            "maxClientCnxns": 0,  # default 60 per IP; every simulated broker is a connection
            "4lw.commands.whitelist": "*",  # default allows only srvr; tests use cons/mntr
            "admin.enableServer": "false",  # otherwise Jetty listens on 0.0.0.0:8080
        }
        if not force_sync:
            self._config["forceSync"] = "no"  # faster fsync-free writes: tests only
        self._config.update(extra_config or {})

    # -- facts ---------------------------------------------------------------------------------
    @property
    def hosts(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    @property
    def log_path(self) -> Path | None:
        return self.base_dir / "zookeeper.log" if self.base_dir else None

    def four_letter_word(self, cmd: str, timeout: float = 2.0) -> str:
        """E.g. ``cons``, whose ``to=`` shows each session's negotiated timeout (kazoo hides it)."""
        return four_letter_word(LOOPBACK, self.port, cmd, timeout)

    def mode(self, timeout: float = 1.0) -> str | None:
        """``srvr``'s Mode (standalone/leader/follower), or None when not serving."""
        return server_mode(LOOPBACK, self.port, timeout) if self.running else None

    def log_tail(self, lines: int = 40) -> str:
        """The last ``lines`` of the JVM's log (only its end is read: INFO logs grow)."""
        try:
            with open(self.log_path, "rb") as log:
                log.seek(max(0, log.seek(0, os.SEEK_END) - 200 * lines))
                text = log.read().decode("utf-8", "replace")
        except (TypeError, OSError):
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    # -- life cycle ----------------------------------------------------------------------------
    def start(self, timeout: float = 30.0) -> "ZooKeeperServer":
        """Launch the JVM and return once ``srvr`` reports a Mode; stop it again on failure."""
        self.launch()
        try:
            self.wait_until_serving(timeout)
        except BaseException:
            self.stop(grace=1.0)
            raise
        return self

    def launch(self) -> None:
        """Start the JVM without waiting: an ensemble member cannot serve until its peers run."""
        with self._lock:
            if self.running:
                return
            self.stopped = False
            if self.base_dir is None:
                self.base_dir = Path(tempfile.mkdtemp(prefix=f"kclab-zk-{self.port}-"))
            config = self._write_files()
            command = [java_executable(), *JVM_OPTIONS, *self._logging_options(),
                       "-cp", self.classpath.classpath, MAIN_CLASS, str(config)]
            self._spawn(command, self.log_path)

    def wait_until_serving(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            if not self.running:
                raise ZooKeeperStartError(self._failure("exited while starting"))
            if self.mode() is not None:
                return
            if time.monotonic() >= deadline:
                raise ZooKeeperStartError(self._failure(f"did not serve within {timeout:g} s"))
            time.sleep(0.05)

    def __enter__(self) -> "ZooKeeperServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"pid {self.pid}" if self.running else "stopped"
        return f"<ZooKeeperServer {self.hosts} myid={self.myid} {state}>"

    # -- helpers -------------------------------------------------------------------------------
    def _write_files(self) -> Path:
        data = self.base_dir / "data"
        data.mkdir(parents=True, exist_ok=True)
        if self.myid is not None:
            (data / "myid").write_text(f"{self.myid}\n")
        for name, text in _LOGGING_FILES.items():
            (self.base_dir / name).write_text(text)
        lines = [f"{key}={value}" for key, value in {**self._config, "dataDir": data}.items()]
        config = self.base_dir / "zoo.cfg"
        config.write_text("# written by Kafka Controller Lab (backend/zkserver/server.py)\n"
                          + "\n".join(lines) + "\n")
        return config

    def _logging_options(self) -> list[str]:
        return [flag.format(self.base_dir / name) for name, flag in _LOGGING_PROPERTIES.items()]

    def _failure(self, what: str) -> str:
        return (f"ZooKeeper {self.classpath.version} from {self.classpath.source} on {self.hosts} "
                f"{what}. Last lines of {self.log_path}:\n{self.log_tail()}")


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)  # process_group=0 made the JVM its group's leader
    except ProcessLookupError:
        pass
