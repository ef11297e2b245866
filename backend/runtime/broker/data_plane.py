"""One broker's replicas at work: logs, follower fetching, the high watermark, ISR changes made
by leaders, and produce requests waiting for the ISR (§16; Kafka's ``ReplicaManager``,
``ReplicaFetcherThread``, ``Partition``, ``DelayedProduce``).

The broker's replica thread (``replica_thread.py``: when it runs)

* as a follower: truncates, then fetches from each leader (``fetcher.py``) — every
  ``replica.fetch.wait.max.ms``, at once when a leader it follows appended, and again at once
  after an answer with data;
* as a leader: advances the high watermark to the smallest LEO in the ISR, answers produce
  requests waiting for it (acks=all, ``purgatory.py``), drops followers that have not caught up
  for ``replica.lag.time.max.ms`` and takes back those that reached the high watermark — asking
  the controller with AlterIsr (``alter_isr_manager.py``, inter.broker.protocol.version ≥ 2.7) or,
  below 2.7, writing the state znode itself and announcing the change (``isr_manager.py``).

Logs live on the broker object, so they survive a crash and restart, as on disk.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping, Protocol

from backend.core import ibp
from backend.core.broker.log import Log, LogEntry
from backend.core.broker.partition import LeaderState
from backend.core.broker.replica_manager import BrokerState, HostedPartition
from backend.core.config import KafkaConfig
from backend.core.model import TopicPartition
from backend.core.records import Record
from backend.core.subjects import partition_subject
from backend.runtime.broker.alter_isr_manager import AlterIsrManager
from backend.runtime.broker.fetcher import ReplicaFetcher
from backend.runtime.broker.isr_manager import ZkIsrManager
from backend.runtime.broker.purgatory import DelayedProduce, ProducePurgatory
from backend.runtime.broker.replica_thread import ReplicaThread
from backend.runtime.lab_clock import LabClock
from backend.runtime.peers import BrokerDirectory, Emit
from backend.zk.client import KafkaZkClient

if TYPE_CHECKING:
    from backend.runtime.producer import AckLedger

MAX_FETCH = 500


class ReplicaHost(Protocol):
    """What the data plane may use of the broker it runs in."""

    config: KafkaConfig
    gate: threading.Event
    state: BrokerState
    inter_broker_protocol_version: str
    """Read when the broker starts: how its leaders change ISRs."""
    kafka_zk: KafkaZkClient | None
    """The broker's ZooKeeper client (a new one each start): leaders write ISR changes with it."""

    def is_running(self) -> bool: ...

    def partitions(self) -> Mapping[TopicPartition, HostedPartition]:
        """What the controller's LeaderAndIsr requests told the broker, per partition."""

    def update_isr(self, tp: TopicPartition, leader_epoch: int, isr: tuple[int, ...], zk_version: int) -> bool: ...


