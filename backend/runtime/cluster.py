"""A simulated Kafka cluster: its brokers, its chroot in ZooKeeper, its stream of records.

Each cluster lives under its own chroot (default ``/kclab/<cluster-id>``), so any number of
clusters — a class demo and thirty sandboxes — share one ZooKeeper without seeing each other,
and ``zkCli.sh`` on ``HOST:PORT/kclab/<cluster-id>`` shows the tree a Kafka 2.8 cluster would.
Besides its brokers the cluster keeps one *operator* session: Kafka's admin tools write
through it, and it watches the whole tree to report what ZooKeeper holds.
"""

from __future__ import annotations

import itertools
import random
import threading
import time
from typing import Any, Callable, Iterable

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError, NotEmptyError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.retry import KazooRetry

from backend.core.assignment import assign_replicas_to_brokers
from backend.core.config import KafkaConfig, config_string, topic_config_value
from backend.core.model import TopicPartition
from backend.core.records import Record, SessionHeader
from backend.runtime import heap
from backend.runtime.broker import SimulatedBroker
from backend.runtime.channel import ControllerChannelManager
from backend.zkserver.four_letter import server_version
from backend.runtime.lab_clock import LabClock
from backend.runtime.network import zk_servers
from backend.runtime.producer import AckLedger, Producer
from backend.runtime.record_bus import RecordBus
from backend.runtime.polling import poll_until
from backend.runtime.zk_observer import ZkObserver, describe_data
from backend.faultscript.cluster_spec import ClusterSpec, TopicSpec
from backend.zk import codec, paths
from backend.zk.admin import AdminZkClient
from backend.zk.handler import PollingThreadingHandler
from backend.zk.multi_read import supports_multi_read

BROKER_STATUS = {"running": "alive", "paused": "paused", "shutting_down": "shutting_down",
                 "crashed": "dead", "stopped": "dead"}


