"""Sandboxes: one live cluster per visitor (or per class demo), in its own chroot and room.

A sandbox owns its cluster, its record bus, its replay log, and a live *view* (the page's view
state, folded from the records as they pass) so a page joining or reconnecting gets a snapshot
at once and then only the records after it. Each sandbox has a secret token: only whoever
created it may act on it or watch it. Idle sandboxes are reclaimed; their replay logs stay.
"""

from __future__ import annotations

import copy
import io
import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from backend.core.records import Record
from backend.runtime.cluster import Cluster
from backend.runtime.record_bus import RecordBus
from backend.runtime.replay import ReplayWriter
from backend.runtime.runner import APP_VERSION, new_session_id
from backend.scripts.cluster_spec import ClusterSpec
from backend.view import page
from backend.zk import paths


@dataclass
class Sandbox:
    id: str
    token: str
    cluster: Cluster
    bus: RecordBus
    mode: str
    created: float = field(default_factory=time.monotonic)
    last_active: float = field(default_factory=time.monotonic)
    watchers: int = 0
    replay: ReplayWriter | None = None
    view: dict = field(default_factory=page.empty_view)
    pending: list[dict] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    closed: bool = False
    runner: Any = None
    """A lesson being played in this sandbox (walkthroughs and class lessons), else ``None``."""
    audience: Any = None
    lesson_id: str | None = None
    on_pending: Callable[[], None] | None = None
    """Called when records arrive and none were waiting: the broadcaster wakes to send them."""
    last_broadcast: float = 0.0
    """When the broadcaster last sent this sandbox a batch (``time.monotonic``)."""
    thread: threading.Thread | None = None
    """The thread playing ``runner``'s lesson."""

    def take_records(self, records: list[Record]) -> None:
        """Record-bus sink: fold into the live view and queue for the next broadcast batch."""
        dicts = [r.to_dict() for r in records]
        with self.lock:
            for record in dicts:
                page.apply(self.view, record)
            first = not self.pending
            self.pending.extend(dicts)
        if first and self.on_pending is not None:
            self.on_pending()

    def has_pending(self) -> bool:
        return bool(self.pending)

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            return {"seq": self.view["seq"], "view": copy.deepcopy(self.view)}

    def drain(self) -> list[dict]:
        with self.lock:
            pending, self.pending = self.pending, []
        return pending

    def touch(self) -> None:
        self.last_active = time.monotonic()

    def describe(self) -> dict[str, Any]:
        spec = self.cluster.spec
        return {"id": self.id, "mode": self.mode, "status": "closed" if self.closed else "running",
                "lesson": self.lesson_id,
                "cluster": {"brokers": list(spec.brokers), "chroot": self.cluster.chroot,
                            "topics": {t: {"partitions": s.partitions, "replication_factor": s.replication_factor}
                                       for t, s in spec.topics.items()},
                            "config": dict(spec.config)}}


class SandboxLimit(Exception):
    """No room for another sandbox on this machine."""


class SandboxManager:
    def __init__(self, zk_hosts: str, replay_dir: Path, idle_seconds: float = 1800, max_sandboxes: int = 40,
                 zk_control=None, chroot_root: str = paths.KCLAB_ROOT) -> None:
        self.zk_hosts = zk_hosts
        self.replay_dir = Path(replay_dir)
        self.idle_seconds = idle_seconds
        self.max_sandboxes = max_sandboxes
        self.zk_control = zk_control
        self.chroot_root = chroot_root
        self._sandboxes: dict[str, Sandbox] = {}
        self._reserved: set[str] = set()
        self._lock = threading.Lock()
        self.on_created: list[Callable[[Sandbox], None]] = []
        self.on_pending: Callable[[], None] | None = None
        """Given to every sandbox (the broadcaster's wake-up)."""

    def _reserve(self, mode: str) -> str:
        """A session id and a place under ``max_sandboxes``, taken in one step: sandboxes being
        built count, so requests arriving together cannot pass the limit."""
        with self._lock:
            if len(self._sandboxes) + len(self._reserved) >= self.max_sandboxes:
                raise SandboxLimit(f"this server already runs {self.max_sandboxes} sandboxes; try again later")
            session_id = new_session_id(mode)
            self._reserved.add(session_id)
            return session_id

    def _register(self, session_id: str, sandbox: Sandbox | None) -> None:
        """The reserved place becomes ``sandbox`` (``None``: building it failed, free the place)."""
        with self._lock:
            self._reserved.discard(session_id)
            if sandbox is not None:
                self._sandboxes[sandbox.id] = sandbox

    def create(self, spec: ClusterSpec, mode: str = "sandbox", **header: Any) -> Sandbox:
        session_id = self._reserve(mode)
        try:
            bus = RecordBus(session_id)
            cluster = Cluster(self.zk_hosts, f"{self.chroot_root}/{session_id}", spec, session_id, bus,
                              zk_control=self.zk_control)
        except Exception:
            self._register(session_id, None)
            raise
        sandbox = Sandbox(session_id, secrets.token_urlsafe(18), cluster, bus, mode, on_pending=self.on_pending)
        self._register(session_id, sandbox)
        sandbox.replay = ReplayWriter(self.replay_dir, cluster.header(mode, APP_VERSION, **header))
        bus.subscribe(sandbox.replay)
        bus.subscribe(sandbox.take_records)
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
        bus = RecordBus(session_id)
        try:
            runner = LessonRunner(lesson, self.zk_hosts, audience=audience, chroot=f"{self.chroot_root}/{session_id}",
                                  replay_dir=self.replay_dir, session_id=session_id, bus=bus, mode=mode,
                                  zk_control=self.zk_control, close_when_done=False, stop_before=stop_before,
                                  header=header, log=io.StringIO())  # its narration is in its records
        except Exception:
            self._register(session_id, None)
            raise
        sandbox = Sandbox(session_id, secrets.token_urlsafe(18), runner.cluster, bus, mode, runner=runner,
                          audience=audience, lesson_id=lesson_key or lesson.id, on_pending=self.on_pending)
        bus.subscribe(sandbox.take_records)
        self._register(session_id, sandbox)
        sandbox.thread = threading.Thread(target=runner.run, name=f"lesson-{session_id}", daemon=True)
        sandbox.thread.start()
        for callback in self.on_created:
            callback(sandbox)
        return sandbox

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
        if sandbox.runner is not None:
            sandbox.audience.stop()
            if sandbox.thread is not None:
                sandbox.thread.join(10)
            sandbox.runner.close()
            return
        try:
            sandbox.cluster.close()
        finally:
            if sandbox.replay is not None:
                sandbox.replay.close()

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

