"""A simulated Kafka broker: its own ZooKeeper session, request queue, controller module and
replicas — everything a real broker does that the controller lessons need.

The broker's life is what the faults act on:

* ``start`` — connect to ZooKeeper (through the broker's own pausable cable), create the
  top-level paths, register ``/brokers/ids/<id>`` (ephemeral; broker epoch = its czxid), start
  the controller module, which immediately competes for ``/controller``.
* ``crash`` — the session is closed and everything stops: the ephemeral znode vanishes at once.
* ``shutdown`` — controlled shutdown (§8): ask the controller to move leaders first, then stop.
* ``expire_session`` — ZooKeeper expires the session (the broker learns it on reconnect).
* ``pause``/``resume`` — the process freezes: no heart-beats, no work. After the session timeout
  ZooKeeper deletes its znodes; when it wakes it still believes what it believed.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import replace
from typing import TYPE_CHECKING

from kazoo.client import KazooClient, KazooState
from kazoo.retry import KazooRetry

from backend.core.controller import events as ev
from backend.core.config import KafkaConfig
from backend.core.records import Record
from backend.core.subjects import broker_subject
from backend.core.broker.replica_manager import (
    BrokerState, handle_leader_and_isr, handle_stop_replica, handle_update_metadata,
)
from backend.runtime.controller import KafkaController
from backend.runtime.network import BrokerNetwork
from backend.runtime.data_plane import DataPlane
from backend.zk.client import KafkaZkClient
from backend.zk.handler import PollingThreadingHandler

if TYPE_CHECKING:
    from backend.runtime.cluster import Cluster

HANDLERS = {"LeaderAndIsr": handle_leader_and_isr, "UpdateMetadata": handle_update_metadata,
            "StopReplica": handle_stop_replica}
_STOP = object()


class SimulatedBroker:
    def __init__(self, cluster: Cluster, broker_id: int, config: KafkaConfig) -> None:
        self.cluster = cluster
        self.id = broker_id
        self.config = config
        self.status = "stopped"  # running, paused, shutting_down, crashed, stopped
        self.gate = threading.Event()
        self.lock = threading.RLock()
        self.state = BrokerState(broker_id)
        self.network: BrokerNetwork | None = None
        self.zk: KazooClient | None = None
        self.kafka_zk: KafkaZkClient | None = None
        self.controller: KafkaController | None = None
        self.data = DataPlane(self)
        self._queues: dict[str, queue.Queue] = {}
        self._handlers: list[threading.Thread] = []
        self.pause_during: str | None = None
        self._session_lost = False
        self._disconnected = False  # a zk_disconnected record was emitted; its zk_reconnected is due
        self.control_plane_listener: str | None = None

    @property
    def alive(self) -> bool:
        return self.status in ("running", "paused", "shutting_down")

    # -- life ---------------------------------------------------------------------------------
    def start(self) -> None:
        self.state = BrokerState(self.id)
        self.network = BrokerNetwork(self.cluster.zk_hosts)
        timeout_s = self.config["zookeeper.session.timeout.ms"] / 1000
        # Retry connecting for ever, and soon: a paused broker must notice at once when it wakes.
        retry = KazooRetry(max_tries=-1, delay=0.05, backoff=1.5, max_delay=0.5, max_jitter=0.1)
        self.zk = KazooClient(hosts=self.network.hosts + self.cluster.chroot, timeout=timeout_s,
                              connection_retry=retry, handler=PollingThreadingHandler())
        self.zk.add_listener(self._on_session_state)
        self.zk.start(timeout=15)
        self.kafka_zk = KafkaZkClient(self.zk, multi_read=self.cluster.zk_multi_read)
        self.kafka_zk.create_top_level_paths()
        self.status = "running"
        self.gate.set()
        # KIP-291 (Kafka 2.2): with control.plane.listener.name set, the broker has a listener, a
        # queue and a thread for controller requests. A listener is static: read at start.
        self.control_plane_listener = self.config["control.plane.listener.name"]
        names = ("data", "control") if self.control_plane_listener else ("data",)
        self._queues = {name: queue.Queue() for name in names}
        self._handlers = [threading.Thread(target=self._handle_requests, args=(name,), daemon=True,
                                           name=f"request-handler-{name}-{self.id}") for name in names]
        for handler in self._handlers:
            handler.start()
        self.data.start()
        self._emit("started", f"Broker {self.id} started and connected to ZooKeeper "
                              f"(session timeout {self.config['zookeeper.session.timeout.ms']} ms).")
        self.register()
        self.controller = KafkaController(self)
        self.controller.startup()

    def register(self) -> None:
        """Create ``/brokers/ids/<id>`` again after a new session; the broker epoch changes."""
        czxid = self.kafka_zk.register_broker(self.id, port=9092 + self.id)
        with self.lock:
            self.state = replace(self.state, broker_epoch=czxid)
        self._emit("registered", f"Broker {self.id} registered /brokers/ids/{self.id} (ephemeral): its broker "
                                 f"epoch is the znode's czxid {czxid}.",
                   detail={"broker_epoch": czxid, "session_id": self.session_id})

    @property
    def session_id(self) -> str | None:
        if self.zk is None or self.zk.client_id is None:
            return None
        return hex(self.zk.client_id[0])

    def crash(self) -> None:
        """Like ``kill -9`` whose TCP connection the OS then closes: the session ends at once."""
        self.status = "crashed"
        self._emit("crashed", f"Broker {self.id} crashed: its ZooKeeper session is closed, so "
                              f"/brokers/ids/{self.id} disappears now.")
        self._stop_everything()

    def stop(self) -> None:
        self.status = "stopped"
        self._stop_everything()

    def silence(self) -> None:
        """Stop reacting (controller thread first), before the cluster is taken down."""
        if self.controller is not None:
            self.controller.shutdown()

    def _stop_everything(self) -> None:
        self.pause_during = None
        self.gate.set()  # let frozen threads run into their exits
        if self.zk is not None:
            try:
                self.zk.stop()
                self.zk.close()
            except Exception:  # noqa: BLE001 - the session may already be gone
                pass
        self.data.stop()
        for q in self._queues.values():
            q.put(_STOP)
        if self.controller is not None:
            self.controller.shutdown()
        if self.network is not None:
            self.network.close()
        for handler in self._handlers:
            handler.join(5)

    def shutdown(self) -> dict:
        """Controlled shutdown: ask the controller (up to ``controlled.shutdown.max.retries``
        times) to move this broker's leaders, then stop. Returns what the controller answered."""
        answer: dict = {"error": "controlled.shutdown.enable is false"}
        self.status = "shutting_down"
        self._emit("shutting_down", f"Broker {self.id} is stopping and asks the controller to move its leaders first.")
        if self.config["controlled.shutdown.enable"]:
            for attempt in range(1, self.config["controlled.shutdown.max.retries"] + 1):
                answer = self._ask_controller_to_shut_down()
                if not answer.get("error") and not answer.get("remaining"):
                    break
                self._emit("controlled_shutdown_retry", f"Controlled shutdown attempt {attempt} of broker {self.id} "
                                                        f"did not finish: {answer}.", outcome="error")
                time.sleep(self.config["controlled.shutdown.retry.backoff.ms"] / 1000)
        self.status = "stopped"
        self._emit("stopped", f"Broker {self.id} stopped; its session is closed.")
        self._stop_everything()
        return answer

    def _ask_controller_to_shut_down(self) -> dict:
        controller_id = self.kafka_zk.get_controller_id()
        target = self.cluster.brokers.get(controller_id) if controller_id is not None else None
        if target is None or target.controller is None or not target.alive:
            return {"error": "NOT_CONTROLLER"}
        done, answer = threading.Event(), {}

        def callback(**result):
            answer.update(result)
            done.set()

        target.controller.events.put(ev.ControlledShutdown(self.id, self.state.broker_epoch, callback))
        if not done.wait(self.config["request.timeout.ms"] / 1000):
            return {"error": "REQUEST_TIMED_OUT"}
        return answer

    def expire_session(self) -> None:
        """ZooKeeper expires this broker's session now: another client attaches to the session
        and closes it (kazoo's own test helper only fakes this on the client side)."""
        client_id = self.zk.client_id
        hijacker = KazooClient(hosts=self.cluster.zk_hosts + self.cluster.chroot, client_id=client_id)
        hijacker.start(timeout=10)
        hijacker.stop()
        hijacker.close()
        self._emit("session_expired", f"ZooKeeper expired the session of broker {self.id}: its ephemeral znodes "
                                      f"are gone; the broker will notice when it hears from ZooKeeper.")

    def pause(self, during: str | None = None) -> None:
        if during is not None:
            self.pause_during = during
            self._emit("pause_armed", f"Broker {self.id} will freeze in the middle of its next {during}, right after "
                                      f"its first ZooKeeper write — as a long GC pause would.",
                       detail={"during": during})
            return
        self._freeze(f"Broker {self.id} froze (as in a long GC pause): no heart-beats, no work. ZooKeeper will expire "
                     f"its session after {self.config['zookeeper.session.timeout.ms']} ms.")

    def _freeze(self, note: str) -> None:
        self.network.pause()
        self.gate.clear()
        self.status = "paused"
        self._emit("paused", note)

    def pause_armed_for(self, queued) -> bool:
        return bool(self.pause_during) and queued is not None and queued.event.name == self.pause_during

    def after_controller_write(self, queued) -> None:
        """Called by the controller thread after its ZooKeeper writes: an armed pause strikes."""
        if self.pause_armed_for(queued):
            self.pause_during = None
            self._freeze(f"Broker {self.id} froze in the middle of {queued.event.name}, after its first ZooKeeper "
                         f"write: it still believes it is the controller.")
            self.gate.wait()

    def resume(self, timeout: float = 20.0) -> None:
        """Wake up: reconnect to ZooKeeper first (learning whether the session survived), then
        let the frozen threads carry on with what they were doing."""
        self.network.resume()
        deadline = time.monotonic() + timeout
        while self.zk.state != KazooState.CONNECTED and time.monotonic() < deadline:
            time.sleep(0.02)
        self.status = "running"
        self._emit("resumed", f"Broker {self.id} woke up and carries on where it stopped, with what it believed then.")
        self.gate.set()

    # -- ZooKeeper session events (kazoo's thread: only put events) ---------------------------------
    def _on_session_state(self, state) -> None:
        if self.status not in ("running", "paused", "shutting_down") or self.controller is None:
            return
        self._note_connection(state)
        if state == KazooState.LOST:
            self._session_lost = True
            self.controller.forget_lost_watches()
            self._emit("session_lost", f"Broker {self.id} learned that its ZooKeeper session expired.")
            self.controller.events.clear_and_put(ev.Expire())
        elif state == KazooState.CONNECTED and self._session_lost:
            self._session_lost = False
            self.controller.events.put(ev.RegisterBrokerAndReelect())
        elif state == KazooState.CONNECTED:
            self.controller.restore_watches()

    def _note_connection(self, state) -> None:
        """A running broker's connection to ZooKeeper dropping and coming back is a record each
        (a frozen one notices nothing): an ensemble losing one server shows as exactly that."""
        timeout = self.config["zookeeper.session.timeout.ms"]
        if state == KazooState.SUSPENDED and self.status == "running" and not self._disconnected:
            self._disconnected = True
            self._emit("zk_disconnected", f"Broker {self.id} lost its connection to ZooKeeper. Its session (and "
                                          f"/brokers/ids/{self.id}) lives on for up to {timeout} ms while it "
                                          f"reconnects, to another server of the ensemble if there is one.")
        elif state == KazooState.CONNECTED and self._disconnected:
            self._disconnected = False
            self._emit("zk_reconnected", f"Broker {self.id} reached ZooKeeper again within its session timeout: "
                                         f"its session and /brokers/ids/{self.id} survived.")
        elif state == KazooState.LOST:
            self._disconnected = False

    # -- control requests ---------------------------------------------------------------------------
    def enqueue_control_request(self, request, correlation_id: int, sent_seq: int | None, callback,
                                control_plane: bool = False) -> None:
        """``control_plane``: the *sending* controller's broker has control.plane.listener.name set,
        so it connects to this broker's control listener (Kafka 2.8 ``ControllerChannelManager.
        addNewBroker``); otherwise its requests arrive on the data plane, whatever this broker has."""
        queue_name = "control" if control_plane and "control" in self._queues else "data"
        self._queues[queue_name].put(("control", time.monotonic(), (request, correlation_id, sent_seq, callback)))

    def enqueue_produce(self, tp, payloads: list[str], acks: str, respond) -> None:
        self._queues["data"].put(("produce", time.monotonic(), (tp, payloads, acks, respond)))

    def _handle_requests(self, queue_name: str) -> None:
        """One request at a time from one queue, as Kafka's request handler threads do."""
        requests = self._queues[queue_name]
        while True:
            item = requests.get()
            if item is _STOP:
                return
            self.gate.wait()
            if not self.alive:
                continue
            what, queued_at, payload = item
            if what == "produce":
                cost = self.config["kclab.request.handling.ms"]
                if cost:
                    time.sleep(cost / 1000)  # the appended bytes' disk write, in the lab
                self.data.handle_produce(*payload)
            else:
                self._handle_control_request(*payload, queue_name=queue_name,
                                             waited_ms=(time.monotonic() - queued_at) * 1000)

    def _handle_control_request(self, request, correlation_id, sent_seq, callback, queue_name, waited_ms) -> None:
        with self.lock:
            self.state, response, record = HANDLERS[request.name](self.state, request, correlation_id)
            partitions = dict(self.state.partitions)
        detail = {**(record.detail or {}), "queue": queue_name, "queue_wait_ms": round(waited_ms, 1)}
        if waited_ms >= 50:
            record = replace(record, note=f"{record.note} It waited {waited_ms:.0f} ms in the {queue_name} request "
                                          f"queue.")
        self.cluster.emit([replace(record, detail=detail)], cause=f"{request.name}#{correlation_id}",
                          cause_seq=sent_seq)
        if request.name in ("LeaderAndIsr", "StopReplica") and response.error == "NONE":
            deleted = {p.topic_partition for p in getattr(request, "partition_states", ())
                       if getattr(p, "delete_partition", False)} if request.name == "StopReplica" else set()
            self.data.on_partitions_changed(partitions, deleted)
        callback(response)

    def queue_size(self) -> int:
        return sum(q.qsize() for q in self._queues.values())

    def _emit(self, to_state: str, note: str, outcome: str | None = None, detail: dict | None = None) -> None:
        self.cluster.emit([Record(kind="broker", subject=broker_subject(self.id), to_state=to_state,
                                  broker_id=self.id, outcome=outcome, note=note, detail=detail)])
