"""One broker's replicas at work: logs, follower fetching, the high watermark, ISR changes made
by leaders, and produce requests waiting for the ISR (§16; Kafka's ``ReplicaManager``,
``ReplicaFetcherThread``, ``Partition``, ``DelayedProduce``).

Every ``replica.fetch.wait.max.ms`` the broker's replica thread

* as a follower: first truncates where the new leader says its last epoch ended (KIP-101),
  then fetches from its log end offset — carrying its leader epoch, so a leader of another
  epoch refuses it;
* as a leader: advances the high watermark to the smallest LEO in the ISR, answers produce
  requests waiting for it (acks=all), drops followers that have not caught up for
  ``replica.lag.time.max.ms`` and takes back those that reached the high watermark — writing the
  state znode itself, at the version it knows, without bumping the leader epoch — and then
  announces its ISR changes under ``/isr_change_notification``.

Logs live on the broker object, so they survive a crash and restart, as on disk.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable

from backend.core.log import Log, LogEntry, truncation_offset
from backend.core.model import LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition
from backend.core.partition import LeaderState
from backend.core.records import Record, partition_subject, replica_subject

if TYPE_CHECKING:
    from backend.runtime.broker import SimulatedBroker

MAX_FETCH = 500


@dataclass
class DelayedProduce:
    """An acks=all produce waiting until the high watermark passes its last message."""

    tp: TopicPartition
    leader_epoch: int
    required_offset: int
    deadline: float
    respond: Callable[[str, tuple[int, ...] | None], None]
    """Called with the error and, when it succeeded, the ISR the leader counted."""


class DataPlane:
    def __init__(self, broker: SimulatedBroker) -> None:
        self.broker = broker
        self.logs: dict[TopicPartition, Log] = {}
        self._leading: dict[TopicPartition, LeaderState] = {}
        self._must_truncate: set[TopicPartition] = set()
        self._delayed: list[DelayedProduce] = []
        self._pending_isr: set[TopicPartition] = set()
        self._last_propagation = 0.0
        self._lock = threading.RLock()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None
        self.stalled: set[tuple[str, int | None] | None] = set()
        """What ``stall_follower`` stopped: ``None`` = everything, ``(topic, None)`` = a topic,
        ``(topic, partition)`` = one partition."""

    # -- life --------------------------------------------------------------------------------------
    def start(self) -> None:
        with self._lock:
            self._leading.clear()
            self._must_truncate = set(self.logs)  # a restarted broker checks its logs against the leader
        self._stopped.clear()
        self._thread = threading.Thread(target=self._run, name=f"replica-{self.broker.id}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()
        with self._lock:
            delayed, self._delayed = self._delayed, []
        for produce in delayed:
            produce.respond("REQUEST_TIMED_OUT", None)

    def has_pending_changes(self) -> bool:
        return bool(self._pending_isr)

    def is_stalled(self, tp: TopicPartition) -> bool:
        return bool(self.stalled) and (None in self.stalled or (tp.topic, None) in self.stalled
                                       or (tp.topic, tp.partition) in self.stalled)

    def log(self, tp: TopicPartition) -> Log:
        with self._lock:
            return self.logs.setdefault(tp, Log())

    def _run(self) -> None:
        while not self._stopped.is_set():
            self._stopped.wait(max(0.02, self.broker.config["replica.fetch.wait.max.ms"] / 1000))
            self.broker.gate.wait()
            if self._stopped.is_set() or self.broker.status != "running":
                continue
            try:
                now = self.broker.cluster.clock.now_ms()
                self._fetch_as_follower(now)
                self._maintain_as_leader(now)
                self._propagate_isr_changes(now)
            except Exception as exc:  # noqa: BLE001 - a lost session must not kill the thread
                self._emit(Record(kind="broker", subject=f"broker:{self.broker.id}", broker_id=self.broker.id,
                                  outcome="error", note=f"Broker {self.broker.id}'s replica thread hit "
                                                        f"{type(exc).__name__}: {exc}"))

    # -- what the controller decided ----------------------------------------------------------------
    def on_partitions_changed(self, partitions, deleted: set[TopicPartition] = frozenset()) -> None:
        """After a LeaderAndIsr or StopReplica: start leading, start following, or stop."""
        now = self.broker.cluster.clock.now_ms()
        became_leader = []
        with self._lock:
            for tp in deleted:
                self.logs.pop(tp, None)
            for tp in list(self._leading):
                p = partitions.get(tp)
                if p is None or p.leader != self.broker.id:
                    del self._leading[tp]
                    self._fail_delayed(tp, "NOT_LEADER_OR_FOLLOWER")
            for tp, p in partitions.items():
                current = self._leading.get(tp)
                if p.leader == self.broker.id and (current is None or current.leader_epoch != p.leader_epoch):
                    self._leading[tp] = LeaderState.became_leader(self.broker.id, p.leader_epoch, p.isr, p.replicas, now)
                    self.log(tp).assign_epoch_start(p.leader_epoch)
                    became_leader.append(tp)
                elif p.leader != self.broker.id:
                    self._must_truncate.add(tp)
        ledger = self.broker.cluster.ledger
        for tp in became_leader:
            if ledger.ever_appended(tp):
                self._emit_leader_log(tp, partitions[tp].leader_epoch)
            ledger.check_leader(tp, self.broker.id, self.log(tp))

    def _emit_leader_log(self, tp: TopicPartition, leader_epoch: int) -> None:
        """The partition's log is now the new leader's: after an unclean election it may be
        shorter than the old leader's, and the page must show that (its LEO and HW)."""
        log = self.log(tp)
        self._emit(Record(kind="log", subject=partition_subject(tp.topic, tp.partition), to_state="leader_log",
                          op="become_leader", broker_id=self.broker.id, topic=tp.topic, partition=tp.partition,
                          offset=log.log_end_offset, leader=self.broker.id, leader_epoch=leader_epoch,
                          note=f"Broker {self.broker.id} leads {tp} from epoch {leader_epoch}: the partition's log "
                               f"is now its log, {log.log_end_offset} message(s), high watermark "
                               f"{log.high_watermark}.",
                          detail={"leo": log.log_end_offset, "hw": log.high_watermark}))

    # -- follower side ----------------------------------------------------------------------------
    def _fetch_as_follower(self, now: float) -> None:
        for tp, partition in list(self.broker.state.partitions.items()):
            if partition.leader in (self.broker.id, -1) or self.is_stalled(tp):
                continue
            leader = self.broker.cluster.brokers.get(partition.leader)
            if leader is None or leader.status != "running":
                continue
            log = self.log(tp)
            if tp in self._must_truncate:
                answer = leader.data.offsets_for_leader_epoch(tp, log.latest_epoch, partition.leader_epoch)
                if answer is None:
                    continue
                self._truncate(tp, log, truncation_offset(log, *answer), partition.leader)
                self._must_truncate.discard(tp)
            fetched = leader.data.handle_fetch(tp, self.broker.id, log.log_end_offset, partition.leader_epoch, now)
            if fetched is None:
                continue
            entries, leader_hw = fetched
            if entries:
                log.append(entries)
            hw_moved = log.update_high_watermark(min(leader_hw, log.log_end_offset))
            if entries or hw_moved:
                self._emit(Record(kind="log", subject=replica_subject(tp.topic, tp.partition, self.broker.id),
                                  to_state="fetched", op="fetch", broker_id=self.broker.id, topic=tp.topic,
                                  partition=tp.partition, offset=log.log_end_offset, count=len(entries),
                                  leader=partition.leader, leader_epoch=partition.leader_epoch,
                                  detail={"leo": log.log_end_offset, "hw": log.high_watermark}))

    def _truncate(self, tp: TopicPartition, log: Log, offset: int, leader: int) -> None:
        removed = log.truncate_to(offset)
        if removed:
            self._emit(Record(kind="log", subject=replica_subject(tp.topic, tp.partition, self.broker.id),
                              to_state="truncated", op="truncate", broker_id=self.broker.id, topic=tp.topic,
                              partition=tp.partition, offset=offset, count=len(removed), leader=leader,
                              note=f"Replica {self.broker.id} of {tp} truncated its log to offset {offset} (where leader "
                                   f"{leader}'s last common leader epoch ends, KIP-101), dropping {len(removed)} "
                                   f"message(s) the leader does not have.",
                              detail={"leo": log.log_end_offset, "hw": log.high_watermark,
                                      "removed": [e.payload for e in removed[:20]]}))

    # -- leader side (called by followers' threads) ---------------------------------------------------
    def _leader_state(self, tp: TopicPartition, leader_epoch: int) -> LeaderState | None:
        state = self._leading.get(tp)
        return state if state is not None and state.leader_epoch == leader_epoch else None

    def offsets_for_leader_epoch(self, tp: TopicPartition, requested_epoch: int, leader_epoch: int):
        with self._lock:
            if self._leader_state(tp, leader_epoch) is None:
                return None  # not the leader at that epoch: FENCED_LEADER_EPOCH / NOT_LEADER
            return self.log(tp).end_offset_for_epoch(requested_epoch)

    def handle_fetch(self, tp: TopicPartition, follower: int, fetch_offset: int, leader_epoch: int, now: float):
        """Returns (entries from ``fetch_offset``, the leader's HW), or ``None`` if this broker does
        not lead ``tp`` at ``leader_epoch`` (the follower's fetch is fenced, KIP-320)."""
        with self._lock:
            state = self._leader_state(tp, leader_epoch)
            if state is None:
                return None
            log = self.log(tp)
            state.on_fetch(follower, fetch_offset, log.log_end_offset, now)
            self._advance_high_watermark(tp, state, log)
            return log.read(fetch_offset, fetch_offset + MAX_FETCH), log.high_watermark

    def _advance_high_watermark(self, tp: TopicPartition, state: LeaderState, log: Log) -> None:
        if log.update_high_watermark(state.high_watermark(log.log_end_offset)):
            self._emit(Record(kind="log", subject=partition_subject(tp.topic, tp.partition), to_state="hw",
                              op="high_watermark", broker_id=self.broker.id, topic=tp.topic, partition=tp.partition,
                              offset=log.high_watermark, leader=self.broker.id, leader_epoch=state.leader_epoch,
                              isr=state.isr, detail={"leo": log.log_end_offset, "hw": log.high_watermark}))
            self._complete_delayed(self.broker.cluster.clock.now_ms())

    def _maintain_as_leader(self, now: float) -> None:
        lag_max = self.broker.config["replica.lag.time.max.ms"]
        for tp, partition in list(self.broker.state.partitions.items()):
            with self._lock:
                state = self._leader_state(tp, partition.leader_epoch)
                if state is None:
                    continue
                state.isr = partition.isr  # the controller may have changed it (LeaderAndIsr)
                log = self.log(tp)
                self._advance_high_watermark(tp, state, log)
                laggards = state.out_of_sync(now, lag_max)
                joiners = state.ready_to_join(log.high_watermark, log.epoch_start_offset(state.leader_epoch))
            if joiners:
                self._change_isr(tp, partition, (*partition.isr, *joiners), "expanded", (
                    f"Leader {self.broker.id} added {joiners} to the ISR of {tp}: caught up to the high watermark "
                    f"{log.high_watermark}."))
            elif laggards:
                self._change_isr(tp, partition, tuple(r for r in partition.isr if r not in laggards), "shrunk", (
                    f"Leader {self.broker.id} removed {laggards} from the ISR of {tp}: not caught up for "
                    f"{lag_max} ms (replica.lag.time.max.ms)."))
        self._complete_delayed(now)

    def _change_isr(self, tp, partition, new_isr, how, note) -> None:
        """Write the new ISR as a pre-AlterIsr leader does: conditionally, same leader epoch."""
        state = LeaderIsrAndControllerEpoch(
            LeaderAndIsr(partition.leader, partition.leader_epoch, tuple(new_isr), partition.zk_version),
            partition.controller_epoch)
        version = self.broker.kafka_zk.update_partition_state_as_leader(tp, state)
        common = dict(subject=partition_subject(tp.topic, tp.partition), broker_id=self.broker.id, topic=tp.topic,
                      partition=tp.partition, leader=partition.leader, leader_epoch=partition.leader_epoch)
        if version is None:
            self._emit(Record(kind="isr", outcome="bad_version", isr=partition.isr, **common,
                              note=f"Leader {self.broker.id} could not change the ISR of {tp}: the state znode is not at "
                                   f"version {partition.zk_version} any more (the controller changed it), so it waits "
                                   f"for a LeaderAndIsr."))
            return
        with self.broker.lock:
            partitions = dict(self.broker.state.partitions)
            current = partitions.get(tp)
            if current is None or current.leader_epoch != partition.leader_epoch:
                return
            partitions[tp] = replace(current, isr=tuple(new_isr), zk_version=version)
            self.broker.state = replace(self.broker.state, partitions=partitions)
        with self._lock:
            if tp in self._leading:
                self._leading[tp].isr = tuple(new_isr)
        self._pending_isr.add(tp)
        self._emit(Record(kind="isr", to_state=how, controller_epoch=partition.controller_epoch, isr=tuple(new_isr),
                          zk_version=version, outcome="ok", note=note + " The leader epoch does not change.",
                          detail={"previous_isr": list(partition.isr), "written_by": "leader"}, **common))

    def _propagate_isr_changes(self, now: float) -> None:
        interval = self.broker.config["kclab.isr.change.propagation.interval.ms"]
        if not self._pending_isr or now - self._last_propagation < interval:
            return
        partitions, self._pending_isr = sorted(self._pending_isr), set()
        self._last_propagation = now
        self.broker.kafka_zk.create_isr_change_notification(partitions)

    # -- produce (the request handler's thread) --------------------------------------------------------
    def handle_produce(self, tp: TopicPartition, payloads: list[str], acks: str, respond) -> None:
        """Append on the leader; answer at once (acks 0/1) or when the ISR has it (acks=all)."""
        partition = self.broker.state.partitions.get(tp)
        with self._lock:
            state = self._leader_state(tp, partition.leader_epoch) if partition else None
            if state is None:
                respond("NOT_LEADER_OR_FOLLOWER", None)
                return
            min_isr = self.broker.cluster.topic_setting(tp.topic, "min.insync.replicas")
            if acks == "all" and len(state.isr) < min_isr:
                respond("NOT_ENOUGH_REPLICAS", None)
                return
            log = self.log(tp)
            first, last = log.append_as_leader(payloads, state.leader_epoch, acks)
            self.broker.cluster.ledger.appended(tp)
            self._advance_high_watermark(tp, state, log)
            if acks != "all":
                respond("NONE", (first, last, state.leader_epoch))
                return
            timeout = self.broker.config["request.timeout.ms"]
            produce = DelayedProduce(
                tp, state.leader_epoch, last + 1, self.broker.cluster.clock.now_ms() + timeout,
                lambda error, isr: respond(error, (first, last, state.leader_epoch), (isr, min_isr)))
            self._delayed.append(produce)
            # Only the new request can have become complete: a moved high watermark already
            # checked the others (Kafka's purgatory, too, checks only what a change concerns).
            self._complete_delayed(self.broker.cluster.clock.now_ms(), [produce])

    def _complete_delayed(self, now: float, candidates=None) -> None:
        """Answer the waiting acks=all produces (``candidates``, default all) that are done."""
        done = []
        with self._lock:
            for produce in self._delayed if candidates is None else candidates:
                state = self._leader_state(produce.tp, produce.leader_epoch)
                if state is None:
                    done.append((produce, "NOT_LEADER_OR_FOLLOWER"))
                elif self.log(produce.tp).high_watermark >= produce.required_offset:
                    min_isr = self.broker.cluster.topic_setting(produce.tp.topic, "min.insync.replicas")
                    done.append((produce, "NONE" if len(state.isr) >= min_isr else "NOT_ENOUGH_REPLICAS_AFTER_APPEND",
                                 tuple(state.isr)))
                elif now > produce.deadline:
                    done.append((produce, "REQUEST_TIMED_OUT", None))
            if done:
                finished = {id(p) for p, _, _ in done}
                self._delayed = [p for p in self._delayed if id(p) not in finished]
        for produce, error, isr in done:
            produce.respond(error, isr)

    def _fail_delayed(self, tp: TopicPartition, error: str) -> None:
        failed = [p for p in self._delayed if p.tp == tp]
        self._delayed = [p for p in self._delayed if p.tp != tp]
        for produce in failed:
            produce.respond(error, None)

    def read_committed(self, tp: TopicPartition) -> list[LogEntry] | None:
        """What a consumer may read from this leader: everything below the high watermark."""
        with self._lock:
            partition = self.broker.state.partitions.get(tp)
            if partition is None or self._leader_state(tp, partition.leader_epoch) is None:
                return None
            log = self.log(tp)
            return log.read(0, log.high_watermark)

    def _emit(self, record: Record) -> None:
        self.broker.cluster.emit([record])
