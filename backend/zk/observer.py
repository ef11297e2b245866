"""What ZooKeeper itself holds, as records: the browser's ZooKeeper view is drawn from these.

A separate session (not any broker's) watches the cluster's whole subtree and turns every
change into a ``zk`` record — including the ones no controller made: an ephemeral znode
vanishing with its session, or an operator's ``zkCli.sh`` edit. A write the controller
*attempted* and ZooKeeper refused is recorded by the writer instead (``backend.zk.fenced``).

Watches only queue the path that changed; one thread re-reads it and compares with what it
last saw. Re-reading rather than trusting the watch's event type matters: ``/controller`` is
often deleted and re-created by another broker within milliseconds, between two looks — the
different czxid then tells a deletion-and-creation from a change. (kazoo's TreeCache misses
exactly that case, which is why we do not use it.)

The event's type still says *which* read: a data watch and a child watch are separate and
one-shot, and a data change leaves the child watch in place (and the other way round), so a
data event is answered with a ``get`` and a child event with a ``get_children`` (with the
parent's stat, which tells a re-created node). Both reads happen only for a node new to the
observer or created again. A node's deletion fires both its watches; a read already queued for
a path is not queued twice. Reading both on every event was two thirds of a sandbox's
ZooKeeper requests per fault (issue 14, docs/performance.md).

On ZooKeeper 3.6 or later (``persistent``) none of that re-arming is needed: one persistent
recursive watch on ``/`` (``persistent_watch.py``) tells each creation, deletion and data change
of every znode below, in order, and stays set. A creation or a change is then answered with a
read of that znode's data, compared as above (the czxid still tells a node created again); a
deletion, when nothing but deletions happened to that path since its look was queued, with no
read at all — the node is gone, and a creation after it would have its own event. The looks
queued together (a failover changes several partition states at once) are read in one
``multiRead``, which every 3.6 server has, and their records sent in one emit. The resync
after a (re)connection adds the watch again before it walks the tree, so that no change falls
between the two.
"""

from __future__ import annotations

import logging
import queue
import threading
from typing import Callable

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import KazooException, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import EventType

from backend.core.records import Record
from backend.core.subjects import znode_subject
from backend.zk.multi_read import CHUNK, ZnodeReader
from backend.zk.persistent_watch import forget_subtree, watch_subtree
from backend.zk.znode_decoder import describe_data

log = logging.getLogger(__name__)
_STOP = object()
_GONE = object()
_ALL, _DATA, _CHILDREN, _LOOK = "all", "data", "children", "look"
TIMEOUT_S = 10
"""How long one of the observer's requests may take (the ``addWatch``, a multiRead of looks)."""
_RESYNC = ("all", "/")
"""Look at the whole tree again (at start, and after a reconnection)."""
_READ_FOR = {EventType.CHANGED: _DATA, EventType.DELETED: _DATA, EventType.CREATED: _ALL,
             EventType.CHILD: _CHILDREN}
"""The read a watch event asks for (a deletion: a ``get``, which also tells a node created again)."""


