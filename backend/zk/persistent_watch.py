"""One watch on a whole subtree that stays set: ZooKeeper 3.6's ``addWatch`` (opcode 106) in
``PERSISTENT_RECURSIVE`` mode, for the lab's observer (``observer.py``).

A classic watch fires once, for one znode's data or its list of children, and must be set again
by a read. The observer, which mirrors a sandbox's whole tree on the page, paid for that with
reads that only re-armed watches: a znode created cost a read of its parent's children, its data
and its own children (three requests), a deletion two. A persistent recursive watch on ``/``
tells every creation, deletion and data change below it, each as its own event with the
znode's path, in ZooKeeper's order, and is never used up — so a creation or a change costs the
one ``getData`` that fetches what to show, and a deletion nothing (issue 14,
docs/performance.md). No child event is sent in this mode: a creation *is* the news about the
parent's children.

It is the observer's instrument, not Kafka's: no broker or controller uses one, and it changes
nothing in the tree. ZooKeeper 3.5 and older do not have it (a server closes the connection on
an opcode it does not know), so the observer uses it only when the cluster found every server
of the ensemble to be 3.6 or later — the release that brought ``multiRead`` too, so the same
question answers both (``multi_read.ensemble_answers_multi_read``) — and classic watches otherwise.

kazoo 2.11 has no ``addWatch``: :class:`AddWatch` is a request in kazoo's protocol shape, like
``multi_read.MultiRead``, and the events are routed by wrapping the connection's
``_read_watch_event`` (the one place where kazoo reads an event, on its connection thread or on
the shared session loop): kazoo hands each event to the one-shot watchers it holds for that
path, and this hands it to the subtree's callback as well. The callback runs right there, so it
must not wait (the observer's only puts the path on its queue) — which also keeps the events
in ZooKeeper's order, which a deletion trusted without a read depends on. A persistent watch
does not survive a reconnection here (kazoo re-sends only classic watches), so whoever adds one
adds it again on each ``CONNECTED``; adding it twice is harmless.
"""

from __future__ import annotations

from typing import Callable, NamedTuple

from kazoo.client import KazooClient
from kazoo.protocol.connection import CHANGED_EVENT, CREATED_EVENT, DELETED_EVENT
from kazoo.protocol.serialization import Watch, int_struct, write_string

ADD_WATCH = 106            # ZooDefs.OpCode.addWatch
PERSISTENT_RECURSIVE = 1   # AddWatchMode.PERSISTENT_RECURSIVE (0 is PERSISTENT: one znode)
_KINDS = {CREATED_EVENT: "created", DELETED_EVENT: "deleted", CHANGED_EVENT: "changed"}

Change = Callable[[str, str], None]
"""``(kind, path)``: ``created``, ``deleted`` or ``changed``, and the znode's path without chroot."""


class AddWatch(NamedTuple):
    """``addWatch(path, mode)``; ``path`` includes the chroot. The answer has no body."""

    path: str
    mode: int
    type = ADD_WATCH

    def serialize(self) -> bytearray:
        return bytearray(write_string(self.path) + int_struct.pack(self.mode))

    @classmethod
    def deserialize(cls, buffer: bytes, offset: int) -> bool:
        return True


def watch_subtree(zk: KazooClient, path: str, on_change: Change, timeout_s: float) -> None:
    """Tell ``on_change`` of every creation, deletion and data change at or below ``path`` (in
    the client's chroot) from the moment this returns. Call it again after each reconnection
    (see the module's docstring). Raises what the request raises (connection loss, time-out)."""
    _subtree_callbacks(zk)[path] = on_change
    handle = zk.handler.async_result()
    zk._call(AddWatch((zk.chroot + path).rstrip("/") or "/", PERSISTENT_RECURSIVE), handle)
    handle.get(timeout=timeout_s)


def forget_subtree(zk: KazooClient, path: str) -> None:
    """Stop telling ``path``'s callback (the server's watch goes with the session)."""
    _subtree_callbacks(zk).pop(path, None)


def _subtree_callbacks(zk: KazooClient) -> dict[str, Change]:
    """The client's subtree callbacks by path, routing its connection's events to them (once)."""
    connection = zk._connection
    callbacks = getattr(connection, "kclab_subtree_callbacks", None)
    if callbacks is None:
        callbacks = connection.kclab_subtree_callbacks = {}
        read_one_shot = connection._read_watch_event

        def read_watch_event(buffer, offset) -> None:
            read_one_shot(buffer, offset)
            if not callbacks or zk._stopped.is_set():
                return
            event = Watch.deserialize(buffer, offset)[0]
            kind = _KINDS.get(event.type)
            if kind is None:
                return
            path = zk.unchroot(event.path)
            for root, on_change in list(callbacks.items()):
                if root == "/" or path == root or path.startswith(root + "/"):
                    on_change(kind, path)

        connection._read_watch_event = read_watch_event
    return callbacks
