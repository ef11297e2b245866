"""``KafkaController`` on one broker: the imperative shell around the pure controller.

Every broker runs one. It owns the broker's controller event queue and thread
(``event_manager``), its channel manager (requests to the brokers) and its watches; it competes
for ``/controller`` and — while it is the active controller — turns each event into a call of
the pure core (``backend.core.controller``), carrying out the plans it yields: partition-state
reads, fenced ZooKeeper writes, requests to brokers. Everything it learns from ZooKeeper it
reads in the event thread; watch callbacks only put events (§4, §20).

What it may use of the world is what it is given — the broker's ``KafkaZkClient``, the record
stream, the lab's clock, the other brokers' request queues, the stage directions and its
broker's pause point — never its broker or the cluster. The handler of each event is in
``handlers.py``; the decisions themselves live in the core.
"""

from __future__ import annotations

import threading
import time
import weakref
from typing import Callable, Iterator

from backend.core import ibp
from backend.core.config import KafkaConfig
from backend.core.controller import events as ev
from backend.core.controller import failover
from backend.core.controller.context import ControllerContext
from backend.core.controller.plan import DeleteController, Plan
from backend.core.controller.program import Done, run_program
from backend.core.errors import ControllerMovedException
from backend.core.records import Record
from backend.runtime.controller.armed_watches import ArmedWatches
from backend.runtime.controller.channel_manager import ControllerChannelManager
from backend.runtime.controller.event_manager import ControllerEventManager, QueuedEvent
from backend.runtime.controller.handlers import HANDLERS, watch_reassigning_isr
from backend.runtime.controller.metrics import ControllerStats, GaugeReporter
from backend.runtime.lab_clock import LabClock, LabTimer
from backend.runtime.peers import BrokerDirectory, Emit
from backend.runtime.stage import GAVE_UP, HELD, HOLD_BACK_S, PausePoint, StageDirections
from backend.view.metrics import broker_metrics, controller_gauges
from backend.zk.client import KafkaZkClient
from backend.zk.watches import SessionState


EXPIRE_AWAIT_S = 30.0
"""A bound on the wait for ``Expire`` (Kafka waits for ever): a controller thread stuck for
this long must not keep the broker from ever opening a new session."""


