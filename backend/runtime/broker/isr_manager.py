"""How a leader's ISR change reaches the controller below inter.broker.protocol.version 2.7:
Kafka 2.8's ``ZkIsrManager`` (2.7 and newer: ``alter_isr_manager.py``).

A partition leader writes the new ISR into the partition's state znode itself — conditionally,
at the version it knows, without bumping the leader epoch — and records the partition; every
``kclab.isr.change.propagation.interval.ms`` it announces the recorded partitions under
``/isr_change_notification``, whose watch tells the controller.
"""

from __future__ import annotations

from typing import Callable, Protocol

from backend.core.broker.replica_manager import HostedPartition
from backend.core.model import LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition
from backend.core.records import Record
from backend.core.subjects import partition_subject
from backend.zk.client import KafkaZkClient


class IsrHolder(Protocol):
    """What an ISR manager may change of its data plane (the leader's own view of the ISR)."""

    def commit_isr(self, tp: TopicPartition, leader_epoch: int, isr: tuple[int, ...], zk_version: int) -> bool:
        """The change is in ZooKeeper: the leader believes it (False: a LeaderAndIsr came first)."""

    def pending_isr(self, tp: TopicPartition, leader_epoch: int) -> tuple[int, ...] | None: ...

    def set_pending_isr(self, tp: TopicPartition, leader_epoch: int, isr: tuple[int, ...] | None) -> None: ...


class ZkIsrManager:
    def __init__(self, broker_id: int, zk: Callable[[], KafkaZkClient], emit: Callable[[Record], None],
                 holder: IsrHolder) -> None:
        """``zk()`` is the broker's ZooKeeper client now (a new one after each restart)."""
        self.broker_id = broker_id
        self._zk = zk
        self._emit = emit
        self._holder = holder
        self._pending: set[TopicPartition] = set()
        self._last_propagation = 0.0

    def change(self, tp: TopicPartition, partition: HostedPartition, isr: tuple[int, ...], how: str, note: str) -> None:
        """Write ``isr`` as leader of ``partition``, then believe it and announce it later."""
        state = LeaderIsrAndControllerEpoch(
            LeaderAndIsr(partition.leader, partition.leader_epoch, isr, partition.zk_version),
            partition.controller_epoch)
        version = self._zk().update_partition_state_as_leader(tp, state)
        if version is None:
            self._emit(Record(kind="isr", subject=partition_subject(tp.topic, tp.partition), outcome="bad_version",
                              broker_id=self.broker_id, topic=tp.topic, partition=tp.partition,
                              leader=partition.leader, leader_epoch=partition.leader_epoch, isr=partition.isr,
                              note=f"Leader {self.broker_id} could not change the ISR of {tp}: the state znode is not "
                                   f"at version {partition.zk_version} any more (the controller changed it), so it "
                                   f"waits for a LeaderAndIsr."))
            return
        if not self._holder.commit_isr(tp, partition.leader_epoch, isr, version):
            return
        self._pending.add(tp)
        self._emit(Record(kind="isr", subject=partition_subject(tp.topic, tp.partition), to_state=how,
                          controller_epoch=partition.controller_epoch, broker_id=self.broker_id, topic=tp.topic,
                          partition=tp.partition, leader=partition.leader, isr=isr,
                          leader_epoch=partition.leader_epoch, zk_version=version, outcome="ok",
                          note=note + " The leader wrote the state znode itself (inter.broker.protocol.version "
                                      "below 2.7); the leader epoch does not change.",
                          detail={"previous_isr": list(partition.isr), "written_by": "leader"}))

    def clear_pending(self, tp: TopicPartition) -> None:
        """Nothing to forget: a written change is announced even if leadership moved since."""

    def has_pending(self) -> bool:
        return bool(self._pending)

    def next_due(self, config) -> float:
        """When (lab ms) :meth:`tick` must run again (``inf``: nothing to announce)."""
        if not self._pending:
            return float("inf")
        return self._last_propagation + config["kclab.isr.change.propagation.interval.ms"]

    def tick(self, now: float, config) -> None:
        """Announce the recorded partitions once the propagation interval passed since the last time."""
        if now < self.next_due(config):
            return
        partitions, self._pending = sorted(self._pending), set()
        self._last_propagation = now
        self._zk().create_isr_change_notification(partitions)
