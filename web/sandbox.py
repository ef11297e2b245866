"""One sandbox: a visitor's (or a class demo's) live cluster with what its pages need.

A sandbox owns its cluster, its record bus, its replay log, and a live *view* (the page's view
state, folded from the records as they pass) so a page joining or reconnecting gets a snapshot
at once and then only the records after it; the records not yet sent wait in ``pending`` for the
broadcaster. Its secret token lets only whoever created it act on it or watch it. Creating,
closing and reaping sandboxes is ``web.sandboxes``'.
"""

from __future__ import annotations

import copy
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from backend.core.records import Record
from backend.runtime.cluster import Cluster
from backend.runtime.record_bus import RecordBus
from backend.runtime.replay import ReplayWriter
from backend.view import page
from web.fairness import MAX_BATCH, FaultQueue

MAX_REPLAYED_FAULTS = 1000
"""The most faults a class session applies that a hand-out still replays: each copy replays every
one, waiting for the cluster to settle after each (a fraction of a second to a few seconds), so
past this a copy would take many minutes; the instructor is asked to start a new session."""


class AppliedFaults:
    """Record-bus sink of a class session: the faults it applied, in order, for its hand-outs.

    The bus keeps only its newest records (``RecordBus`` history): a demo that made more would
    hand out copies missing its oldest faults, different clusters from the class's. The faults
    are few and small, so they are kept apart, up to :data:`MAX_REPLAYED_FAULTS`."""

    def __init__(self, limit: int = MAX_REPLAYED_FAULTS) -> None:
        self.limit = limit
        self._faults: list[tuple[str, dict]] = []
        self.beyond = 0
        """Faults applied after the first ``limit``: a hand-out is refused while there are any."""

    def __call__(self, records: list[Record]) -> None:
        for record in records:
            if record.kind == "fault" and record.to_state == "applied":
                if len(self._faults) < self.limit:
                    self._faults.append((record.op, (record.detail or {}).get("args", {})))
                else:
                    self.beyond += 1

    def replayed(self) -> list[tuple[str, dict]]:
        """The faults a copy replays: all of them (a copy of the list, taken under the GIL)."""
        return list(self._faults)


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
    remote_watchers: int = 0
    """Of ``watchers``, the pages connected to other workers (``web/scaleout/routes.py``'s
    follow): only while there are any must this sandbox's batches go through the message queue."""
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
    """Called when records arrive and none were waiting, or a fault's own record arrives (``acted``):
    the broadcaster wakes to send them."""
    last_broadcast: float = 0.0
    """When the broadcaster last sent this sandbox a batch (``time.monotonic``)."""
    acted: bool = False
    """A fault's own record (someone's click, a lesson's step) waits in ``pending``: the
    broadcaster sends it without waiting out the spacing a watched sandbox's batches keep
    (``web.broadcast.Broadcaster.flush``)."""
    last_batch_early: bool = False
    """The last batch went before its spacing, for an action: the next keeps the spacing, so a burst
    of actions costs at most twice a sandbox's usual batches."""
    thread: threading.Thread | None = None
    """The thread playing ``runner``'s lesson."""
    client: str | None = None
    """Who asked for it (``web.clients``): each client may hold only so many sandboxes."""
    own_zookeeper: Any = None
    """A lesson about ZooKeeper's quorum stops and starts servers: it gets an ensemble of its own."""
    faults: FaultQueue = field(default_factory=FaultQueue)
    """Its faults, one at a time (``web/fairness.py``): a flood holds few of the worker's threads."""
    applied: AppliedFaults | None = None
    """A class session's applied faults, which its hand-outs replay (``None`` for other sandboxes)."""

    def take_records(self, records: list[Record]) -> None:
        """Record-bus sink: fold into the live view and queue for the next broadcast batch."""
        self.take_dicts([r.to_dict() for r in records])

    def take_and_log(self, records: list[Record]) -> None:
        """Record-bus sink of a sandbox that writes its own replay log: each record is made a dict
        once, for the log (first, as before) and for the pages, where each sink made its own (a few
        µs a record, issue 14, twenty-seventh round). Neither keeps a reference the other changes:
        the log writes each line at once, and the pages' view and batches shared their dicts
        already."""
        dicts = [r.to_dict() for r in records]
        if self.replay is not None:
            self.replay.write_dicts(dicts)
        self.take_dicts(dicts)

    def take_dicts(self, dicts: list[dict]) -> None:
        """Fold into the view and queue for the broadcaster, waking it for the first records since
        its last batch and for a fault's own record (which need not wait behind earlier ones)."""
        with self.lock:
            for record in dicts:
                page.apply(self.view, record)
            first = not self.pending
            self.pending.extend(dicts)
            acted = not self.acted and any(record["kind"] == "fault" for record in dicts)
            if acted:
                self.acted = True
        if (first or acted) and self.on_pending is not None:
            self.on_pending()

    def has_pending(self) -> bool:
        return bool(self.pending)

    def snapshot(self) -> dict[str, Any]:
        with self.lock:
            return {"seq": self.view["seq"], "view": copy.deepcopy(self.view)}

    def snapshot_with_catch_up(self) -> tuple[dict[str, Any], list[dict]]:
        """The snapshot a page starts from and the records made after it, as dicts. Taken after the
        page was counted and joined the room, so a record made at any moment is in the snapshot, in
        the catch-up, or in a later batch (perhaps twice: pages dedupe by ``seq``)."""
        snapshot = self.snapshot()
        return snapshot, [r.to_dict() for r in self.bus.since(snapshot["seq"] + 1)]

    def drain(self, limit: int = MAX_BATCH) -> list[dict]:
        """The oldest ``limit`` records waiting to be sent (the rest wait for the next round, still
        marked ``acted`` if a fault's record is among them)."""
        with self.lock:
            batch, self.pending = self.pending[:limit], self.pending[limit:]
            # A backlog beyond one batch may still hold the fault's record: it keeps its mark.
            self.acted = self.acted and any(record["kind"] == "fault" for record in self.pending)
        return batch

    def touch(self) -> None:
        self.last_active = time.monotonic()

    def followed(self, elsewhere: bool = False) -> None:
        """A page starts following this sandbox: a watched sandbox is never reaped as idle.
        ``elsewhere``: the page is connected to another worker, so this sandbox's batches must go
        through the message queue from now on — counted before the page's snapshot is taken, so a
        batch sent to this worker's pages alone is in that snapshot."""
        self.watchers += 1
        if elsewhere:
            self.remote_watchers += 1

    def unfollowed(self, elsewhere: bool = False) -> None:
        """A page stopped following (as :meth:`followed` counted it); idle from now."""
        self.watchers = max(0, self.watchers - 1)
        if elsewhere:
            self.remote_watchers = max(0, self.remote_watchers - 1)
        self.touch()

    def describe(self) -> dict[str, Any]:
        spec = self.cluster.spec
        return {"id": self.id, "mode": self.mode, "status": "closed" if self.closed else "running",
                "lesson": self.lesson_id,
                "cluster": {"brokers": list(spec.brokers), "chroot": self.cluster.chroot,
                            "topics": {t: {"partitions": s.partitions, "replication_factor": s.replication_factor}
                                       for t, s in spec.topics.items()},
                            "config": dict(spec.config)}}
