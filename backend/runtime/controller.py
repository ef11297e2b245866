"""``KafkaController`` on one broker: the imperative shell around the pure controller.

Every broker runs one. It owns the broker's event queue and thread (``event_manager``),
competes for ``/controller``, and — while it is the active controller — turns each event into
a call of the pure core (``backend.core``), carrying out the plans it yields: partition-state
reads, fenced ZooKeeper writes, requests to brokers. Everything it learns from ZooKeeper it
reads in the event thread; watch callbacks only put events (§4, §20).

The table :data:`HANDLERS` maps each event to the method that handles it, so the whole
controller fits on one screen; the decisions themselves live in the core.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Callable

from kazoo.protocol.states import EventType

from backend.core import (
    broker_change, controlled_shutdown, failover, isr_change, leader_balance, reassignment, topic_change,
    topic_deletion,
)
from backend.core import events as ev
from backend.core.context import ControllerContext
from backend.core.errors import ControllerMovedException, KafkaException
from backend.core.partition_state_machine import trigger_online_partition_state_change
from backend.core.plan import Plan, run_program
from backend.core.records import Record
from backend.runtime.event_manager import ControllerEventManager, QueuedEvent
from backend.runtime.lab_clock import LabTimer
from backend.runtime.polling import poll_until

if TYPE_CHECKING:
    from backend.runtime.broker import SimulatedBroker

TIMED_WRITES = 200
"""A batch of at least this many controller writes leaves a ``zk_writes`` record with its time."""


class KafkaController:
    def __init__(self, broker: SimulatedBroker) -> None:
        self.broker = broker
        self.cluster = broker.cluster
        self.ctx = ControllerContext(controller_id=broker.id, config=broker.config)
        self.active_controller_id = -1
        self.events = ControllerEventManager(
            broker.id, self._process, emit=self.cluster.emit, event_ids=self.cluster.event_ids, gate=broker.gate,
            preempt=self._preempt)
        self._generation = 0  # bumped on resignation: watches armed while active go quiet
        self._lost_watches: dict = {}
        self._controller_watch_lost = False
        self._current: QueuedEvent | None = None
        self._rebalance_timer: LabTimer | None = None
        self._lock = threading.Lock()

    @property
    def is_active(self) -> bool:
        return self.active_controller_id == self.broker.id

    def startup(self) -> None:
        self.events.put(ev.Startup())
        self.events.start()

    def shutdown(self) -> None:
        self._cancel_rebalance()
        self.events.close()

    # -- the event loop's one entry point ---------------------------------------------------
    def _process(self, queued: QueuedEvent) -> None:
        self._current = queued
        self.ctx = self.ctx.evolve(config=self.broker.config)
        try:
            HANDLERS[type(queued.event)](self, queued.event)
        except ControllerMovedException as exc:
            self._emit([self._note("controller_moved", f"{exc}")])
            self._maybe_resign()
        finally:
            self._current = None

    def _preempt(self, queued: QueuedEvent) -> None:
        callback = getattr(queued.event, "callback", None)
        if callback is not None:
            callback(error="NOT_CONTROLLER")

    def _emit(self, records: list[Record]) -> list[Record]:
        current = self._current
        if current is None:
            return self.cluster.emit(records)
        return self.cluster.emit(records, cause=current.event.name, cause_seq=current.queued_seq)

    def _emit_refused(self, records: list[Record]) -> list[Record]:
        """A write ZooKeeper refused names who attempted it and the epoch it believed it had: the
        space-time diagram draws it from this broker, the invariant panel fences this zombie."""
        return self._emit([replace(r, controller_id=self.broker.id, controller_epoch=self.ctx.epoch or None)
                           if r.controller_id is None else r for r in records])

    # -- running the core's programs ----------------------------------------------------------
    def _run(self, program) -> Any:
        """Carry out a program of the core; returns its value, or ``None`` if it was fenced."""
        epoch_zk_version = self.ctx.epoch_zk_version
        finished = run_program(program, lambda plan: self._execute(plan, epoch_zk_version))
        if finished.controller_moved:
            self._emit([self._note("fenced", (
                f"ZooKeeper refused a write of broker {self.broker.id}: /controller_epoch is no longer at "
                f"version {epoch_zk_version}, so another broker has become controller."))])
            self._maybe_resign()
            return None
        value = finished.value
        self.ctx = value[0] if isinstance(value, tuple) else value
        return value

    def _execute(self, plan: Plan, epoch_zk_version: int):
        if plan.records:
            self._emit(list(plan.records))
        result: Any = ()
        if plan.reads:
            result = self.broker.kafka_zk.get_partition_states(plan.reads)
        elif plan.writes:
            writes, zk = list(plan.writes), self.broker.kafka_zk
            zk.pipelined = self.broker.config["kclab.zk.pipelined.writes"]
            if self.broker.pause_armed_for(self._current) and len(writes) > 1:
                # A pause armed for this event strikes after the *first* write: the rest of the
                # batch is attempted only when the broker wakes up — by then as a zombie.
                result = zk.execute(writes[:1], epoch_zk_version, emit=self._emit_refused)
                self.broker.after_controller_write(self._current)
                result = result + zk.execute(writes[1:], epoch_zk_version, emit=self._emit_refused)
            else:
                started = time.perf_counter()
                result = zk.execute(writes, epoch_zk_version, emit=self._emit_refused)
                self._timed_writes(len(writes), time.perf_counter() - started, zk.pipelined)
                self.broker.after_controller_write(self._current)
        if plan.requests:
            self.cluster.channel.send(self, plan.requests)
        return result

    def _timed_writes(self, count: int, seconds: float, pipelined: bool) -> None:
        """A big batch of writes says how long it took: what Kafka 1.1's pipelining buys, live."""
        if count < TIMED_WRITES:
            return
        how = ("pipelined: each sent without waiting for the previous answer" if pipelined
               else "one at a time: each sent after the previous answer")
        self._emit([Record(kind="controller", subject=f"broker:{self.broker.id}", to_state="zk_writes",
                           broker_id=self.broker.id, controller_id=self.broker.id,
                           controller_epoch=self.ctx.epoch or None, count=count,
                           note=f"Controller {self.broker.id} wrote {count} znodes to ZooKeeper in "
                                f"{seconds * 1000:.0f} ms, {how}.",
                           detail={"ms": round(seconds * 1000, 1), "pipelined": pipelined})])

    # -- election (§2) ------------------------------------------------------------------------
    def _watch_controller(self) -> int | None:
        return self.broker.kafka_zk.get_controller_id(watch=self._controller_watch)

    def _controller_watch(self, event) -> None:
        if event.type == EventType.NONE:
            self._controller_watch_lost = True
        elif event.type == EventType.DELETED:
            self.events.put(ev.Reelect())
        else:
            self.events.put(ev.ControllerChange())

    def _elect(self) -> None:
        current = self._watch_controller()
        if current is None and self._wait_for_pinned_winner():
            current = self._watch_controller()
        if current is not None:
            self.active_controller_id = current
            return
        try:
            epoch, zk_version = self.broker.kafka_zk.register_controller_and_increment_epoch(self.broker.id)
        except ControllerMovedException as exc:
            self._emit([self._note("lost_election", f"Broker {self.broker.id} lost the /controller race: {exc}")])
            self._maybe_resign()
            return
        self.active_controller_id = self.broker.id
        self.cluster.election_winner = None  # this election is decided: the direction is spent
        self.ctx, record = failover.become_controller(self.ctx, epoch, zk_version)
        self._emit([record])
        self._on_controller_failover()

    def _wait_for_pinned_winner(self) -> bool:
        """A lesson's stage direction names the winner of this election: the other brokers hold
        back until it has won (a race pinned so the lesson plays the same way every time), or
        for 5 s at most, or until it stops running. True when this broker held back."""
        winner = self.cluster.election_winner
        if winner is None or winner == self.broker.id:
            return False
        other = self.cluster.brokers.get(winner)
        try:
            poll_until(lambda: other is None or other.status != "running"
                       or self.broker.kafka_zk.get_controller_id() is not None, 5, f"broker {winner} to win")
        except TimeoutError:
            pass  # the named broker did not win in time: the race is open again
        return True

    def _on_controller_failover(self) -> None:
        metadata = self.broker.kafka_zk.read_cluster_metadata(self._watches())
        self._run(failover.on_controller_failover(self.ctx, metadata))
        if self.is_active and self.ctx.config["auto.leader.rebalance.enable"]:
            self._schedule_rebalance(self.ctx.config["kclab.auto.leader.rebalance.initial.delay.ms"] / 1000)

    def _maybe_resign(self) -> None:
        was_active = self.is_active
        current = self._watch_controller()
        self.active_controller_id = -1 if current is None else current
        if was_active and not self.is_active:
            self._resign(f"/controller now names {current}." if current is not None else "/controller is gone.")

    def _resign(self, why: str) -> None:
        self._generation += 1
        self._cancel_rebalance()
        self.ctx, record = failover.on_controller_resignation(self.ctx, why)
        self._emit([record])

    # -- watches: they only put events ----------------------------------------------------------
    def _watches(self) -> dict[str, Callable]:
        """One watch callback per Kafka handler, valid until this controller resigns."""
        generation = self._generation

        def put(key, event_factory):
            def fire(watched=None):
                if generation != self._generation or not self.is_active:
                    return
                if watched is not None and watched.type == EventType.NONE:
                    self._lost_watches[key] = event_factory  # re-armed when the connection is back
                    return
                self.events.put(event_factory())
            return fire

        return {
            "brokers": put("brokers", ev.BrokerChange), "topics": put("topics", ev.TopicChange),
            "topic": lambda topic: put(("topic", topic), lambda: ev.PartitionModifications(topic)),
            "delete_topics": put("delete_topics", ev.TopicDeletion),
            "isr_change": put("isr_change", ev.IsrChangeNotification),
            "reassign": put("reassign", ev.ZkPartitionReassignment),
            "preferred": put("preferred", ev.ReplicaLeaderElection),
        }

    def restore_watches(self) -> None:
        """The connection came back within the same session. ZooKeeper's Java client restores
        watches by itself and reports what changed meanwhile; kazoo drops them on a disconnect.
        So put each lost watch's event: its handler re-reads (which re-arms it) and picks up
        anything missed."""
        lost, self._lost_watches = self._lost_watches, {}
        if self._controller_watch_lost:
            self._controller_watch_lost = False
            self.events.put(ev.ControllerChange())
        for event_factory in lost.values():
            self.events.put(event_factory())

    def forget_lost_watches(self) -> None:
        """The session itself is gone: a new session arms its own watches."""
        self._lost_watches = {}
        self._controller_watch_lost = False

    # -- handlers ---------------------------------------------------------------------------------
    def on_startup(self, event) -> None:
        self._elect()

    def on_controller_change(self, event) -> None:
        self._maybe_resign()

    def on_reelect(self, event) -> None:
        self._maybe_resign()
        self._elect()

    def on_register_broker_and_reelect(self, event) -> None:
        self.broker.register()
        self._maybe_resign()
        self._elect()

    def on_expire(self, event) -> None:
        was_active = self.is_active
        self.active_controller_id = -1
        if was_active:
            self._resign("its ZooKeeper session expired.")

    def on_broker_change(self, event) -> None:
        if self.is_active:
            brokers = self.broker.kafka_zk.get_all_brokers(watch=self._watches()["brokers"])
            self._run(broker_change.process_broker_change(self.ctx, brokers))

    def on_topic_change(self, event) -> None:
        if not self.is_active:
            return
        watches = self._watches()
        topics = self.broker.kafka_zk.get_all_topics(watch=watches["topics"])
        new = topic_change.topics_to_read(self.ctx, topics)
        assignments = self.broker.kafka_zk.get_topic_assignments(new, watch=watches["topic"])
        configs = self.broker.kafka_zk.get_topic_configs(new)
        self._run(topic_change.process_topic_change(self.ctx, topics, assignments, configs))

    def on_partition_modifications(self, event: ev.PartitionModifications) -> None:
        if not self.is_active:
            return
        assignments = self.broker.kafka_zk.get_topic_assignments([event.topic], watch=self._watches()["topic"])
        if event.topic in assignments:
            self._run(topic_change.process_partition_modifications(self.ctx, event.topic, assignments[event.topic]))

    def on_topic_deletion(self, event) -> None:
        if self.is_active:
            topics = self.broker.kafka_zk.get_topic_deletions(watch=self._watches()["delete_topics"])
            self._run(topic_deletion.process_topic_deletion(self.ctx, topics))

    def on_stop_replica_response(self, event: ev.TopicDeletionStopReplicaResponseReceived) -> None:
        """Only partitions of a topic deletion in progress count: a reassignment deletes its
        removed replicas with StopReplica too, and that answer is nobody's event."""
        deleting = self.ctx.topics_with_deletion_started
        errors = tuple((tp, error) for tp, error in event.partition_errors if tp.topic in deleting)
        if self.is_active and errors:
            self._run(topic_deletion.process_stop_replica_response(self.ctx, event.replica_id, errors))

    def on_zk_partition_reassignment(self, event) -> None:
        if self.is_active:
            requested = self.broker.kafka_zk.get_partition_reassignment(watch=self._watches()["reassign"])
            if requested is not None:
                self._run(reassignment.process_zk_partition_reassignment(self.ctx, requested))

    def on_isr_change_notification(self, event) -> None:
        if not self.is_active:
            return
        zk = self.broker.kafka_zk
        sequence_numbers = zk.get_isr_change_notifications(watch=self._watches()["isr_change"])
        partitions = zk.get_partitions_from_isr_change_notifications(sequence_numbers)
        states = {tp: s for tp, s in zk.get_partition_states(partitions).items() if s is not None}
        self._run(isr_change.process_isr_change_notification(self.ctx, tuple(sequence_numbers), states))

    def on_replica_leader_election(self, event: ev.ReplicaLeaderElection) -> None:
        if not self.is_active:
            return
        partitions = event.partitions
        if partitions is None:
            partitions = self.broker.kafka_zk.get_preferred_replica_election(watch=self._watches()["preferred"])
            if partitions is None:
                return
        self._run(leader_balance.process_replica_leader_election(
            self.ctx, partitions, event.election_type, event.trigger))

    def on_auto_rebalance(self, event) -> None:
        if self.is_active:
            self._run(leader_balance.check_and_trigger_auto_leader_rebalance(self.ctx))
            if self.is_active:
                self._schedule_rebalance(self.ctx.config["leader.imbalance.check.interval.seconds"])

    def on_controlled_shutdown(self, event: ev.ControlledShutdown) -> None:
        if not self.is_active:
            event.callback(error="NOT_CONTROLLER")
            return
        try:
            value = self._run(controlled_shutdown.do_controlled_shutdown(self.ctx, event.broker_id, event.broker_epoch))
        except KafkaException as exc:
            self._emit([self._note("controlled_shutdown_refused", str(exc), outcome="error")])
            event.callback(error=type(exc).__name__, message=str(exc))
            return
        if value is None:
            event.callback(error="NOT_CONTROLLER")
        else:
            event.callback(remaining=[str(tp) for tp in value[1]])

    def on_unclean_leader_election_enable(self, event) -> None:
        if self.is_active:
            self._run(trigger_online_partition_state_change(self.ctx))

    def on_topic_unclean_leader_election_enable(self, event: ev.TopicUncleanLeaderElectionEnable) -> None:
        if not self.is_active:
            return
        configs = self.broker.kafka_zk.get_topic_configs([event.topic])
        self.ctx = self.ctx.evolve(topic_configs={**self.ctx.topic_configs, **configs})
        self._run(trigger_online_partition_state_change(self.ctx, event.topic))

    def on_response(self, event) -> None:
        pass  # logged by the request records; log-dir failures are not simulated

    # -- the scheduler (auto leader rebalance) --------------------------------------------------
    def _schedule_rebalance(self, delay_s: float) -> None:
        self._cancel_rebalance()
        generation = self._generation

        def fire():
            if generation == self._generation and self.is_active:
                self.events.put(ev.AutoPreferredReplicaLeaderElection())

        with self._lock:  # on the lab's clock: a lesson holds it while a stop waits
            self._rebalance_timer = self.cluster.clock.call_later(max(0.0, delay_s), fire)

    def _cancel_rebalance(self) -> None:
        with self._lock:
            if self._rebalance_timer is not None:
                self._rebalance_timer.cancel()
                self._rebalance_timer = None

    def _note(self, to_state: str, note: str, outcome: str | None = None) -> Record:
        return Record(kind="controller", subject=f"broker:{self.broker.id}", to_state=to_state,
                      broker_id=self.broker.id, controller_id=self.broker.id,
                      controller_epoch=self.ctx.epoch or None, outcome=outcome, note=note)