def ensemble_answers_multi_read(zk_hosts: str) -> bool:
    """Whether every server of ``zk_hosts`` (``HOST:PORT,…``, no chroot) is ZooKeeper 3.6+,
    asked with ``srvr``. A server that does not answer counts as too old: its clients then read
    znode by znode, which works everywhere."""
    return all(supports_multi_read(server_version(host, port)) for host, port in zk_servers(zk_hosts))


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
        self.event_ids = itertools.count(1)
        self.correlation_ids = itertools.count(1)
        self.channel = ControllerChannelManager(self)
        self.brokers: dict[int, SimulatedBroker] = {b: SimulatedBroker(self, b, self.config) for b in spec.brokers}
        self.lock = threading.RLock()
        self.producer = Producer(self)
        self.ledger = AckLedger(self)
        self.topic_configs: dict[str, dict[str, Any]] = {t: dict(s.config) for t, s in spec.topics.items()}
        self.closed = False
        self.election_winner: int | None = None
        """A lesson's stage direction: the broker that wins the next controller election."""
        self.clock = LabClock()
        """The lab's timers' clock (lag checks, the rebalance scheduler): a lesson holds it at a stop."""
        self._observe = observe
        self.zk_multi_read = False
        """Every ZooKeeper server answers ``multiRead`` (asked at start; ``backend/zk/multi_read.py``)."""
        self._tools: KazooClient | None = None
        self._observer: ZkObserver | None = None
        self.admin: AdminZkClient | None = None

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
    def start(self, timeout: float = 30.0) -> None:
        self.zk_multi_read = ensemble_answers_multi_read(self.zk_hosts)
        root = KazooClient(hosts=self.zk_hosts)
        root.start(timeout=15)
        try:
            root.ensure_path(self.chroot)
        finally:
            root.stop()
            root.close()
        # Reconnect for ever but never more than 2 s apart (kazoo's default backs off to an hour):
        # after a ZooKeeper outage the page's view of the tree must come back with it.
        self._tools = KazooClient(hosts=self.zk_hosts + self.chroot, handler=PollingThreadingHandler(),
                                  connection_retry=KazooRetry(max_tries=-1, delay=0.1, backoff=2, max_delay=2.0))
        self._tools.start(timeout=15)
        self.admin = AdminZkClient(self._tools)
        if self._observe:
            self._observer = ZkObserver(self._tools, self.emit, self.broker_of_session)
            self._observer.start()
        for index, broker_id in enumerate(self.spec.brokers):
            self.brokers[broker_id].start()
            if index == 0:  # the first broker listed wins the first election
                self.wait_until(lambda: self.controller_id() == broker_id, timeout, "the first broker to be elected")
        self.wait_until(self._all_brokers_known, timeout, "the controller to learn about every broker")
        for topic, spec in self.spec.topics.items():
            self.create_topic(topic, spec)
        if self.spec.topics:
            self.wait_until(lambda: self._topics_known(self.spec.topics), timeout, "the controller to create the topics")
        self.wait_stable(timeout)
        heap.settle()

    def create_topic(self, topic: str, spec: TopicSpec) -> dict[int, list[int]]:
        config = {k: config_string(v) for k, v in spec.config.items()}
        if spec.assignment is not None:
            assignment = {int(p): list(r) for p, r in spec.assignment.items()}
        else:  # as Kafka's admin tools do: over the brokers registered in /brokers/ids
            assignment = assign_replicas_to_brokers(spec.partitions, spec.replication_factor,
                                                    self.admin.list_brokers(), rng=random.Random(topic))
        self.admin.create_topic(topic, assignment, config)
        self.topic_configs[topic] = dict(spec.config)
        return assignment

    def topic_setting(self, topic: str, name: str) -> Any:
        """A topic-level setting as the brokers see it: the topic's override, else the broker's."""
        return topic_config_value(self.config, self.topic_configs.get(topic), name)

    def close(self, keep: bool = False) -> None:
        """Stop everything. Controllers go quiet first, so the brokers' departures do not set off
        a last round of elections while the cluster is being taken down."""
        self.closed = True
        if self._observer is not None:
            self._observer.close()
        for broker in self.brokers.values():
            broker.silence()
        for broker in self.brokers.values():
            if broker.alive:
                broker.stop()
        try:
            if self._tools is not None and not keep:
                self._delete_chroot()  # may fail with ZooKeeper away: the app's sweep removes it later
        finally:
            if self._tools is not None:
                self._tools.stop()
                self._tools.close()
            heap.release()

    def _delete_chroot(self) -> None:
        root = KazooClient(hosts=self.zk_hosts)
        root.start(timeout=15)
        try:
            for _ in range(5):
                try:
                    root.delete(self.chroot, recursive=True)
                    break
                except NoNodeError:
                    break
                except NotEmptyError:  # an ephemeral appeared while deleting; try again
                    continue
        finally:
            root.stop()
            root.close()

    def set_broker_config(self, name: str, value: Any) -> None:
        """A dynamic broker-wide setting: every broker (and every later restart) uses it.

        Written to ``/config/brokers/<default>`` first, as ``kafka-configs.sh --entity-default``
        would, so ``zkCli.sh`` and the page both see it (Kafka stores every value as a string)."""
        self.admin.set_broker_default_config({name: config_string(value)})
        self.config = self.config.with_overrides({name: value})
        for broker in self.brokers.values():
            broker.config = self.config

    def delete_controller_znode(self) -> None:
        """What ``zkCli.sh deleteall /controller`` does: no fencing, no questions."""
        try:
            self._tools.delete(paths.CONTROLLER)
        except NoNodeError:
            pass

    def topic_partition_counts(self) -> dict[str, int]:
        """Each topic in ``/brokers/topics`` with its number of partitions (for the size bounds)."""
        counts = {}
        for topic in self._children(paths.BROKER_TOPICS):
            try:
                counts[topic] = len(self.admin.get_topic_assignment(topic))
            except NoNodeError:
                continue
        return counts

    def topic_exists(self, topic: str) -> bool:
        return self._tools.exists(paths.topic_path(topic)) is not None

    # -- looking at it ------------------------------------------------------------------------------
    def broker_of_session(self, session_hex: str) -> int | None:
        for broker in self.brokers.values():
            if broker.session_id == session_hex:
                return broker.id
        return None

    def controller_id(self) -> int | None:
        try:
            data, _ = self._tools.get(paths.CONTROLLER)
        except NoNodeError:
            return None
        return codec.decode_controller(data)

    def active_controller(self):
        cid = self.controller_id()
        broker = self.brokers.get(cid) if cid is not None else None
        if broker is None or broker.controller is None or not broker.controller.is_active:
            return None
        return broker.controller

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

    def view(self, znodes: Iterable[str] = ()) -> dict[str, Any]:
        """The cluster as ``expect`` steps see it: ZooKeeper's data, plus the active controller's
        partition and replica states (which live only in its memory, as in Kafka)."""
        controller_epoch = None
        try:
            controller_epoch = int(self._tools.get(paths.CONTROLLER_EPOCH)[0])
        except NoNodeError:
            pass
        controller = self.active_controller()
        ctx = controller.ctx if controller is not None else None
        partitions = {}
        for topic in self._children(paths.BROKER_TOPICS):
            for p in self._children(paths.topic_partitions_path(topic)):
                try:
                    data, stat = self._tools.get(paths.partition_state_path(topic, int(p)))
                except NoNodeError:
                    continue
                state = codec.decode_partition_state(data, stat.version)
                tp_key = f"{topic}-{p}"
                entry = {"leader": state.leader, "isr": list(state.isr),
                         "leader_epoch": state.leader_and_isr.leader_epoch, "controller_epoch": state.controller_epoch,
                         "zk_version": stat.version}
                tp = TopicPartition(topic, int(p))
                if ctx is not None:
                    entry["state"] = ctx.partition_state(tp).name
                    entry["replicas"] = list(ctx.partition_replica_assignment(tp))
                leader = self.brokers.get(state.leader)
                log = leader.data.logs.get(tp) if leader is not None and leader.alive else None
                if log is not None:
                    entry.update(high_watermark=log.high_watermark, log_end_offset=log.log_end_offset)
                entry["lost"] = self.ledger.lost_count(tp)
                partitions[tp_key] = entry
        replicas = {}
        if ctx is not None:
            replicas = {f"{r.topic_partition}/{r.replica}": s.name for r, s in ctx.replica_states.items()}
        found = {}
        for path in znodes:
            try:
                found[path] = self._tools.get(path)[0] or b""
            except NoNodeError:
                found[path] = None
        return {
            "controller": self.controller_id(), "controller_epoch": controller_epoch,
            "brokers": {b: BROKER_STATUS[broker.status] for b, broker in self.brokers.items()
                        if broker.status in BROKER_STATUS},
            "partitions": partitions, "replicas": replicas, "znodes": found,
        }

    def znode_versions(self, timeout_s: float = 15.0) -> dict[str, tuple[int, int]]:
        """Every znode of the cluster with (czxid, mzxid): what changed between two looks.

        Bounded in time: without a ZooKeeper quorum kazoo would wait for one forever, and a
        lesson in front of a class must fail with a reason rather than hang."""
        out, stack = {}, ["/"]
        deadline = time.monotonic() + timeout_s
        while stack:
            path = stack.pop()
            try:
                left = max(0.1, deadline - time.monotonic())
                stat = self._tools.exists_async(path).get(timeout=left)
                children = self._tools.get_children_async(path).get(timeout=left)
            except NoNodeError:
                continue
            except KazooTimeoutError:
                raise ConnectionError(f"ZooKeeper did not answer within {timeout_s:.0f} s (no quorum?) while "
                                      f"reading the znode tree at {path}") from None
            if stat is None:
                continue
            if path != "/":
                out[path] = (stat.czxid, stat.mzxid)
            stack.extend(f"{path.rstrip('/')}/{c}" for c in children)
        return out

    def _children(self, path: str) -> list[str]:
        try:
            return sorted(self._tools.get_children(path))
        except NoNodeError:
            return []
