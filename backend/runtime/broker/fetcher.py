"""A follower's side of replication: Kafka's ``ReplicaFetcherThread`` work for one broker.

For each partition this broker follows (and a fault has not stalled), the fetcher first
truncates where the leader says its last common leader epoch ended (KIP-101) — after a restart,
or when the partition got a new leader — and then fetches from its log end offset, carrying its
leader epoch, so a leader of another epoch refuses it (KIP-320). The leader is reached over
the lab's "network" (``backend.runtime.peers``): a paused or stopped leader answers nothing.
"""

from __future__ import annotations

from typing import Callable, Mapping

from backend.core.broker.log import Log, truncation_offset
from backend.core.broker.replica_manager import HostedPartition
from backend.core.model import TopicPartition
from backend.core.records import Record
from backend.core.subjects import replica_subject
from backend.runtime.peers import BrokerDirectory


class ReplicaFetcher:
    def __init__(self, broker_id: int, partitions: Callable[[], Mapping[TopicPartition, HostedPartition]],
                 log: Callable[[TopicPartition], Log], is_stalled: Callable[[TopicPartition], bool],
                 peers: BrokerDirectory, emit: Callable[[Record], None]) -> None:
        self.broker_id = broker_id
        self._partitions = partitions
        self._log = log
        self._is_stalled = is_stalled
        self._peers = peers
        self._emit = emit
        self.must_truncate: set[TopicPartition] = set()
        """Partitions whose log must be checked against the leader's before the next fetch."""

    def fetch(self, now: float) -> bool:
        """One fetch from each leader; True when an answer had data (the follower fetches again at
        once: its next fetch tells the leader how far it got, and there may be more)."""
        more = False
        for tp, partition in list(self._partitions().items()):
            if partition.leader in (self.broker_id, -1) or self._is_stalled(tp):
                continue
            leader = self._peers.fetch_endpoint(partition.leader)
            if leader is None:
                continue
            log = self._log(tp)
            if tp in self.must_truncate:
                answer = leader.offsets_for_leader_epoch(tp, log.latest_epoch, partition.leader_epoch)
                if answer is None:
                    continue
                self._truncate(tp, log, truncation_offset(log, *answer), partition.leader)
                self.must_truncate.discard(tp)
            fetched = leader.handle_fetch(tp, self.broker_id, log.log_end_offset, partition.leader_epoch, now)
            if fetched is None:
                continue
            entries, leader_hw = fetched
            if entries:
                log.append(entries)
                more = True
            hw_moved = log.update_high_watermark(min(leader_hw, log.log_end_offset))
            if entries or hw_moved:
                self._emit(Record(kind="log", subject=replica_subject(tp.topic, tp.partition, self.broker_id),
                                  to_state="fetched", op="fetch", broker_id=self.broker_id, topic=tp.topic,
                                  partition=tp.partition, offset=log.log_end_offset, count=len(entries),
                                  leader=partition.leader, leader_epoch=partition.leader_epoch,
                                  detail={"leo": log.log_end_offset, "hw": log.high_watermark}))
        return more

    def _truncate(self, tp: TopicPartition, log: Log, offset: int, leader: int) -> None:
        removed = log.truncate_to(offset)
        if removed:
            self._emit(Record(kind="log", subject=replica_subject(tp.topic, tp.partition, self.broker_id),
                              to_state="truncated", op="truncate", broker_id=self.broker_id, topic=tp.topic,
                              partition=tp.partition, offset=offset, count=len(removed), leader=leader,
                              note=f"Replica {self.broker_id} of {tp} truncated its log to offset {offset} (where leader "
                                   f"{leader}'s last common leader epoch ends, KIP-101), dropping {len(removed)} "
                                   f"message(s) the leader does not have.",
                              detail={"leo": log.log_end_offset, "hw": log.high_watermark,
                                      "removed": [e.payload for e in removed[:20]]}))