HANDLERS: dict[type, Callable[[KafkaController, Any], None]] = {
    ev.Startup: KafkaController.on_startup,
    ev.ControllerChange: KafkaController.on_controller_change,
    ev.Reelect: KafkaController.on_reelect,
    ev.RegisterBrokerAndReelect: KafkaController.on_register_broker_and_reelect,
    ev.Expire: KafkaController.on_expire,
    ev.BrokerChange: KafkaController.on_broker_change,
    ev.BrokerModifications: KafkaController.on_response,
    ev.TopicChange: KafkaController.on_topic_change,
    ev.PartitionModifications: KafkaController.on_partition_modifications,
    ev.TopicDeletion: KafkaController.on_topic_deletion,
    ev.TopicDeletionStopReplicaResponseReceived: KafkaController.on_stop_replica_response,
    ev.ZkPartitionReassignment: KafkaController.on_zk_partition_reassignment,
    ev.IsrChangeNotification: KafkaController.on_isr_change_notification,
    ev.LeaderAndIsrResponseReceived: KafkaController.on_response,
    ev.UpdateMetadataResponseReceived: KafkaController.on_response,
    ev.ReplicaLeaderElection: KafkaController.on_replica_leader_election,
    ev.AutoPreferredReplicaLeaderElection: KafkaController.on_auto_rebalance,
    ev.ControlledShutdown: KafkaController.on_controlled_shutdown,
    ev.UncleanLeaderElectionEnable: KafkaController.on_unclean_leader_election_enable,
    ev.TopicUncleanLeaderElectionEnable: KafkaController.on_topic_unclean_leader_election_enable,
}
