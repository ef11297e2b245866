"""A simulated Kafka cluster: its brokers, its chroot in ZooKeeper, its stream of records.

Each cluster lives under its own chroot (default ``/kclab/<cluster-id>``), so any number of
clusters — a class demo and thirty sandboxes — share one ZooKeeper without seeing each other,
and ``zkCli.sh`` on ``HOST:PORT/kclab/<cluster-id>`` shows the tree a Kafka 2.8 cluster would.

The cluster is the root of the runtime's tree. It owns its brokers (each handed only the
:class:`~backend.runtime.peers.ClusterServices` it may use), one *operator* session
(``backend.zk.operator``: Kafka's admin tools write through it, and it watches the whole tree
to report what ZooKeeper holds), the record bus, the lab's clock, the lesson's stage
directions, and the client that produces and consumes.
"""

from __future__ import annotations

import itertools
import random
import threading
import time
from typing import Any, Callable, Iterable

from backend.core import ibp
from backend.core.assignment import assign_replicas_to_brokers
from backend.core.config import KafkaConfig, config_string, topic_config_value
from backend.core.records import Record, SessionHeader
from backend.faultscript.cluster_spec import ClusterSpec, TopicSpec
from backend.runtime import heap, inspection
from backend.runtime.broker.broker import SimulatedBroker
from backend.runtime.lab_clock import LabClock
from backend.runtime.peers import BrokerDirectory, ClusterServices
from backend.runtime.polling import poll_until
from backend.runtime.producer import AckLedger, Producer
from backend.runtime.record_bus import RecordBus
from backend.runtime.stage import StageDirections
from backend.view.metrics import cluster_metrics, under_replicated_partitions
from backend.zk.admin import AdminZkClient
from backend.zk.multi_read import ensemble_answers_multi_read
from backend.zk.operator import OperatorSession
from backend.zk.paths import broker_path


