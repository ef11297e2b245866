"""Followers fetching from leaders, and the ISR changes leaders make (§16).

Each broker's replica thread does three things every ``replica.fetch.wait.max.ms``:

* as a *follower*, fetch from each partition's leader (carrying its leader epoch, so a leader
  of another epoch refuses it);
* as a *leader*, expand the ISR with followers that have caught up, and shrink it of followers
  that have not for ``replica.lag.time.max.ms`` — writing the state znode itself, conditionally
  at the version it knows, without bumping the leader epoch;
* announce those changes under ``/isr_change_notification`` so the controller re-reads them.

Until logs exist, a follower has "caught up" once it has been fetching at the current leader
epoch for ``kclab.replica.catchup.ms``.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from backend.core.model import LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition
from backend.core.records import Record, partition_subject

if TYPE_CHECKING:
    from backend.runtime.broker import SimulatedBroker


@dataclass
class FollowerState:
    first_fetch_ms: float
    last_fetch_ms: float
    last_caught_up_ms: float


class Replication:
    def __init__(self, broker: SimulatedBroker) -> None:
        self.broker = broker
        self._lock = threading.Lock()
        self._followers: dict[TopicPartition, dict[int, FollowerState]] = {}
        self._leader_since: dict[TopicPartition, float] = {}
        self._leader_epoch: dict[TopicPartition, int] = {}
        self._pending: set[TopicPartition] = set()
        self._last_propagation = 0.0
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self.stalled: set[tuple[str, int | None] | None] = set()
        """What a ``stall_follower`` fault stopped: ``None`` = everything, ``(topic, None)`` = a
        whole topic, ``(topic, partition)`` = one partition."""

    def has_pending_changes(self) -> bool:
        """ISR changes written but not yet announced under /isr_change_notification."""
        return bool(self._pending)

    def start(self) -> None:
        self._stopped.clear()
        self._thread = threading.Thread(target=self._run, name=f"replica-{self.broker.id}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()

    def _run(self) -> None:
        while not self._stopped.is_set():
            interval = max(0.05, self.broker.config["replica.fetch.wait.max.ms"] / 1000)
            self._stopped.wait(interval)
            self.broker.gate.wait()
            if self._stopped.is_set() or self.broker.status != "running":
                continue
            try:
                now = time.monotonic() * 1000
                self._fetch_as_follower(now)
                self._maintain_isr_as_leader(now)
                self._propagate_isr_changes(now)
            except Exception as exc:  # noqa: BLE001 - a lost session must not kill the thread
                self._record_failure(exc)

    def is_stalled(self, tp: TopicPartition) -> bool:
        return bool(self.stalled) and (None in self.stalled or (tp.topic, None) in self.stalled
                                       or (tp.topic, tp.partition) in self.stalled)

    # -- follower side ------------------------------------------------------------------------
    def _fetch_as_follower(self, now: float) -> None:
        for tp, partition in list(self.broker.state.partitions.items()):
            if partition.leader in (self.broker.id, -1) or self.is_stalled(tp):
                continue
            leader = self.broker.cluster.brokers.get(partition.leader)
            if leader is not None and leader.status == "running":
                leader.replication.handle_fetch(tp, self.broker.id, partition.leader_epoch, now)

    # -- leader side ----------------------------------------------------------------------------
    def handle_fetch(self, tp: TopicPartition, follower: int, leader_epoch: int, now: float) -> bool:
        """A follower's fetch; refused when this broker does not lead ``tp`` at that epoch."""
        partition = self.broker.state.partitions.get(tp)
        if partition is None or partition.leader != self.broker.id or partition.leader_epoch != leader_epoch:
            return False
        with self._lock:
            states = self._followers.setdefault(tp, {})
            fs = states.get(follower) or FollowerState(now, now, self._leader_since.get(tp, now))
            fs.last_fetch_ms = now
            if now - fs.first_fetch_ms >= self.broker.config["kclab.replica.catchup.ms"]:
                fs.last_caught_up_ms = now
            states[follower] = fs
        return True

    def on_partitions_changed(self, partitions) -> None:
        """After a LeaderAndIsr or StopReplica: a new leader epoch starts follower tracking over
        (every follower gets ``replica.lag.time.max.ms`` of grace from that moment)."""
        now = time.monotonic() * 1000
        with self._lock:
            for tp in list(self._leader_epoch):
                p = partitions.get(tp)
                if p is None or p.leader != self.broker.id:
                    for table in (self._followers, self._leader_since, self._leader_epoch):
                        table.pop(tp, None)
            for tp, p in partitions.items():
                if p.leader == self.broker.id and self._leader_epoch.get(tp) != p.leader_epoch:
                    self._leader_epoch[tp] = p.leader_epoch
                    self._leader_since[tp] = now
                    self._followers[tp] = {}

    def _maintain_isr_as_leader(self, now: float) -> None:
        lag_max = self.broker.config["replica.lag.time.max.ms"]
        for tp, partition in list(self.broker.state.partitions.items()):
            if partition.leader != self.broker.id:
                continue
            with self._lock:
                states = dict(self._followers.get(tp, {}))
                since = self._leader_since.get(tp, now)
            caught_up = [r for r, fs in states.items() if fs.last_caught_up_ms >= now - lag_max
                         and fs.last_caught_up_ms > fs.first_fetch_ms]
            joiners = [r for r in caught_up if r not in partition.isr and r in partition.replicas]
            laggards = [r for r in partition.isr if r != self.broker.id
                        and (states[r].last_caught_up_ms if r in states else since) < now - lag_max]
            if joiners:
                self._change_isr(tp, partition, (*partition.isr, *joiners), "expanded", (
                    f"Leader {self.broker.id} added {joiners} to the ISR of {tp}: caught up with the leader."))
            elif laggards:
                self._change_isr(tp, partition, tuple(r for r in partition.isr if r not in laggards), "shrunk", (
                    f"Leader {self.broker.id} removed {laggards} from the ISR of {tp}: not caught up for "
                    f"{lag_max} ms (replica.lag.time.max.ms)."))

    def _change_isr(self, tp, partition, new_isr, how, note) -> None:
        """Write the new ISR as the leader does (pre-AlterIsr): conditionally, same leader epoch."""
        state = LeaderIsrAndControllerEpoch(
            LeaderAndIsr(partition.leader, partition.leader_epoch, tuple(new_isr), partition.zk_version),
            partition.controller_epoch)
        version = self.broker.kafka_zk.update_partition_state_as_leader(tp, state)
        if version is None:
            self.broker.cluster.emit([Record(
                kind="isr", subject=partition_subject(tp.topic, tp.partition), broker_id=self.broker.id,
                topic=tp.topic, partition=tp.partition, outcome="bad_version", leader=partition.leader,
                isr=partition.isr, leader_epoch=partition.leader_epoch,
                note=f"Leader {self.broker.id} could not change the ISR of {tp}: the state znode is not at version "
                     f"{partition.zk_version} any more (the controller changed it), so it waits for a LeaderAndIsr.")])
            return
        with self.broker.lock:
            partitions = dict(self.broker.state.partitions)
            current = partitions.get(tp)
            if current is None or current.leader_epoch != partition.leader_epoch:
                return
            partitions[tp] = replace(current, isr=tuple(new_isr), zk_version=version)
            self.broker.state = replace(self.broker.state, partitions=partitions)
        self._pending.add(tp)
        self.broker.cluster.emit([Record(
            kind="isr", subject=partition_subject(tp.topic, tp.partition), to_state=how, broker_id=self.broker.id,
            controller_epoch=partition.controller_epoch, topic=tp.topic, partition=tp.partition,
            leader=partition.leader, isr=tuple(new_isr), leader_epoch=partition.leader_epoch, zk_version=version,
            outcome="ok", note=note + " The leader epoch does not change.",
            detail={"previous_isr": list(partition.isr), "written_by": "leader"})])

    def _propagate_isr_changes(self, now: float) -> None:
        interval = self.broker.config["kclab.isr.change.propagation.interval.ms"]
        if not self._pending or now - self._last_propagation < interval:
            return
        partitions, self._pending = sorted(self._pending), set()
        self._last_propagation = now
        self.broker.kafka_zk.create_isr_change_notification(partitions)

    def _record_failure(self, exc: Exception) -> None:
        if self.broker.status == "running":
            self.broker.cluster.emit([Record(
                kind="broker", subject=f"broker:{self.broker.id}", broker_id=self.broker.id, outcome="error",
                note=f"Broker {self.broker.id}'s replica thread hit {type(exc).__name__}: {exc}")])
