"""What ZooKeeper itself holds, as records: the browser's ZooKeeper view is drawn from these.

A separate session (not any broker's) keeps a cache of the cluster's whole subtree and turns
every change into a ``zk`` record — including the ones no controller made: an ephemeral znode
vanishing with its session, or an operator's ``zkCli.sh`` edit. A write the controller
*attempted* and ZooKeeper refused is recorded by the writer instead (``backend.zk.client``).
"""

from __future__ import annotations

import json
from typing import Callable

from kazoo.client import KazooClient
from kazoo.recipe.cache import TreeCache, TreeEvent

from backend.core.records import Record, znode_subject

_KIND = {TreeEvent.NODE_ADDED: "created", TreeEvent.NODE_UPDATED: "changed", TreeEvent.NODE_REMOVED: "deleted"}


def describe_data(data: bytes | None):
    """Znode bytes as the browser shows them: parsed JSON, else text, else None."""
    if not data:
        return None
    text = data.decode("utf-8", errors="replace")
    try:
        return json.loads(text)
    except ValueError:
        return text


class ZkObserver:
    def __init__(self, client: KazooClient, emit: Callable[[list[Record]], object],
                 owner_of_session: Callable[[str], int | None]) -> None:
        self._emit = emit
        self._owner_of_session = owner_of_session
        self._cache = TreeCache(client, "/")
        self._cache.listen(self._on_event)

    def start(self) -> None:
        self._cache.start()

    def close(self) -> None:
        self._cache.close()

    def _on_event(self, event) -> None:
        to_state = _KIND.get(event.event_type)
        if to_state is None or event.event_data is None:
            return
        path, data, stat = event.event_data.path, event.event_data.data, event.event_data.stat
        if path == "/":
            return
        owner = stat.ephemeralOwner if stat is not None else 0
        session = hex(owner) if owner else None
        broker = self._owner_of_session(session) if session else None
        note = f"{path} {to_state}"
        if session:
            note += f" (ephemeral, owned by {'broker ' + str(broker) if broker is not None else 'session'} " \
                    f"session {session})"
        self._emit([Record(
            kind="zk", subject=znode_subject(path), to_state=to_state,
            zk_version=stat.version if stat is not None else None,
            zxid=(stat.czxid if to_state == "created" else stat.mzxid) if stat is not None else None,
            broker_id=broker, note=note + ".",
            detail={"path": path, "data": describe_data(data), "ephemeral_owner": session,
                    "czxid": stat.czxid if stat is not None else None},
        )])
