"""The lab's client: it produces and consumes, and remembers every acknowledged message.

A producer finds a partition's leader in a broker's metadata cache (what UpdateMetadata put
there, as a Kafka client's metadata request would), sends the batch to that broker's request
queue and waits for the answer. Every message a leader acknowledged goes into the *ledger*;
whenever a broker becomes leader, the ledger is checked against its log, and any acknowledged
message it lacks is reported as a ``data_loss`` record — naming the offsets and the acks
setting — so a loss is never silent.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Mapping

from backend.core.broker.log import Log
from backend.core.config import KafkaConfig
from backend.core.model import TopicPartition
from backend.core.records import Record
from backend.core.subjects import partition_subject
from backend.runtime.peers import Emit
from backend.view.violations import ranges

if TYPE_CHECKING:
    from backend.core.requests import UpdateMetadataPartitionState
    from backend.runtime.broker.broker import SimulatedBroker


@dataclass(frozen=True)
class ProduceResult:
    error: str  # "NONE" or Kafka's error name
    first_offset: int | None = None
    count: int = 0
    leader: int | None = None
    isr: tuple[int, ...] | None = None
    """acks=all: the ISR the leader counted when it answered, and min.insync.replicas then."""
    min_isr: int | None = None


class AckLedger:
    def __init__(self, emit: Emit) -> None:
        self._emit = emit
        self._acked: dict[TopicPartition, dict[int, tuple[str, str]]] = defaultdict(dict)
        self._reported: set[tuple[TopicPartition, int, str]] = set()
        self._appended: set[TopicPartition] = set()
        self._lock = threading.Lock()

    def appended(self, tp: TopicPartition) -> None:
        """A leader appended to ``tp``: from now on its logs are worth showing (see ``ever_appended``)."""
        with self._lock:
            self._appended.add(tp)

    def ever_appended(self, tp: TopicPartition) -> bool:
        """Whether any leader ever appended to ``tp``. Partitions never written to have nothing
        to show about a log, so a new leader of one emits no ``leader_log`` record (which keeps
        a failover of 100,000 empty partitions from writing 100,000 records about empty logs)."""
        with self._lock:
            return tp in self._appended

    def acknowledged(self, tp: TopicPartition, first_offset: int, payloads: list[str], acks: str) -> None:
        with self._lock:
            for i, payload in enumerate(payloads):
                self._acked[tp][first_offset + i] = (payload, acks)

    def lost_count(self, tp: TopicPartition) -> int:
        with self._lock:
            return sum(1 for t, _, _ in self._reported if t == tp)

    def acked_messages(self, tp: TopicPartition) -> dict[int, tuple[str, str]]:
        with self._lock:
            return dict(self._acked.get(tp, {}))

    def check_leader(self, tp: TopicPartition, leader: int, log: Log) -> list[int]:
        """Report acknowledged messages the new leader does not have; returns their offsets."""
        with self._lock:
            lost = [(offset, payload, acks) for offset, (payload, acks) in sorted(self._acked.get(tp, {}).items())
                    if not log.contains(offset, payload) and (tp, offset, payload) not in self._reported]
            self._reported.update((tp, offset, payload) for offset, payload, _ in lost)
        for acks, offsets in _group_by_acks(lost):
            self._emit([Record(
                kind="log", subject=partition_subject(tp.topic, tp.partition), to_state="lost", op="data_loss",
                topic=tp.topic, partition=tp.partition, broker_id=leader, leader=leader, offset=offsets[0],
                count=len(offsets), acks=acks, outcome="data_loss",
                note=f"{len(offsets)} message(s) at offset(s) {ranges(offsets)} were acknowledged (acks={acks}) but "
                     f"the new leader {leader} does not have them: they are lost.",
                detail={"offsets": offsets})])
        return [offset for offset, _, _ in lost]


class Producer:
    def __init__(self, brokers: Mapping[int, SimulatedBroker], config: Callable[[], KafkaConfig], ledger: AckLedger,
                 emit: Emit, closed: Callable[[], bool]) -> None:
        """``brokers``: the cluster's, by id (a client may connect to any); ``config()``: the
        cluster's configuration now; ``closed()``: whether the cluster is being taken down."""
        self._brokers = brokers
        self._config = config
        self._ledger = ledger
        self._emit = emit
        self._closed = closed
        self._ids = itertools.count()
        self._background: list[threading.Thread] = []
        self.last_error: str | None = None
        """The answer to the latest produce ("NONE": it succeeded) — lessons ask about it."""
        self.requested = 0
        """Messages asked for so far, sent or still to send: a cluster takes at most MAX_MESSAGES."""

    def metadata_of(self, tp: TopicPartition) -> UpdateMetadataPartitionState | None:
        """``tp`` in the metadata cache of the first running broker — the client's view, which a
        Kafka client gets from a broker's MetadataResponse, never from ZooKeeper — or ``None``
        (no running broker, or a partition that broker does not know)."""
        for broker in sorted(self._brokers.values(), key=lambda b: b.id):
            if broker.status == "running":
                return broker.state.metadata_partitions.get(tp)
        return None

    def leader_of(self, tp: TopicPartition) -> int | None:
        """The leader in the client's view (:meth:`metadata_of`)."""
        state = self.metadata_of(tp)
        return None if state is None or state.leader < 0 else state.leader

    def produce(self, tp: TopicPartition, count: int, acks: str) -> ProduceResult:
        """Send one batch and wait for the answer (acks=0: nothing to wait for)."""
        done, holder = threading.Event(), {}

        def finished(result: ProduceResult) -> None:
            holder["result"] = result
            done.set()

        timeout_s = self._config()["request.timeout.ms"] / 1000 + 1
        self.requested += count
        self.send(tp, count, acks, finished)
        if not done.wait(timeout_s):
            return ProduceResult("REQUEST_TIMED_OUT", None, count, self.leader_of(tp))
        return holder["result"]

    def send(self, tp: TopicPartition, count: int, acks: str, finished=None) -> None:
        """Send one batch without waiting (as a producer with requests in flight does); the
        answer is recorded — and acknowledged messages go into the ledger — when it comes."""
        payloads = [f"m{next(self._ids)}" for _ in range(count)]
        leader_id = self.leader_of(tp)
        broker = self._brokers.get(leader_id) if leader_id is not None else None

        def answer(result: ProduceResult) -> None:
            self.last_error = result.error
            if result.error == "NONE" and acks != "0" and result.first_offset is not None:
                self._ledger.acknowledged(tp, result.first_offset, payloads, acks)
            self._record(tp, acks, result, payloads)
            if finished is not None:
                finished(result)

        if broker is None or broker.status != "running":
            answer(ProduceResult("LEADER_NOT_AVAILABLE" if leader_id is None else "REQUEST_TIMED_OUT", None, count,
                                 leader_id))
            return

        def respond(error, offsets, checked=(None, None)):
            if acks != "0":
                isr, min_isr = checked if checked[0] is not None else (None, None)
                answer(ProduceResult(error, offsets[0] if offsets else None, count, leader_id, isr, min_isr))

        broker.requests.enqueue_produce(tp, payloads, acks, respond)
        if acks == "0":
            answer(ProduceResult("NONE", None, count, leader_id))

    def produce_in_background(self, tp: TopicPartition, count: int, acks: str, rate: float) -> None:
        """``count`` single-message requests at ``rate`` per second, not waiting for answers —
        so a slow broker builds up a queue, as with a real producer."""
        self.requested += count  # counted now, so the next request sees them before they are sent

        def run():
            interval, start = 1 / rate, time.monotonic()
            for n in range(count):
                delay = start + n * interval - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                if self._closed():
                    return
                self.send(tp, 1, acks)
        thread = threading.Thread(target=run, name=f"producer-{tp}", daemon=True)
        self._background.append(thread)
        thread.start()

    def consume(self, tp: TopicPartition) -> list[str] | None:
        """Read the partition from its leader, up to the high watermark."""
        leader_id = self.leader_of(tp)
        broker = self._brokers.get(leader_id) if leader_id is not None else None
        entries = broker.data.read_committed(tp) if broker is not None and broker.status == "running" else None
        if entries is None:
            self._emit([Record(kind="log", subject=partition_subject(tp.topic, tp.partition), op="consume",
                                      to_state="refused", topic=tp.topic, partition=tp.partition, outcome="error",
                                      note=f"No leader of {tp} could be read from (NOT_LEADER_OR_FOLLOWER).")])
            return None
        self._emit([Record(kind="log", subject=partition_subject(tp.topic, tp.partition), op="consume",
                                  to_state="read", topic=tp.topic, partition=tp.partition, offset=0, count=len(entries),
                                  broker_id=leader_id, leader=leader_id, outcome="ok",
                                  note=f"A consumer read {len(entries)} committed message(s) of {tp} from leader "
                                       f"{leader_id} (everything below the high watermark {len(entries)}).",
                                  detail={"payloads": [e.payload for e in entries[-50:]]})])
        return [e.payload for e in entries]

    def _record(self, tp: TopicPartition, acks: str, result: ProduceResult, payloads: list[str]) -> None:
        ok = result.error == "NONE"
        what = (f"offsets {result.first_offset}..{result.first_offset + result.count - 1}"
                if ok and result.first_offset is not None else f"{result.count} message(s)")
        if ok and acks == "0":
            note = f"Sent {result.count} message(s) to leader {result.leader} with acks=0: nobody waits for an answer."
        elif ok and result.isr is not None:
            note = (f"Leader {result.leader} acknowledged {what} (acks={acks}): its ISR {list(result.isr)} has them, "
                    f"and min.insync.replicas is {result.min_isr}.")
        elif ok:
            note = f"Leader {result.leader} acknowledged {what} (acks={acks})."
        else:
            note = f"Producing {result.count} message(s) with acks={acks} failed: {result.error}{_why(result.error)}"
        detail = {"error": result.error, "payloads": payloads[:20]}
        if result.min_isr is not None:
            detail["min_insync_replicas"] = result.min_isr
        self._emit([Record(
            kind="log", subject=partition_subject(tp.topic, tp.partition), op="produce",
            to_state="acknowledged" if ok else "refused", topic=tp.topic, partition=tp.partition,
            broker_id=result.leader, leader=result.leader, isr=result.isr, offset=result.first_offset,
            count=result.count, acks=acks, outcome="ok" if ok else "error", note=note, detail=detail)])


def _why(error: str) -> str:
    return {
        "NOT_ENOUGH_REPLICAS": " — the ISR is smaller than min.insync.replicas, so the leader refused to append.",
        "NOT_ENOUGH_REPLICAS_AFTER_APPEND": " — appended, but the ISR shrank below min.insync.replicas before every "
                                            "member had it.",
        "REQUEST_TIMED_OUT": " — the ISR did not catch up within request.timeout.ms.",
        "NOT_LEADER_OR_FOLLOWER": " — the broker asked is not the leader (its metadata was stale).",
        "LEADER_NOT_AVAILABLE": " — the partition has no leader right now.",
    }.get(error, ".")


def _group_by_acks(lost):
    groups: dict[str, list[int]] = defaultdict(list)
    for offset, _, acks in lost:
        groups[acks].append(offset)
    return sorted(groups.items())
