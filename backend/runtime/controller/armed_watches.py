"""The ZooKeeper watches an active controller holds, and what becomes of them (§4, §20).

Each watch only *puts* an event on the controller's queue (Kafka's ``ZNodeChangeHandler`` /
``ZNodeChildChangeHandler``): its handler, on the event thread, re-reads the znode — which
arms the watch again. Two things can happen to a watch besides firing:

* the controller resigns: watches armed while it was active must go quiet, so each carries the
  *generation* it was armed in, and :meth:`ArmedWatches.resign` moves to the next;
* the connection drops within the session: ZooKeeper's Java client restores watches by itself
  and reports what changed meanwhile; kazoo drops them. A dropped watch is remembered and, when
  the connection is back (:meth:`ArmedWatches.restore`), its event is put — its handler re-reads,
  re-arms, and picks up anything missed. A lost session drops them for good (:meth:`forget`).
"""

from __future__ import annotations

from typing import Callable

from backend.core.controller import events as ev
from backend.zk.watches import WatchEvent


class ArmedWatches:
    def __init__(self, put: Callable[[ev.ControllerEvent], object], is_active: Callable[[], bool]) -> None:
        self._put = put
        self._is_active = is_active
        self._generation = 0
        self._lost: dict = {}
        self._controller_watch_lost = False
        self._keyed_watches: tuple[int, dict] = (-1, {})
        self._reassign_isr_watched: tuple[int, frozenset] = (-1, frozenset())

    @property
    def generation(self) -> int:
        """Bumped on every resignation: what was armed before goes quiet."""
        return self._generation

    def resign(self) -> None:
        self._generation += 1

    def on_controller(self, event: WatchEvent) -> None:
        """The watch on ``/controller``, armed whether or not this broker is the controller."""
        if event.connection_lost:
            self._controller_watch_lost = True
        elif event.type == "deleted":
            self._put(ev.Reelect())
        else:
            self._put(ev.ControllerChange())

    def for_handlers(self) -> dict[str, Callable]:
        """One watch callback per Kafka handler, valid until this controller resigns. The
        per-broker and per-partition ones are the same callable for their znode within one
        generation, so arming one again (at every BrokerChange) leaves kazoo one watcher, not two."""
        generation = self._generation
        if self._keyed_watches[0] != generation:
            self._keyed_watches = (generation, {})
        keyed = self._keyed_watches[1]

        def put(key, event_factory, acts_on=None):
            def fire(watched: WatchEvent | None = None):
                if generation != self._generation or not self._is_active():
                    return
                if watched is not None and watched.connection_lost:
                    self._lost[key] = event_factory  # re-armed when the connection is back
                    return
                if acts_on is not None and watched is not None and watched.type != acts_on:
                    return  # Kafka's handler overrides only handleCreation (or handleDataChange)
                self._put(event_factory())
            return fire

        def changed(key, event_factory):
            if key not in keyed:
                keyed[key] = put(key, event_factory, acts_on="changed")
            return keyed[key]

        def broker(broker_id):
            return changed(("broker", broker_id), lambda: ev.BrokerModifications(broker_id))

        def reassign_isr(tp):
            """PartitionReassignmentIsrChangeHandler (inter.broker.protocol.version < 2.7 only)."""
            return changed(("reassign_isr", tp), lambda: ev.PartitionReassignmentIsrChange(tp))

        return {
            "brokers": put("brokers", ev.BrokerChange), "topics": put("topics", ev.TopicChange),
            "topic": lambda topic: put(("topic", topic), lambda: ev.PartitionModifications(topic)),
            "delete_topics": put("delete_topics", ev.TopicDeletion),
            "isr_change": put("isr_change", ev.IsrChangeNotification),
            # PartitionReassignmentHandler and PreferredReplicaElectionHandler act on creation only;
            # the controller puts their event itself after deleting the znode, to arm them again.
            "reassign": put("reassign", ev.ZkPartitionReassignment, acts_on="created"),
            "preferred": put("preferred", ev.ReplicaLeaderElection, acts_on="created"),
            "broker": broker, "reassign_isr": reassign_isr,
        }

    def not_yet_watched(self, partitions: frozenset) -> list:
        """Of these reassigning partitions, the ones whose state znode has no
        PartitionReassignmentIsrChange watch in this generation yet (they count as watched from now)."""
        generation, watched = self._reassign_isr_watched
        if generation != self._generation:
            watched = frozenset()
        self._reassign_isr_watched = (self._generation, frozenset(partitions))
        return sorted(partitions - watched)

    def restore(self) -> None:
        """The connection came back within the same session: put each lost watch's event."""
        lost, self._lost = self._lost, {}
        if self._controller_watch_lost:
            self._controller_watch_lost = False
            self._put(ev.ControllerChange())
        for event_factory in lost.values():
            self._put(event_factory())

    def forget(self) -> None:
        """The session itself is gone: a new session arms its own watches."""
        self._lost = {}
        self._controller_watch_lost = False

    def close(self) -> None:
        """The controller has shut down: every watch goes quiet, and none is kept. The per-znode
        callbacks close over this object, which holds them: kept, a shut-down controller's
        watches were a reference cycle for the cyclic collector (issue 14, thirty-seventh round)."""
        self.resign()
        self.forget()
        self._keyed_watches = (-1, {})