class Cluster:
    def __init__(self, zk_hosts: str, chroot: str, spec: ClusterSpec, session_id: str,
                 bus: RecordBus | None = None, zk_control=None, observe: bool = True) -> None:
        """``zk_hosts`` without chroot; ``zk_control`` is our own launcher's server or ensemble
        (needed only for the ZooKeeper-quorum faults)."""
        self.zk_hosts = zk_hosts
        self.chroot = chroot.rstrip("/")
        self.spec = spec
        self.config = KafkaConfig(spec.config)
        self.bus = bus or RecordBus(session_id)
        self.session_id = session_id
        self.zk_control = zk_control
        self.lock = threading.RLock()
        self.topic_configs: dict[str, dict[str, Any]] = {t: dict(s.config) for t, s in spec.topics.items()}
        self.closed = False
        self._frozen: int | None = None
        """What this cluster's ``heap.settle`` froze, once it has started."""
        self.clock = LabClock()
        """The lab's timers' clock (lag checks, the rebalance scheduler): a lesson holds it at a stop."""
        self.zk_since_3_6 = False
        """Every ZooKeeper server is 3.6 or later, so answers ``multiRead`` (``backend/zk/multi_read.py``)
        and ``addWatch`` (``backend/zk/persistent_watch.py``); asked at start."""
        self.operator = OperatorSession(zk_hosts, self.chroot)
        self._observe = observe
        self.brokers: dict[int, SimulatedBroker] = {}
        self.peers = BrokerDirectory(self.brokers)
        self.stage = StageDirections(self.peers.is_running)
        """A lesson's stage directions (who wins the next controller election)."""
        self.ledger = AckLedger(self.emit)
        self.producer = Producer(self.brokers, lambda: self.config, self.ledger, self.emit, lambda: self.closed)
        services = ClusterServices(
            zk_hosts=zk_hosts, chroot=self.chroot, multi_read=lambda: self.zk_since_3_6, emit=self.emit,
            event_ids=itertools.count(1), correlation_ids=itertools.count(1), clock=self.clock, stage=self.stage,
            ledger=self.ledger, topic_setting=self.topic_setting, peers=self.peers)
        self.brokers.update({b: SimulatedBroker(b, self.config, services) for b in spec.brokers})

    @property
    def admin(self) -> AdminZkClient:
        """What Kafka's admin tools write (``kafka-topics.sh``, ``kafka-configs.sh``, …)."""
        return self.operator.admin

    def emit(self, records: Iterable[Record], cause: str | None = None, cause_seq: int | None = None) -> list[Record]:
        return self.bus.emit(records, cause=cause, cause_seq=cause_seq)

    def header(self, mode: str, app_version: str, **extra) -> SessionHeader:
        return SessionHeader(
            session_id=self.session_id, mode=mode, started_ms=int(time.time() * 1000), app_version=app_version,
            cluster={"brokers": list(self.spec.brokers), "chroot": self.chroot,
                     "topics": {t: {"partitions": s.partitions, "replication_factor": s.replication_factor}
                                for t, s in self.spec.topics.items()},
                     "config": dict(self.config.overrides)},
            **extra)

    # -- life -----------------------------------------------------------------------------------
    def open(self) -> None:
        """Ask the ensemble what it answers, make the chroot, start the operator session (and
        its observer): everything before the first broker starts."""
        self.zk_since_3_6 = ensemble_answers_multi_read(self.zk_hosts)
        self.operator.start()
        if self._observe:
            self.operator.observe(self.emit, self.broker_of_session, persistent_watch=self.zk_since_3_6)

    def start(self, timeout: float = 30.0) -> None:
        self.open()
        for index, broker_id in enumerate(self.spec.brokers):
            self.brokers[broker_id].start()
            if index == 0:  # the first broker listed wins the first election
                self.wait_until(lambda: self.controller_id() == broker_id, timeout,
                                "the first broker to be elected")
        self.wait_until(self._all_brokers_known, timeout, "the controller to learn about every broker")
        for topic, spec in self.spec.topics.items():
            self.create_topic(topic, spec)
        if self.spec.topics:
            self.wait_until(lambda: self._topics_known(self.spec.topics), timeout, "the controller to create the topics")
        self.wait_stable(timeout)
        self._frozen = heap.settle()

    def create_topic(self, topic: str, spec: TopicSpec) -> dict[int, list[int]]:
        config = {k: config_string(v) for k, v in spec.config.items()}
        if spec.assignment is not None:
            assignment = {int(p): list(r) for p, r in spec.assignment.items()}
        else:  # as Kafka's admin tools do: over the brokers registered in /brokers/ids
            assignment = assign_replicas_to_brokers(spec.partitions, spec.replication_factor,
                                                    self.admin.list_brokers(), rng=random.Random(topic))
        self.admin.create_topic(topic, assignment, config,
                                uses_topic_id=ibp.uses_topic_id(self.config["inter.broker.protocol.version"]))
        self.topic_configs[topic] = dict(spec.config)
        return assignment

    def topic_setting(self, topic: str, name: str) -> Any:
        """A topic-level setting as the brokers see it: the topic's override, else the broker's."""
        return topic_config_value(self.config, self.topic_configs.get(topic), name)

    def close(self, keep: bool = False) -> None:
        """Stop everything. Controllers go quiet first, so the brokers' departures do not set off
        a last round of elections while the cluster is being taken down."""
        self.closed = True
        self.operator.stop_observing()
        for broker in self.brokers.values():
            broker.silence()
        for broker in self.brokers.values():
            if broker.alive:
                broker.stop()
        try:
            self.operator.close(delete_chroot=not keep)
        finally:
            if self._frozen is not None:  # only a started cluster counts among those frozen
                frozen, self._frozen = self._frozen, None
                heap.release(frozen)

    def crash_broker(self, broker_id: int) -> None:
        """``kill -9`` broker ``broker_id``, and watch its registration as any ZooKeeper client
        could: when ZooKeeper expires the abandoned session and deletes ``/brokers/ids/<id>``, the
        broker's ``session_expired`` record says so (nobody can see an expiry any other way)."""
        broker = self.brokers[broker_id]
        session = broker.session_id
        broker.crash()
        if session is not None:
            self.operator.watch_ephemeral(broker_path(broker_id), session,
                                          lambda: broker.session_expiry_seen(session))

    def set_broker_config(self, name: str, value: Any) -> None:
        """A dynamic broker-wide setting: every broker (and every later restart) uses it.

        Written to ``/config/brokers/<default>`` first, as ``kafka-configs.sh --entity-default``
        would, so ``zkCli.sh`` and the page both see it (Kafka stores every value as a string)."""
        self.admin.set_broker_default_config({name: config_string(value)})
        self.config = self.config.with_overrides({name: value})
        for broker in self.brokers.values():
            broker.config = self.config
            broker.data.wake()  # its leader side counts with the new value now (a shorter replica.lag.time.max.ms)

    # -- looking at it ------------------------------------------------------------------------------
    def broker_of_session(self, session_hex: str) -> int | None:
        for broker in self.brokers.values():
            if broker.session_id == session_hex:
                return broker.id
        return None

    def controller_id(self) -> int | None:
        return self.operator.controller_id()

    def active_controller(self):
        cid = self.controller_id()
        broker = self.brokers.get(cid) if cid is not None else None
        if broker is None or broker.controller is None or not broker.controller.is_active:
            return None
        return broker.controller

    def inspect(self, znodes: Iterable[str] = ()) -> dict[str, Any]:
        """The cluster as ``expect`` steps see it (``backend/runtime/inspection.py``)."""
        def active_context():
            controller = self.active_controller()
            return controller.ctx if controller is not None else None
        return inspection.inspect(self.operator, active_context, self.brokers, self.ledger.lost_count, znodes)

    def metrics(self) -> dict:
        """Every live broker's controller metrics, and ``ActiveControllerCount`` summed over them
        (``backend/view/metrics.py``): a paused broker still reports what it believes."""
        per_broker = {b: broker.controller.metrics(under_replicated_partitions(b, broker.state.partitions.values()))
                      for b, broker in self.brokers.items() if broker.alive and broker.controller is not None}
        return cluster_metrics(per_broker)

    def znode_versions(self, timeout_s: float = 15.0) -> dict[str, tuple[int, int]]:
        """Every znode of the cluster with (czxid, mzxid): what changed between two looks."""
        return self.operator.znode_versions(timeout_s)

    def _all_brokers_known(self) -> bool:
        controller = self.active_controller()
        return controller is not None and set(self.spec.brokers) <= set(controller.ctx.live_brokers)

    def _topics_known(self, topics) -> bool:
        controller = self.active_controller()
        if controller is None:
            return False
        ctx = controller.ctx
        return all(t in ctx.all_topics and all(ctx.partition_leadership_info.get(tp) is not None
                                                or ctx.partition_states.get(tp) is not None
                                                for tp in ctx.partitions_for_topic(t)) for t in topics)

    def is_stable(self) -> bool:
        """No event queued or being processed by any running broker's controller thread, and
        no request waiting in any running broker's queue. (Paused brokers are frozen, not busy.)"""
        for broker in self.brokers.values():
            if broker.status != "running":
                continue
            if broker.controller is not None and not broker.controller.events.is_idle():
                return False
            if broker.queue_size() or broker.data.has_pending_changes():
                return False
        return True

    def wait_stable(self, timeout: float = 30.0, quiet_s: float = 0.15) -> bool:
        """Wait until stable and no record was emitted for ``quiet_s`` (the ZooKeeper watches
        that fire after a write need a moment to arrive)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            seq = self.bus.next_seq
            if self.is_stable():
                time.sleep(quiet_s)
                if self.is_stable() and self.bus.next_seq == seq:
                    return True
            else:
                time.sleep(0.02)
        return False

    def wait_until(self, predicate: Callable[[], Any], timeout: float, what: str) -> Any:
        return poll_until(predicate, timeout, what)
