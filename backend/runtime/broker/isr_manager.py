"""How a leader's ISR change reaches ZooKeeper and the controller: Kafka 2.8's ``ZkIsrManager``.

Before AlterIsr (KIP-497, ``inter.broker.protocol.version`` < 2.7) a partition leader writes
the new ISR into the partition's state znode itself — conditionally, at the version it knows,
without bumping the leader epoch — and records the partition; every
``kclab.isr.change.propagation.interval.ms`` it announces the recorded partitions under
``/isr_change_notification``, whose watch tells the controller. (Kafka 2.8's other path, its
``DefaultAlterIsrManager`` sending AlterIsr to the controller, would sit beside this one.)
"""

from __future__ import annotations

from typing import Callable

from backend.core.broker.replica_manager import HostedPartition
from backend.core.model import LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition
from backend.core.records import Record
from backend.core.subjects import partition_subject
from backend.zk.client import KafkaZkClient


class ZkIsrManager:
    def __init__(self, broker_id: int, zk: Callable[[], KafkaZkClient], emit: Callable[[Record], None]) -> None:
        """``zk()`` is the broker's ZooKeeper client now (a new one after each restart)."""
        self.broker_id = broker_id
        self._zk = zk
        self._emit = emit
        self._pending: set[TopicPartition] = set()
        self._last_propagation = 0.0

    def submit(self, tp: TopicPartition, partition: HostedPartition, isr: tuple[int, ...]) -> int | None:
        """Write ``isr`` as leader of ``partition``; returns the znode's new version, or ``None``
        (with a record) when the controller changed the znode first."""
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
        return version

    def record_change(self, tp: TopicPartition) -> None:
        self._pending.add(tp)

    def has_pending(self) -> bool:
        return bool(self._pending)

    def maybe_propagate(self, now: float, interval_ms: float) -> None:
        """Announce the recorded partitions once ``interval_ms`` passed since the last time."""
        if not self._pending or now - self._last_propagation < interval_ms:
            return
        partitions, self._pending = sorted(self._pending), set()
        self._last_propagation = now
        self._zk().create_isr_change_notification(partitions)