class DataPlane:
    def __init__(self, broker_id: int, host: ReplicaHost, *, clock: LabClock, emit: Emit, ledger: AckLedger,
                 topic_setting: Callable[[str, str], Any], peers: BrokerDirectory, correlation_ids: Iterator[int]) -> None:
        """``peers`` reaches the leaders this broker follows, and the controller (AlterIsr, whose
        requests take ``correlation_ids``); ``ledger`` is told what leaders append and checks
        each new leader's log for acknowledged messages it lacks."""
        self.broker_id = broker_id
        self._host = host
        self._clock = clock
        self._cluster_emit = emit
        self._ledger = ledger
        self._topic_setting = topic_setting
        self._peers = peers
        self.logs: dict[TopicPartition, Log] = {}
        self._leading: dict[TopicPartition, LeaderState] = {}
        self._correlation_ids = correlation_ids
        self._isr: ZkIsrManager | AlterIsrManager = self._isr_manager()
        self._fetcher = ReplicaFetcher(broker_id, host.partitions, self.log, self.is_stalled, peers, self._emit)
        self._lock = threading.RLock()
        self._purgatory = ProducePurgatory(self._lock, self._produce_outcome)
        self._thread = ReplicaThread(
            f"replica-{broker_id}", clock, fetch=self._fetcher.fetch, lead=self._lead, lead_overdue=self._lag_check_due,
            wait_max_ms=lambda: host.config["replica.fetch.wait.max.ms"], may_run=host.is_running, gate=host.gate,
            on_error=lambda exc: self._emit(Record(
                kind="broker", subject=f"broker:{broker_id}", broker_id=broker_id, outcome="error",
                note=f"Broker {broker_id}'s replica thread hit {type(exc).__name__}: {exc}")))
        self._lag_check_at = 0.0
        """When (lab ms) a follower this broker leads may first fall out of sync (its last catch-up
        plus ``replica.lag.time.max.ms``), as the leader side last saw them: a round after it runs
        the leader side (``ReplicaThread``'s ``lead_overdue``)."""
        self.stalled: set[tuple[str, int | None] | None] = set()
        """What ``stall_follower`` stopped: ``None`` = everything, ``(topic, None)`` = a topic,
        ``(topic, partition)`` = one partition."""

    # -- life --------------------------------------------------------------------------------------
    def _isr_manager(self) -> ZkIsrManager | AlterIsrManager:
        if ibp.is_alter_isr_supported(self._host.inter_broker_protocol_version):
            return AlterIsrManager(self.broker_id, lambda: self._host.state, self._emit, self, self._peers,
                                   self._correlation_ids, self.wake)
        return ZkIsrManager(self.broker_id, lambda: self._host.kafka_zk, self._emit, self)

    def start(self) -> None:
        self._isr = self._isr_manager()  # the protocol version is read when the broker starts
        with self._lock:
            self._leading.clear()
            self._fetcher.must_truncate = set(self.logs)  # a restarted broker checks its logs against the leader
            self._lag_check_at = 0.0
        self._thread.start()

    def stop(self) -> None:
        self._thread.stop()
        self._purgatory.drain("REQUEST_TIMED_OUT")

    def wake(self, fetch: bool = False) -> None:
        """Run the replica thread's leader side now; with ``fetch``, a leader this broker follows
        appended (Kafka: the parked fetch completes), so it fetches too."""
        self._thread.wake(fetch)

    @property
    def fetch_rounds(self) -> int:
        """How many times this broker has fetched from its leaders since it was created."""
        return self._thread.fetch_rounds

    def has_pending_changes(self) -> bool:
        return self._isr.has_pending()

    def is_stalled(self, tp: TopicPartition) -> bool:
        return bool(self.stalled) and (None in self.stalled or (tp.topic, None) in self.stalled
                                       or (tp.topic, tp.partition) in self.stalled)

    def log(self, tp: TopicPartition) -> Log:
        log = self.logs.get(tp)  # every fetch asks, twice a second per partition: no lock, no new Log
        if log is not None:
            return log
        with self._lock:
            return self.logs.setdefault(tp, Log())

    def _lag_check_due(self, now: float) -> bool:
        """May a follower have fallen out of sync since the leader side last ran? Then it runs on
        this round (a fetch's), not only at its ``replica.lag.time.max.ms / 2`` deadline."""
        return now > self._lag_check_at

    def _lead(self, now: float) -> float:
        """The leader side's round; returns when (lab ms) it must run again at the latest: Kafka
        checks for followers to drop every ``replica.lag.time.max.ms / 2``, and a waiting produce
        or an ISR change has its own deadline."""
        self._maintain_as_leader(now)
        self._isr.tick(now, self._host.config)
        return min(now + self._host.config["replica.lag.time.max.ms"] / 2, self._purgatory.next_deadline(),
                   self._isr.next_due(self._host.config))

    # -- what the controller decided ----------------------------------------------------------------
    def on_partitions_changed(self, partitions, deleted: set[TopicPartition] = frozenset()) -> None:
        """After a LeaderAndIsr or StopReplica: start leading, start following, or stop."""
        now = self._clock.now_ms()
        became_leader = []
        with self._lock:
            for tp in deleted:
                self.logs.pop(tp, None)
            for tp in list(self._leading):
                p = partitions.get(tp)
                if p is None or p.leader != self.broker_id:
                    del self._leading[tp]
                    self._isr.clear_pending(tp)
                    self._purgatory.fail(tp, "NOT_LEADER_OR_FOLLOWER")
            for tp, p in partitions.items():
                current = self._leading.get(tp)
                if p.leader == self.broker_id and (current is None or current.leader_epoch != p.leader_epoch):
                    self._leading[tp] = LeaderState.became_leader(self.broker_id, p.leader_epoch, p.isr, p.replicas, now)
                    self._isr.clear_pending(tp)
                    self.log(tp).assign_epoch_start(p.leader_epoch)
                    became_leader.append(tp)
                elif p.leader != self.broker_id:
                    self._fetcher.must_truncate.add(tp)
        self.wake(fetch=True)  # a new follower fetches from its new leader at once; a leader counts its ISR
        for tp in became_leader:
            if self._ledger.ever_appended(tp):
                self._emit_leader_log(tp, partitions[tp].leader_epoch)
            self._ledger.check_leader(tp, self.broker_id, self.log(tp))

    def _emit_leader_log(self, tp: TopicPartition, leader_epoch: int) -> None:
        """The partition's log is now the new leader's: after an unclean election it may be
        shorter than the old leader's, and the page must show that (its LEO and HW)."""
        log = self.log(tp)
        self._emit(Record(kind="log", subject=partition_subject(tp.topic, tp.partition), to_state="leader_log",
                          op="become_leader", broker_id=self.broker_id, topic=tp.topic, partition=tp.partition,
                          offset=log.log_end_offset, leader=self.broker_id, leader_epoch=leader_epoch,
                          note=f"Broker {self.broker_id} leads {tp} from epoch {leader_epoch}: the partition's log "
                               f"is now its log, {log.log_end_offset} message(s), high watermark "
                               f"{log.high_watermark}.",
                          detail={"leo": log.log_end_offset, "hw": log.high_watermark}))

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
            if follower not in state.isr and fetch_offset >= log.high_watermark:
                self.wake()  # it may join the ISR: Kafka's leader checks on this fetch (maybeExpandIsr)
            return log.read(fetch_offset, fetch_offset + MAX_FETCH), log.high_watermark

    def _advance_high_watermark(self, tp: TopicPartition, state: LeaderState, log: Log) -> None:
        # The HW never passes the LEO, so one already there cannot move: an idle partition's fetches
        # (2,400 a second in a class of 200) skip counting the ISR's offsets (issue 14, 33rd round).
        if log.high_watermark >= log.log_end_offset:
            return
        if log.update_high_watermark(state.high_watermark(log.log_end_offset)):
            self._emit(Record(kind="log", subject=partition_subject(tp.topic, tp.partition), to_state="hw",
                              op="high_watermark", broker_id=self.broker_id, topic=tp.topic, partition=tp.partition,
                              offset=log.high_watermark, leader=self.broker_id, leader_epoch=state.leader_epoch,
                              isr=state.isr, detail={"leo": log.log_end_offset, "hw": log.high_watermark}))
            self._purgatory.complete(self._clock.now_ms())

    def _maintain_as_leader(self, now: float) -> None:
        lag_max = self._host.config["replica.lag.time.max.ms"]
        lag_check_at = float("inf")  # a follower out of sync and not dropped now keeps it in the past
        for tp, partition in list(self._host.partitions().items()):
            if tp not in self._leading:
                continue  # followed, not led (a partition it comes to lead wakes the thread)
            with self._lock:
                state = self._leader_state(tp, partition.leader_epoch)
                if state is None or state.pending_isr is not None:
                    continue  # an AlterIsr in flight (or refused): no other change until it is settled
                state.isr = partition.isr  # the controller may have changed it (LeaderAndIsr)
                log = self.log(tp)
                self._advance_high_watermark(tp, state, log)
                laggards = state.out_of_sync(now, lag_max)
                joiners = state.ready_to_join(log.high_watermark, log.epoch_start_offset(state.leader_epoch))
                lag_check_at = min(lag_check_at, state.in_sync_until(lag_max))
            if joiners:
                self._change_isr(tp, partition, (*partition.isr, *joiners), "expanded", (
                    f"Leader {self.broker_id} takes {joiners} into the ISR of {tp}: caught up to the high watermark "
                    f"{log.high_watermark}."))
            elif laggards:
                self._change_isr(tp, partition, tuple(r for r in partition.isr if r not in laggards), "shrunk", (
                    f"Leader {self.broker_id} drops {laggards} from the ISR of {tp}: not caught up for "
                    f"{lag_max} ms (replica.lag.time.max.ms)."))
        self._lag_check_at = lag_check_at
        self._purgatory.complete(now)

    def _change_isr(self, tp, partition, new_isr, how, note) -> None:
        self._isr.change(tp, partition, tuple(new_isr), how, note)

    # -- what the ISR manager may change (``isr_manager.IsrHolder``) ------------------------------------
    def commit_isr(self, tp: TopicPartition, leader_epoch: int, isr: tuple[int, ...], zk_version: int) -> bool:
        """The ISR change is in ZooKeeper: the broker's view and the leader's bookkeeping take it."""
        if not self._host.update_isr(tp, leader_epoch, isr, zk_version):
            return False
        with self._lock:
            state = self._leader_state(tp, leader_epoch)
            if state is not None:
                state.isr, state.pending_isr = tuple(isr), None
        self.wake()  # the high watermark may move with the new ISR
        return True

    def pending_isr(self, tp: TopicPartition, leader_epoch: int) -> tuple[int, ...] | None:
        state = self._leader_state(tp, leader_epoch)
        return None if state is None else state.pending_isr

    def set_pending_isr(self, tp: TopicPartition, leader_epoch: int, isr: tuple[int, ...] | None) -> None:
        with self._lock:
            state = self._leader_state(tp, leader_epoch)
            if state is not None:
                state.pending_isr = isr

    # -- produce (the request handler's thread) --------------------------------------------------------
    def handle_produce(self, tp: TopicPartition, payloads: list[str], acks: str, respond) -> None:
        """Append on the leader; answer at once (acks 0/1) or when the ISR has it (acks=all)."""
        partition = self._host.partitions().get(tp)
        with self._lock:
            state = self._leader_state(tp, partition.leader_epoch) if partition else None
            if state is None:
                respond("NOT_LEADER_OR_FOLLOWER", None)
                return
            min_isr = self._topic_setting(tp.topic, "min.insync.replicas")
            if acks == "all" and len(state.isr) < min_isr:
                respond("NOT_ENOUGH_REPLICAS", None)
                return
            log = self.log(tp)
            first, last = log.append_as_leader(payloads, state.leader_epoch, acks)
            self._ledger.appended(tp)
            self._peers.wake_followers(partition.replicas, self.broker_id)
            self._advance_high_watermark(tp, state, log)
            if acks != "all":
                respond("NONE", (first, last, state.leader_epoch))
                return
            now = self._clock.now_ms()
            self._purgatory.watch(DelayedProduce(
                tp, state.leader_epoch, last + 1, now + self._host.config["request.timeout.ms"],
                lambda error, isr: respond(error, (first, last, state.leader_epoch), (isr, min_isr))), now)
        # The replica thread's next round was set before this request's deadline existed: a round
        # now sets it again, so the produce times out at request.timeout.ms (Kafka's purgatory has
        # a timer of its own), not at the thread's next fetch, replica.fetch.wait.max.ms away.
        self.wake()

    def _produce_outcome(self, produce: DelayedProduce, now: float) -> tuple[str, tuple[int, ...] | None] | None:
        """A waiting acks=all produce's answer now, with the ISR the leader counted when it got
        that far (the invariant panel checks acks=all against it), or ``None`` while it waits."""
        state = self._leader_state(produce.tp, produce.leader_epoch)
        if state is None:
            return "NOT_LEADER_OR_FOLLOWER", None
        if self.log(produce.tp).high_watermark >= produce.required_offset:
            min_isr = self._topic_setting(produce.tp.topic, "min.insync.replicas")
            error = "NONE" if len(state.maximal_isr) >= min_isr else "NOT_ENOUGH_REPLICAS_AFTER_APPEND"
            return error, tuple(state.maximal_isr)  # Kafka's checkEnoughReplicasReachOffset
        if now > produce.deadline:
            return "REQUEST_TIMED_OUT", None
        return None

    def read_committed(self, tp: TopicPartition) -> list[LogEntry] | None:
        """What a consumer may read from this leader: everything below the high watermark."""
        with self._lock:
            partition = self._host.partitions().get(tp)
            if partition is None or self._leader_state(tp, partition.leader_epoch) is None:
                return None
            log = self.log(tp)
            return log.read(0, log.high_watermark)

    def _emit(self, record: Record) -> None:
        self._cluster_emit([record])
