"""ZooKeeper's notifications as our own types: what the rest of the lab receives, never kazoo's.

Two kinds of notification reach code outside ``backend.zk``:

* a **watch** fires once for the znode (or its children) it was set on: :class:`WatchEvent`,
  whose ``type`` is ``created``, ``deleted``, ``changed``, ``child`` — or ``connection_lost``,
  kazoo's way of saying the connection dropped and the watch with it (ZooKeeper's Java client
  would restore it; kazoo does not, so the controller re-arms it itself);
* a **session** changes state: :class:`SessionState` ``CONNECTED``, ``SUSPENDED`` (the
  connection dropped; the session lives on until its timeout) or ``LOST`` (expired).

:func:`watch` wraps a callback for kazoo. Two wrappers of equal callbacks are equal, because
kazoo keeps a znode's watchers in a set: the controller arming its ``/controller`` watch on
every read must still be told once, as before (a fresh wrapper per call would be told twice).
"""

from __future__ import annotations

from enum import Enum
from typing import Callable, NamedTuple

from kazoo.protocol.states import EventType, KazooState

_TYPES = {EventType.CREATED: "created", EventType.DELETED: "deleted", EventType.CHANGED: "changed",
          EventType.CHILD: "child", EventType.NONE: "connection_lost"}


class WatchEvent(NamedTuple):
    """A watch fired: on ``path``, for a ``type`` of change (see the module's doc)."""

    type: str
    path: str | None = None

    @property
    def connection_lost(self) -> bool:
        """The watch is gone because the connection dropped, not because anything changed."""
        return self.type == "connection_lost"


class SessionState(Enum):
    CONNECTED = "connected"
    SUSPENDED = "suspended"
    LOST = "lost"


_STATES = {KazooState.CONNECTED: SessionState.CONNECTED, KazooState.SUSPENDED: SessionState.SUSPENDED,
           KazooState.LOST: SessionState.LOST}

Watch = Callable[[WatchEvent], None]


class _Watch:
    """A callback as kazoo calls it, comparing equal to any other wrapper of the same callback."""

    __slots__ = ("callback",)

    def __init__(self, callback: Watch) -> None:
        self.callback = callback

    def __call__(self, event) -> None:
        self.callback(WatchEvent(_TYPES.get(event.type, "connection_lost"), event.path))

    def __eq__(self, other) -> bool:
        return isinstance(other, _Watch) and self.callback == other.callback

    def __hash__(self) -> int:
        return hash(self.callback)


def watch(callback: Watch | None):
    """``callback`` as a kazoo watch (``None`` stays ``None``: no watch)."""
    return None if callback is None else _Watch(callback)


def session_state(kazoo_state) -> SessionState:
    return _STATES[kazoo_state]