class ZkObserver:
    def __init__(self, client: KazooClient, emit: Callable[[list[Record]], object],
                 owner_of_session: Callable[[str], int | None], persistent: bool = False) -> None:
        """``persistent``: every server is ZooKeeper 3.6+, so one persistent recursive watch
        replaces the one-shot ones (see the module's docstring)."""
        self._zk = client
        self._persistent = persistent
        self._looks: dict[str, bool] = {}
        """With ``persistent``: the paths whose look is queued, and whether it must read (False:
        only deletions happened to that path since it was queued)."""
        self._emit = emit
        self._owner_of_session = owner_of_session
        self._known: dict[str, tuple[bytes, object]] = {}  # path -> (data, stat)
        self._children: dict[str, set[str]] = {}
        self._queue: queue.Queue = queue.Queue()
        self._pending: set[tuple[str, str]] = set()  # queued reads, so that none is queued twice
        self._pending_lock = threading.Lock()
        self._made: list[Record] = []
        """The records of the step under way, sent together when it ends (``_safely``)."""
        self._reader = ZnodeReader(client, TIMEOUT_S, multi_read=persistent)
        self._thread = threading.Thread(target=self._run, name="zk-observer", daemon=True)

    def start(self) -> None:
        self._zk.add_listener(self._on_state)
        self._queue.put(_RESYNC)
        self._thread.start()

    def close(self) -> None:
        self._zk.remove_listener(self._on_state)
        if self._persistent:
            forget_subtree(self._zk, "/")
        self._queue.put(_STOP)
        self._thread.join(5)

    def _on_state(self, state) -> None:
        if state == KazooState.CONNECTED:
            self._queue.put(_RESYNC)  # kazoo dropped every watch on the disconnect: look at everything

    def _watch(self, event) -> None:
        read = _READ_FOR.get(event.type)
        if read is None:
            return
        with self._pending_lock:
            if (read, event.path) in self._pending:
                return  # already queued and not yet read: that read will see this change too
            self._pending.add((read, event.path))
        self._queue.put((read, event.path))

    def _changed(self, kind: str, path: str) -> None:
        """A persistent watch's event, on the connection's thread: queue one look at ``path``."""
        with self._pending_lock:
            must_read = self._looks.get(path)
            if must_read is not None:  # a look is queued: it will see this change too
                if kind != "deleted":
                    self._looks[path] = True
                return
            self._looks[path] = kind != "deleted"
        self._queue.put((_LOOK, path))

    def _run(self) -> None:
        item = None
        while True:
            item = item or self._queue.get()
            if item is _STOP:
                return
            read, path = item
            if read == _LOOK:
                looks, item = self._more_looks([path])
                self._safely(self._look, looks)
                continue
            with self._pending_lock:
                self._pending.discard(item)  # a change from here on queues a read again
            self._safely(self._resync if item is _RESYNC else self._refresh, path, read)
            item = None

    def _more_looks(self, looks: list[str]) -> tuple[list[str], object]:
        """The looks queued behind the first, up to a request's worth, and the first item that is
        not a look (``None`` if the queue ran dry): a failover's changes read in one request."""
        while len(looks) < CHUNK:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return looks, None
            if item is _STOP or item[0] != _LOOK:
                return looks, item
            looks.append(item[1])
        return looks, None

    def _safely(self, step: Callable, *args) -> None:
        """Run one step and send the records it made, in one emit. ZooKeeper failing a read (a lost
        connection, a time-out) is repaired by the resync on reconnect; anything else is a bug,
        logged, and the observer goes on with the next change."""
        try:
            step(*args)
        except (KazooException, KazooTimeoutError):
            pass
        except Exception:  # noqa: BLE001 - the page's ZooKeeper view must outlive one bad step
            log.exception("the ZooKeeper observer failed a step; it goes on")
        finally:
            made, self._made = self._made, []
            if made:
                self._emit(made)

    def _resync(self, path: str, read: str) -> None:
        """Look at the whole tree again; with the persistent watch, add it again first (a
        reconnection lost it) so that no change falls between the watch and the walk."""
        if self._persistent:
            watch_subtree(self._zk, "/", self._changed, TIMEOUT_S)
        self._refresh(path, read, recursive=True)

    def _look(self, paths: list[str]) -> None:
        """A persistent watch's news about ``paths``: read those that need it, all in one
        ``multiRead`` (a deletion, when only deletions happened, needs none), and record what
        differs from the last look. A node's children have events of their own, so a node
        created again is told as deleted and created without touching what is known below it."""
        with self._pending_lock:  # a change from here on queues a look again
            flags = {path: self._looks.pop(path, True) for path in paths}
        must_read = [path for path, read in flags.items() if read]
        try:
            found = dict(zip(must_read, self._reader.get_many(must_read)))
        except KazooTimeoutError:
            # No answer in time, but the connection held (a lost one ends in a resync): nothing
            # else would bring these changes back, so they are looked at again.
            self._look_again(flags)
            raise
        for path in paths:
            result = found.get(path, _GONE)
            if isinstance(result, Exception):
                if not isinstance(result, NoNodeError):
                    raise result
                result = _GONE
            if result is _GONE:
                self._forget(path)
                self._unlist(path)
                continue
            data, stat = result
            before = self._known.get(path)
            if before is not None and before[1].czxid != stat.czxid:
                self._forget(path, below=False)
                before = None
            if path != "/":
                if before is None:
                    self._record(path, "created", data, stat)
                    parent, _, name = path.rpartition("/")
                    self._children.setdefault(parent or "/", set()).add(name)
                elif before[1].mzxid != stat.mzxid:
                    self._record(path, "changed", data, stat)
            self._known[path] = (data, stat)

    def _look_again(self, flags: dict[str, bool]) -> None:
        """Queue these looks again, each still reading if it had to (or if a change since asks)."""
        with self._pending_lock:
            for path, read in flags.items():
                queued = self._looks.get(path)
                self._looks[path] = read or bool(queued)
                if queued is None:
                    self._queue.put((_LOOK, path))

    def _refresh(self, path: str, read: str = _ALL, recursive: bool = False) -> None:
        """Read ``path`` (``read``: its data, its children, or both), set the watch(es) again, and
        record what differs from the last look. A node not seen before, or created again since
        (another czxid), is read whole: its other watch is not set yet. With a persistent watch
        only the resync comes here: it reads without setting any."""
        before = self._known.get(path)
        data = stat = children = None
        watch = None if self._persistent else self._watch
        try:
            if read == _CHILDREN:
                listed, stat = self._zk.get_children(path, watch=watch, include_data=True)
                children = set(listed)
            else:
                data, stat = self._zk.get(path, watch=watch)
            if before is None or before[1].czxid != stat.czxid:
                if children is None:
                    children = set(self._zk.get_children(path, watch=watch))
                else:
                    data, stat = self._zk.get(path, watch=watch)
            elif read == _ALL:
                children = set(self._zk.get_children(path, watch=watch))
        except NoNodeError:
            self._forget(path)
            self._unlist(path)
            return
        if before is not None and before[1].czxid != stat.czxid:
            self._forget(path)  # deleted and created again between two looks
            before = None
        # Children only: the data as last seen stays (its stat too: a data change it may show has
        # its own event, and is recorded when that event's read compares the versions).
        if data is not None:
            if path != "/":
                if before is None:
                    self._record(path, "created", data, stat)
                elif before[1].mzxid != stat.mzxid:
                    self._record(path, "changed", data, stat)
            self._known[path] = (data, stat)
        if children is None:  # data only: the children (and their watch) are as last seen
            return
        old_children = self._children.get(path, set())
        self._children[path] = children
        for gone in sorted(old_children - children):
            self._forget(_join(path, gone))
        for child in sorted(children if recursive else children - old_children):
            self._refresh(_join(path, child), _ALL, recursive)

    def _forget(self, path: str, below: bool = True) -> None:
        """``path`` is gone (and, ``below``, everything known under it): record the deletions."""
        if below:
            for child in sorted(self._children.pop(path, set())):
                self._forget(_join(path, child))
        before = self._known.pop(path, None)
        if before is not None and path != "/":
            self._record(path, "deleted", before[0], before[1])

    def _unlist(self, path: str) -> None:
        """A node a read found gone leaves its parent's list of children as well. The read that
        found it gone set no watch on it (ZooKeeper sets none on a missing node), so only the
        parent's next child read can tell that it was created again — and that read takes it for
        new only if the parent's list no longer holds its name. Kept there, a ``/controller``
        deleted with its session and made by the next controller between the two reads was
        never recorded, and the page showed no ``/controller`` at all."""
        if path != "/":
            parent, _, name = path.rpartition("/")
            self._children.get(parent or "/", set()).discard(name)

    def _record(self, path: str, to_state: str, data: bytes, stat) -> None:
        owner = stat.ephemeralOwner
        session = hex(owner) if owner else None
        broker = self._owner_of_session(session) if session else None
        note = f"{path} {to_state}"
        if session:
            who = f"broker {broker}'s" if broker is not None else "a"
            note += f" (ephemeral: it lives as long as {who} session {session})"
        self._made.append(Record(
            kind="zk", subject=znode_subject(path), to_state=to_state, zk_version=stat.version,
            zxid=stat.czxid if to_state == "created" else stat.mzxid, broker_id=broker, note=note + ".",
            detail={"path": path, "data": describe_data(data), "ephemeral_owner": session, "czxid": stat.czxid},
        ))


def _join(parent: str, child: str) -> str:
    return f"/{child}" if parent == "/" else f"{parent}/{child}"