class KafkaController:
    def __init__(self, broker_id: int, *, config: Callable[[], KafkaConfig], zk: KafkaZkClient, emit: Emit,
                 event_ids: Iterator[int], correlation_ids: Iterator[int], peers: BrokerDirectory, clock: LabClock,
                 stage: StageDirections, pause_point: PausePoint, gate: threading.Event, control_plane: bool,
                 register_broker: Callable[[], None]) -> None:
        """``config()`` is the broker's configuration now (dynamic settings change it);
        ``gate`` is cleared while the broker is paused; ``register_broker`` creates
        ``/brokers/ids/<id>`` again after a new session (Kafka's controller does it, in
        ``processRegisterBrokerAndReelect``)."""
        self.broker_id = broker_id
        self.config = config
        self.zk = zk
        self._cluster_emit = emit
        self.clock = clock
        self.stage = stage
        self.pause_point = pause_point
        self.register_broker = register_broker
        self.ctx = ControllerContext(controller_id=broker_id, config=config())
        self.auto_leader_rebalance_enable = config()["auto.leader.rebalance.enable"]
        """Static in Kafka (``config.autoLeaderRebalanceEnable``): read when the broker starts."""
        self.alter_isr_enabled = ibp.is_alter_isr_supported(config()["inter.broker.protocol.version"])
        """Static too (``isAlterIsrEnabled``): below 2.7 reassigning partitions' states are watched."""
        self.active_controller_id = -1
        self.events = ControllerEventManager(broker_id, self._process, emit=emit, event_ids=event_ids, gate=gate,
                                             preempt=self._preempt)
        # Its parts reach back to it weakly: a stopped broker's controller then dies with its last
        # reference, not in a full collection (``backend.zk.teardown.unlink`` says what those
        # cost a class).
        emit_while_alive = _while_alive(self.emit, [])
        self.channel = ControllerChannelManager(peers, correlation_ids, emit_while_alive, control_plane)
        self.watches = ArmedWatches(self.events.put, _while_alive(self._is_active, False))
        self.stats = ControllerStats(broker_id, emit_while_alive)
        self._current: QueuedEvent | None = None
        self.gauges = GaugeReporter(broker_id, emit_while_alive)
        self._rebalance_timer: LabTimer | None = None
        self._lock = threading.Lock()

    @property
    def is_active(self) -> bool:
        return self.active_controller_id == self.broker_id

    def _is_active(self) -> bool:
        return self.is_active

    def startup(self) -> None:
        self.events.put(ev.Startup())
        self.events.start()

    def shutdown(self) -> None:
        """Kafka's order: the event thread first (``eventManager.close()``), then what
        ``onControllerResignation`` stops. Cancelled first, the rebalance could be scheduled
        again by an ``AutoPreferredReplicaLeaderElection`` the thread was still processing: a
        timer armed for ``leader.imbalance.check.interval.seconds`` that held the shut-down
        controller and its old session that long (found while looking for another cause of a
        shut-down controller's session outliving it, issue 14, thirty-seventh round)."""
        self.events.close()
        self.cancel_rebalance()
        self.watches.close()

    # -- the ZooKeeper session (kazoo's thread: only put events) -------------------------------
    def on_session_lost(self) -> QueuedEvent:
        """Kafka's controller ``StateChangeHandler`` when the session expired: ``Expire``
        preempts everything. Returns it queued; the caller (kazoo's thread) then awaits its
        processing — beforeInitializingSession: the new session waits until Expire is being
        processed, so whatever the thread is doing now finishes against the expired session,
        never on a new one. (Blocking kazoo's thread is what holds the new session back; its
        requests meanwhile fail at once with SessionExpired.) Split from the wait so that the
        broker learns the session is lost only once Expire is in the queue."""
        self.watches.forget()
        return self.events.clear_and_put(ev.Expire())

    def on_session_state(self, state: SessionState, session_was_lost: bool) -> None:
        """The rest of the ``StateChangeHandler``: a new session after a lost one re-registers
        and re-elects; the connection back within the same session restores the watches kazoo
        dropped."""
        if state is SessionState.CONNECTED and session_was_lost:
            self.events.put(ev.RegisterBrokerAndReelect())
        elif state is SessionState.CONNECTED:
            self.watches.restore()

    # -- the event loop's one entry point ---------------------------------------------------
    def _process(self, queued: QueuedEvent) -> None:
        self._current = queued
        self.ctx = self.ctx.evolve(config=self.config())
        try:
            HANDLERS[queued.event.name](self, queued.event)
            watch_reassigning_isr(self)
        except ControllerMovedException as exc:
            self.emit([self.note("controller_moved", f"{exc}")])
            self.maybe_resign()
        finally:
            self.gauges.update(self.ctx, self.is_active)  # Kafka's updateMetrics, after every event
            self._current = None

    def metrics(self, under_replicated: int) -> dict:
        """This broker's controller metrics now (``backend/view/metrics.py``)."""
        queue_time, timers = self.events.stats.snapshot()
        return broker_metrics(controller_gauges(self.ctx, self.is_active), self.events.state,
                              {"size": self.events.size(), "time_ms": queue_time}, timers,
                              self.gauges.unclean_elections, under_replicated)

    @staticmethod
    def _preempt(queued: QueuedEvent) -> None:
        """Kafka's ``ControlledShutdown.preempt``: the waiting broker is answered at once
        (STALE_CONTROLLER_EPOCH). ``AlterIsrReceived.preempt`` does nothing: the leader's
        request times out and is sent again."""
        callback = getattr(queued.event, "callback", None)
        if callback is not None and queued.event.preempt_error is not None:
            callback(error=queued.event.preempt_error, message="the event was preempted: the controller moved")

    def emit(self, records: list[Record]) -> list[Record]:
        """Emit records caused by the event being processed (if any), each signed with who
        acted: this broker's id and the epoch it believes it has (a zombie's old one), where the
        record does not name them itself — a write ZooKeeper refused included (DESIGN.md)."""
        epoch = self.ctx.epoch or None
        self.gauges.count_unclean_elections(records)
        records = [r if r.controller_id is not None and r.controller_epoch is not None
                   else r.evolve(controller_id=self.broker_id if r.controller_id is None else r.controller_id,
                                 controller_epoch=epoch if r.controller_epoch is None else r.controller_epoch)
                   for r in records]
        current = self._current
        if current is None:
            return self._cluster_emit(records)
        return self._cluster_emit(records, cause=current.event.name, cause_seq=current.queued_seq)

    def emit_refused(self, records: list[Record]) -> list[Record]:
        """A write ZooKeeper refused names who attempted it and the epoch it believed it had: the
        space-time diagram draws it from this broker, the invariant panel fences this zombie."""
        return self.emit([r.evolve(controller_id=self.broker_id, controller_epoch=self.ctx.epoch or None)
                          if r.controller_id is None else r for r in records])

    # -- running the core's programs ----------------------------------------------------------
    def run(self, program, resign_when_fenced: bool = True) -> Done | None:
        """Carry out a program of the core; returns its ``Done``, or ``None`` if it was fenced
        (then the controller resigns, as Kafka's ``process`` does on ``ControllerMovedException``,
        unless the caller catches it as controlled shutdown's ``Try`` does)."""
        epoch_zk_version = self.ctx.epoch_zk_version
        finished = run_program(program, lambda plan: self._execute(plan, epoch_zk_version))
        if finished.controller_moved:
            self.emit([self.note("fenced", (
                f"ZooKeeper refused a write of broker {self.broker_id}: /controller_epoch is no longer at "
                f"version {epoch_zk_version}, so another broker has become controller."))])
            if resign_when_fenced:
                self.maybe_resign()
            return None
        self.ctx = finished.value.ctx
        return finished.value

    def _execute(self, plan: Plan, epoch_zk_version: int):
        if plan.records:
            self.emit(list(plan.records))
        result: tuple = ()
        if plan.reads:
            result = self.zk.get_partition_states(plan.reads)
        elif plan.writes:
            result = self._write(list(plan.writes), epoch_zk_version)
        if plan.requests:
            self.channel.send(plan.requests, self._on_response)
        for event in plan.events:
            self.events.put(event)
        return result

    def _write(self, writes: list, epoch_zk_version: int) -> list:
        event = self._current.event.name if self._current is not None else None
        self.zk.pipelined = self.config()["kclab.zk.pipelined.writes"]
        if self.pause_point.armed_for(event) and len(writes) > 1:
            # A pause armed for this event strikes after the *first* write: the rest of the
            # batch is attempted only when the broker wakes up — by then as a zombie.
            result = self.zk.execute(writes[:1], epoch_zk_version, emit=self.emit_refused)
            self.pause_point.reached(event)
            return result + self.zk.execute(writes[1:], epoch_zk_version, emit=self.emit_refused)
        started = time.perf_counter()
        result = self.zk.execute(writes, epoch_zk_version, emit=self.emit_refused)
        self.stats.writes_done(len(writes), time.perf_counter() - started, self.zk.pipelined, self.ctx.epoch)
        self.pause_point.reached(event)
        return result

    def _on_response(self, request, response) -> None:
        """Kafka's ``sendStopReplicaRequests`` callback: partitions deleted for a topic deletion
        in progress become an event. Kafka checks ``isTopicDeletionInProgress`` here, on a
        context the sending event has already changed in place; ours is replaced only when that
        event ends, so this only leaves out what is surely a reassignment's removed replica, and
        the event's handler checks the rest on the event thread. A request-level error fails
        every partition, as Kafka's handler treats it."""
        if request.name != "StopReplica":
            return
        moving = self.ctx.partitions_being_reassigned
        deletions = [p for p in request.partition_states if p.delete_partition and p.topic_partition not in moving]
        if deletions:
            errors = dict(response.partition_errors)
            self.events.put(ev.TopicDeletionStopReplicaResponseReceived(
                request.broker_id, tuple((p.topic_partition, response.error if response.error != "NONE"
                                          else errors.get(p.topic_partition, "NONE")) for p in deletions)))

    # -- who is the controller (§2) -----------------------------------------------------------
    def elect(self) -> None:
        current = self.zk.get_controller_id(watch=self.watches.on_controller)
        while current is None:  # a lesson's stage direction: the pinned broker goes first
            held, pinned = self.stage.hold_back(self.broker_id, lambda: self.zk.get_controller_id() is not None)
            if held == GAVE_UP:
                self.emit([self.note("stopped_holding_back", (
                    f"Broker {self.broker_id} waited {HOLD_BACK_S:.0f} s for broker {pinned}, whom the lesson's "
                    f"stage direction lets win, to become controller. It did not, so the race is open again: "
                    f"broker {self.broker_id} competes for /controller as any Kafka broker would."))])
            if held != HELD:
                break
            current = self.zk.get_controller_id(watch=self.watches.on_controller)
        if current is not None:
            self.active_controller_id = current
            return
        try:
            epoch, zk_version = self.zk.register_controller_and_increment_epoch(self.broker_id)
        except ControllerMovedException as exc:
            self.emit([self.note("lost_election", f"Broker {self.broker_id} lost the /controller race: {exc}")])
            self.maybe_resign()
            return
        self.active_controller_id = self.broker_id
        self.stage.election_decided(self.broker_id)
        try:
            self.ctx, record = failover.become_controller(self.ctx, epoch, zk_version)
            self.emit([record])
            self._on_controller_failover()
        except ControllerMovedException:
            self.maybe_resign()
        except Exception as exc:  # noqa: BLE001 - Kafka's elect(): any other Throwable moves the controller
            self.emit([self.note("failover_failed", (
                f"Broker {self.broker_id} failed while becoming controller ({type(exc).__name__}: {exc}); "
                f"it resigns and deletes /controller so that another broker can try (triggerControllerMove)."),
                outcome="error")])
            self.trigger_controller_move()

    def _on_controller_failover(self) -> None:
        watches = self.watches.for_handlers()
        metadata = self.zk.read_cluster_metadata(watches)
        self.zk.watch_brokers(metadata.brokers, watches["broker"])
        self.run(failover.on_controller_failover(self.ctx, metadata))
        if self.is_active and self.auto_leader_rebalance_enable:
            self.schedule_rebalance(self.ctx.config["kclab.auto.leader.rebalance.initial.delay.ms"] / 1000)

    def trigger_controller_move(self) -> None:
        """Kafka's ``triggerControllerMove``: resign and delete ``/controller`` — fenced at the
        epoch's version, so a controller that has already moved deletes nothing."""
        current = self.zk.get_controller_id(watch=self.watches.on_controller)
        self.active_controller_id = -1 if current is None else current
        if not self.is_active:
            return
        epoch_zk_version = self.ctx.epoch_zk_version
        self.active_controller_id = -1
        self.resign("it could not finish becoming controller.")
        self.zk.execute([DeleteController()], epoch_zk_version, emit=self.emit)

    def maybe_resign(self) -> None:
        was_active = self.is_active
        current = self.zk.get_controller_id(watch=self.watches.on_controller)
        self.active_controller_id = -1 if current is None else current
        if was_active and not self.is_active:
            self.resign(f"/controller now names {current}." if current is not None else "/controller is gone.")

    def resign(self, why: str) -> None:
        self.watches.resign()
        self.cancel_rebalance()
        self.ctx, record = failover.on_controller_resignation(self.ctx, why)
        self.emit([record])

    # -- the scheduler (auto leader rebalance) --------------------------------------------------
    def schedule_rebalance(self, delay_s: float) -> None:
        self.cancel_rebalance()
        generation = self.watches.generation

        def fire():
            if generation == self.watches.generation and self.is_active:
                self.events.put(ev.AutoPreferredReplicaLeaderElection())

        with self._lock:  # on the lab's clock: a lesson holds it while a stop waits
            self._rebalance_timer = self.clock.call_later(max(0.0, delay_s), fire)

    def cancel_rebalance(self) -> None:
        with self._lock:
            if self._rebalance_timer is not None:
                self._rebalance_timer.cancel()
                self._rebalance_timer = None

    def note(self, to_state: str, note: str, outcome: str | None = None) -> Record:
        return Record(kind="controller", subject=f"broker:{self.broker_id}", to_state=to_state,
                      broker_id=self.broker_id, controller_id=self.broker_id,
                      controller_epoch=self.ctx.epoch or None, outcome=outcome, note=note)


def _while_alive(method: Callable, otherwise):
    """``method`` without keeping its object alive: once the object is gone, ``otherwise``."""
    ref = weakref.WeakMethod(method)

    def call(*args, **kwargs):
        bound = ref()
        return otherwise if bound is None else bound(*args, **kwargs)
    return call
