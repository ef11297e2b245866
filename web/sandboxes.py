"""Sandboxes: one live cluster per visitor (or per class demo), in its own chroot and room.

The manager reserves each sandbox a place under the cap, builds it (a cluster, or a lesson
playing on one), finds it by id, and closes it; idle sandboxes are reclaimed, their replay logs
stay. What one sandbox holds (``Sandbox``: its view, its pending records, its token) is
``web.sandbox``'s.
"""

from __future__ import annotations

import io
import logging
import secrets
import threading
import time
from pathlib import Path
from typing import Any, Callable

from backend.runtime.cluster import Cluster
from backend.runtime.record_bus import HISTORY as RECORD_HISTORY, RecordBus
from backend.runtime.replay import ReplayWriter
from backend.runtime.runner import APP_VERSION, new_session_id
from backend.faultscript.cluster_spec import ClusterSpec
from backend.zk import paths
from web.capacity import Capacity, fixed_capacity
from web.places import LocalPlaces, SandboxLimit
from web.replay_access import write_owner
from web.sandbox import AppliedFaults, Sandbox

__all__ = ["SandboxLimit", "SandboxManager"]

log = logging.getLogger(__name__)


class SandboxManager:
    def __init__(self, zk_hosts: str, replay_dir: Path, idle_seconds: float = 1800,
                 max_sandboxes: int | Capacity = 40, zk_control=None, chroot_root: str = paths.KCLAB_ROOT,
                 max_per_client: int | None = None, client_of: Callable[[], str | None] = lambda: None,
                 health_check: Callable[[], None] = lambda: None, busy_check: Callable[[], None] = lambda: None,
                 owner=None, places=None, record_history: int = RECORD_HISTORY) -> None:
        self.zk_hosts = zk_hosts
        self.replay_dir = Path(replay_dir)
        self.idle_seconds = idle_seconds
        capacity = max_sandboxes if isinstance(max_sandboxes, Capacity) else fixed_capacity(max_sandboxes)
        self.places = places or LocalPlaces(capacity, max_per_client)
        self.record_history = record_history
        """Records each sandbox's bus keeps in memory (older ones are in its replay log)."""
        """The cap and the clients' shares (``web/places.py``): this process's, or every worker's in Redis."""
        self.zk_control = zk_control
        self.chroot_root = chroot_root
        self.client_of = client_of
        """Who is asking now (``web.clients.current_client``); ``None``: the server itself."""
        self.health_check = health_check
        """Raises (a 503) when ZooKeeper is unreachable: nothing that needs it is then started."""
        self.busy_check = busy_check
        """Raises (a 503) while this worker has fallen behind (``web/load_guard.py``): called for a
        student's new fault or sandbox, never for the instructor's."""
        self.owner = owner
        """The app's ZooKeeper session (``AppSession``): claims each sandbox's chroot, so a sweep in
        another process never removes it; ``None`` (some tests): unclaimed."""
        self._sandboxes: dict[str, Sandbox] = {}
        self._reserved: dict[str, str | None] = {}  # session id -> client
        self._lock = threading.Lock()
        self.on_created: list[Callable[[Sandbox], None]] = []
        self.on_pending: Callable[[], None] | None = None
        """Given to every sandbox (the broadcaster's wake-up)."""

    def _reserve(self, mode: str) -> str:
        """A session id and a place under the cap (and the client's share), taken in one step:
        sandboxes being built count, so requests arriving together cannot pass a limit."""
        self.health_check()
        client = self.client_of()
        session_id = new_session_id(mode)
        self.places.take(session_id, client)
        with self._lock:
            self._reserved[session_id] = client
        return session_id

    def _register(self, session_id: str, sandbox: Sandbox | None) -> None:
        """The reserved place becomes ``sandbox`` (``None``: building it failed, free the place)."""
        with self._lock:
            client = self._reserved.pop(session_id, None)
            if sandbox is not None:
                sandbox.client = client
                self._sandboxes[sandbox.id] = sandbox
        if sandbox is None:
            self.places.give_back(session_id)
        if sandbox is not None and sandbox.mode != "class":  # a class demo's log: the instructor's
            write_owner(self.replay_dir, sandbox.id, sandbox.token)

    def _chroot(self, session_id: str) -> str:
        return f"{self.chroot_root}/{session_id}"

    def _claim(self, session_id: str) -> None:
        if self.owner is not None:
            self.owner.claim(self._chroot(session_id))

    def _abandon(self, session_id: str) -> None:
        """Building a sandbox failed before it was registered: free its place and its claim."""
        self._register(session_id, None)
        if self.owner is not None:
            self.owner.release(self._chroot(session_id))

    def create(self, spec: ClusterSpec, mode: str = "sandbox", **header: Any) -> Sandbox:
        session_id = self._reserve(mode)
        try:
            self._claim(session_id)
            bus = RecordBus(session_id, history=self.record_history)
            cluster = Cluster(self.zk_hosts, self._chroot(session_id), spec, session_id, bus,
                              zk_control=self.zk_control)
        except Exception:
            self._abandon(session_id)
            raise
        sandbox = Sandbox(session_id, secrets.token_urlsafe(18), cluster, bus, mode, on_pending=self.on_pending)
        self._register(session_id, sandbox)
        sandbox.replay = ReplayWriter(self.replay_dir, cluster.header(mode, APP_VERSION, **header))
        self._keep_applied(sandbox)
        bus.subscribe(sandbox.take_and_log)
        try:
            cluster.start()
        except Exception:
            self.close(sandbox.id)
            raise
        for callback in self.on_created:
            callback(sandbox)
        return sandbox

    def create_lesson_session(self, lesson, audience, mode: str = "lesson", stop_before: int | None = None,
                              lesson_key: str | None = None, **header: Any) -> Sandbox:
        """A sandbox whose cluster a lesson plays on (its runner owns cluster and replay log);
        after the last step — or before ``stop_before`` — the cluster stays up for free play."""
        from backend.lessons.runner import LessonRunner
        session_id = self._reserve(mode)
        bus = RecordBus(session_id, history=self.record_history)
        own = _own_ensemble(lesson.script.cluster.zookeeper_servers)  # its ports only: it starts in the thread
        try:
            self._claim(session_id)
            runner = LessonRunner(lesson, own.hosts if own else self.zk_hosts, audience=audience,
                                  chroot=self._chroot(session_id), replay_dir=self.replay_dir,
                                  session_id=session_id, bus=bus, mode=mode, zk_control=own or self.zk_control,
                                  close_when_done=False, stop_before=stop_before, header=header,
                                  log=io.StringIO())  # its narration is in its records
        except Exception:
            self._abandon(session_id)
            raise
        sandbox = Sandbox(session_id, secrets.token_urlsafe(18), runner.cluster, bus, mode, runner=runner,
                          audience=audience, lesson_id=lesson_key or lesson.id, on_pending=self.on_pending,
                          own_zookeeper=own)
        self._keep_applied(sandbox)
        bus.subscribe(sandbox.take_records)
        self._register(session_id, sandbox)
        sandbox.thread = threading.Thread(target=self._play, args=(sandbox,), name=f"lesson-{session_id}", daemon=True)
        sandbox.thread.start()
        for callback in self.on_created:
            callback(sandbox)
        return sandbox

    @staticmethod
    def _keep_applied(sandbox: Sandbox) -> None:
        """A class session keeps the faults it applies, from its first, for its hand-outs."""
        if sandbox.mode == "class":
            sandbox.applied = AppliedFaults()
            sandbox.bus.subscribe(sandbox.applied)

    @staticmethod
    def _play(sandbox: Sandbox) -> None:
        """The lesson's thread: an error ends the lesson (logged), never silently, and the
        cluster stays for free play as after the last step."""
        try:
            if sandbox.own_zookeeper is None:
                sandbox.runner.run()
            else:
                _play_on_own_ensemble(sandbox.runner, sandbox.own_zookeeper, sandbox.audience)
        except Exception:  # noqa: BLE001 - logged with its traceback; the sandbox stays usable
            log.exception("the lesson played in %s stopped with an error", sandbox.id)

    def get(self, sandbox_id: str) -> Sandbox | None:
        with self._lock:
            return self._sandboxes.get(sandbox_id)

    def all(self) -> list[Sandbox]:
        with self._lock:
            return list(self._sandboxes.values())

    def close(self, sandbox_id: str) -> None:
        with self._lock:
            sandbox = self._sandboxes.pop(sandbox_id, None)
        if sandbox is None or sandbox.closed:
            return
        sandbox.closed = True
        try:
            if sandbox.runner is not None:
                sandbox.audience.stop()
                if sandbox.own_zookeeper is not None:  # its thread closes the cluster, then the ensemble
                    sandbox.thread.join(60)
                    return
                if sandbox.thread is not None:
                    sandbox.thread.join(10)
                sandbox.runner.close()
                return
            try:
                sandbox.cluster.close()
            finally:
                if sandbox.replay is not None:
                    sandbox.replay.close()
        finally:
            # Only now: until its brokers and sessions are closed they are the machine's to carry.
            self.places.give_back(sandbox_id)
            if self.owner is not None:
                self.owner.release(sandbox.cluster.chroot)

    def sweep(self, grace_s: float = 60.0) -> list[str]:
        """Delete chroots below ``chroot_root`` whose owner (any process) is gone."""
        return self.owner.sweep(self.chroot_root, grace_s) if self.owner is not None else []

    def reap_idle(self, now: float | None = None) -> list[str]:
        """Close sandboxes nobody has watched or used for ``idle_seconds``; their logs stay."""
        now = time.monotonic() if now is None else now
        idle = [s.id for s in self.all() if s.watchers == 0 and now - s.last_active > self.idle_seconds]
        for sandbox_id in idle:
            self.close(sandbox_id)
        return idle

    def close_all(self) -> None:
        for sandbox in self.all():
            self.close(sandbox.id)


def _own_ensemble(servers: int):
    """A private ensemble for a lesson that stops ZooKeeper servers (a quorum lesson), so that it
    never stops the servers every other sandbox runs on; None for one server. Not started yet."""
    if servers <= 1:
        return None
    from backend.zkserver.ensemble import ZooKeeperEnsemble
    return ZooKeeperEnsemble(servers, force_sync=False)


def _play_on_own_ensemble(runner, ensemble, audience) -> None:
    """A quorum lesson's thread: it starts the ensemble, plays the lesson, and stays until the
    sandbox closes. A ZooKeeper server dies with the thread that launched it (PDEATHSIG, see
    ``backend.zkserver.server``), and the lesson restarts servers from this thread, so it must
    outlive them."""
    try:
        ensemble.start()
        runner.run()
        audience.wait_stopped()
    finally:
        try:
            runner.close()
        finally:
            ensemble.stop()
