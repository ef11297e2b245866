"""Helpers shared by the tests: condition waits, process checks, a line reader for child output.

Tests never sleep a fixed time: they wait for a condition with a timeout, and a timeout says
what did not happen and what was last seen.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, TypeVar

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError, NotEmptyError

import backend.zk  # noqa: F401 - the tests' own clients draw kazoo's jitter off the process's random too

T = TypeVar("T")
_MISSING = object()


def wait_until(predicate: Callable[[], T], timeout: float = 10.0, message: str = "condition",
               interval: float = 0.02, retry_on: tuple[type[BaseException], ...] = ()) -> T:
    """Poll ``predicate`` until it returns something truthy, and return that.

    Exceptions listed in ``retry_on`` count as "not yet" (e.g. ``ConnectionLoss`` while an
    ensemble elects a leader); any other exception fails at once. On timeout, raise
    ``AssertionError`` with ``message`` and the last value or exception.
    """
    deadline = time.monotonic() + timeout
    last: object = _MISSING
    while True:
        try:
            last = predicate()
            if last:
                return last
        except retry_on as error:
            last = error
        if time.monotonic() >= deadline:
            seen = "nothing" if last is _MISSING else repr(last)
            raise AssertionError(f"{message} (not within {timeout:g} s; last value: {seen})")
        time.sleep(interval)


def requests_sent(client: KazooClient, thread: int | None = None) -> list[str]:
    """From now on, the type of every request ``client`` sends (``GetData``, ``MultiRead``, …) in
    the list returned; with ``thread``, only those that thread makes. The real client still sends
    them: this counts, it does not stand in."""
    sent: list[str] = []
    real = client._call

    def counted(request, async_object):
        if thread is None or threading.get_ident() == thread:
            sent.append(type(request).__name__)
        return real(request, async_object)
    client._call = counted
    return sent


def app_config(zk_hosts: str, data_dir, **config) -> dict:
    """The config of an app a test runs in its own process (``web.app.create_app``).

    Its load guard (``web/load_guard.py``) is off, both its limits. The guard refuses new work
    while the whole *process* runs late, and a pytest worker that shares two cores with another
    worker, ZooKeeper, Spark and Chromium now and then runs 0.3 s late: CI's run of stop 36 had a
    sandbox refused as "overloaded" in a test about something else. ``tests/web/test_load_guard.py``
    switches it back on. The servers the end-to-end tests start keep it, as a class's server has
    it (``tests/hardening/server.py`` waits a refusal out, as a student is told to)."""
    return {"ZK_HOSTS": zk_hosts, "DATA_DIR": str(data_dir), "TESTING": True, "SHED_AFTER_MS": 0,
            "SHED_ZK_AFTER_MS": 0, **config}


@contextmanager
def running_app(zk_hosts: str, data_dir, **config) -> Iterator:
    """An app of the test's own (``app_config``), closed at the end whatever happened: its
    sandboxes' brokers, sessions and threads must not outlive the test into the next one."""
    from web.app import create_app  # the pure tests import this module without the web layer

    app = create_app(app_config(zk_hosts, data_dir, **config))
    try:
        yield app
    finally:
        app.extensions["kclab"].close()


def pid_alive(pid: int) -> bool:
    """True while ``pid`` runs; a zombie (exited, not yet reaped) counts as dead."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    state = stat.rsplit(")", 1)[1].split()[0]
    return state not in ("Z", "X")


def child_pids(pid: int, command_contains: str = "") -> list[int]:
    """Live children of ``pid`` whose command line contains ``command_contains``."""
    children = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if int(fields[1]) == pid and command_contains in cmdline and fields[0] not in ("Z", "X"):
            children.append(int(entry.name))
    return children


class LineReader:
    """Collect a child's output lines in a thread, so a test can wait for one with a timeout."""

    def __init__(self, stream):
        self.lines: list[str] = []
        self._thread = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self._thread.start()

    def _read(self, stream) -> None:
        for line in stream:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, pattern: str, timeout: float = 30.0, proc: subprocess.Popen | None = None) -> re.Match:
        """Return the first match of ``pattern`` in a line; fail early if ``proc`` exits."""
        regex = re.compile(pattern)

        def found():
            for line in list(self.lines):
                match = regex.search(line)
                if match:
                    return match
            if proc is not None and proc.poll() is not None:
                raise AssertionError(f"process exited ({proc.returncode}) before printing "
                                     f"{pattern!r}; output: {self.lines}")
            return None

        return wait_until(found, timeout, f"no output line matched {pattern!r}; output so far: {self.lines}")

    def text(self) -> str:
        return "\n".join(self.lines)


def started_client(hosts: str, **kwargs) -> KazooClient:
    """A connected ``KazooClient`` (``hosts`` may end in a chroot)."""
    client = KazooClient(hosts=hosts, **kwargs)
    client.start(timeout=15)
    return client


def close_client(client: KazooClient) -> None:
    client.stop()
    client.close()


def sanitize_znode_name(name: str, limit: int = 80) -> str:
    """A test's name as one znode path segment (no '/', nothing exotic)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)[:limit] or "test"


def kclab_command() -> list[str]:
    """The ``kclab`` console script installed next to this interpreter (``make setup``)."""
    script = Path(os.path.abspath(sys.executable)).parent / "kclab"  # not resolved: the venv
    assert script.exists(), f"{script} is missing: run `make setup` (pip install -e '.[test]')"
    return [str(script)]


def delete_tree(client: KazooClient, path: str) -> None:
    """Delete ``path`` and everything below it. A child may appear while we delete (a
    watch-driven re-registration of a broker still closing): try again, for up to 10 s."""
    def deleted():
        try:
            client.delete(path, recursive=True)
        except NoNodeError:
            pass
        return True
    wait_until(deleted, 10, f"could not delete {path}", retry_on=(NotEmptyError,))


def record_script(script: Path, zk_hosts: str, zk_root_client: KazooClient, chroot: str, replay_dir: Path, **kw):
    """Run a fault script into ``replay_dir`` (a finished session to replay or count), then
    delete its chroot; returns the ``RunResult`` (asserted ok)."""
    from backend.runtime.runner import ScriptRunner
    from backend.faultscript.loader import load_script
    try:
        result = ScriptRunner(load_script(script), zk_hosts, chroot, replay_dir=replay_dir, **kw).run()
    finally:
        delete_tree(zk_root_client, chroot)
    assert result.ok, f"{script.name}: {result.message}"
    return result
