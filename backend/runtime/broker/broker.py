"""A simulated Kafka broker: one process of the lab — its ZooKeeper session, request queues,
controller module and replicas, everything a real broker does that the controller lessons need.

The broker owns its parts, as Kafka's ``KafkaServer`` does: the ZooKeeper session
(``backend.zk.session``) and the ``KafkaZkClient`` on it, the ``KafkaController``, the request
handler and the data plane. Each part gets what it may call, never the broker or the cluster.
The broker's life is what the faults act on:

* ``start`` — connect to ZooKeeper (through the broker's own pausable cable), create the
  top-level paths, register ``/brokers/ids/<id>`` (ephemeral; broker epoch = its czxid), start
  the controller module, which immediately competes for ``/controller``. While a crashed
  process's session still holds ``/brokers/ids/<id>`` the registration fails and the broker does
  not start (``NodeExistsException``, as Kafka's ``KafkaServer`` exits).
* ``crash`` — ``kill -9``: everything stops and nothing is said to ZooKeeper, so the session (with
  ``/brokers/ids/<id>``, and ``/controller`` if it held it) lives on until ZooKeeper expires it
  after ``zookeeper.session.timeout.ms``.
* ``exit`` — the process exits cleanly (no controlled shutdown): it closes its session, so its
  ephemeral znodes vanish at once.
* ``shutdown`` — controlled shutdown (§8): ask the controller to move leaders first, then stop.
* ``expire_session`` — ZooKeeper expires the session (the broker learns it on reconnect).
* ``pause``/``resume`` — the process freezes: no heart-beats, no work. After the session timeout
  ZooKeeper deletes its znodes; when it wakes it still believes what it believed.
"""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from typing import Mapping

from backend.core import ibp
from backend.core.broker.replica_manager import (
    BrokerState, HostedPartition, handle_leader_and_isr, handle_stop_replica, handle_update_metadata,
)
from backend.core.config import KafkaConfig
from backend.core.errors import NodeExistsException
from backend.core.model import TopicPartition
from backend.core.records import Record
from backend.core.subjects import broker_subject
from backend.runtime.broker.connection_notes import ConnectionNotes, unasked_cause
from backend.runtime.broker.controlled_shutdown import controlled_shutdown
from backend.runtime.broker.data_plane import DataPlane
from backend.runtime.broker.request_handler import RequestHandler
from backend.runtime.controller.controller import EXPIRE_AWAIT_S, KafkaController
from backend.runtime.peers import ClusterServices
from backend.runtime.stage import PausePoint
from backend.zk.cable import Cable
from backend.zk.client import KafkaZkClient
from backend.zk.session import ZkSession
from backend.zk.watches import SessionState

HANDLERS = {"LeaderAndIsr": handle_leader_and_isr, "UpdateMetadata": handle_update_metadata,
            "StopReplica": handle_stop_replica}


class SimulatedBroker:
    def __init__(self, broker_id: int, config: KafkaConfig, services: ClusterServices) -> None:
        self.id = broker_id
        self.config = config
        self.services = services
        self.status = "stopped"  # running, paused, shutting_down, crashed, stopped
        self.gate = threading.Event()
        self.lock = threading.RLock()
        self.state = BrokerState(broker_id)
        self.inter_broker_protocol_version: str = config["inter.broker.protocol.version"]
        self.cable: Cable | None = None
        self.session: ZkSession | None = None
        self.kafka_zk: KafkaZkClient | None = None
        self.controller: KafkaController | None = None
        self.pause_point = PausePoint(self._freeze_during)
        self.requests = RequestHandler(broker_id, self.gate, lambda: self.alive, self._handle_control_request,
                                       self._handle_produce)
        self.data = DataPlane(broker_id, self, clock=services.clock, emit=services.emit, ledger=services.ledger,
                              topic_setting=services.topic_setting, peers=services.peers,
                              correlation_ids=services.correlation_ids)
        self._session_lost = False
        self._expiry_asked = False
        """An ``expire_session`` fault ended the session: its loss was asked for."""
        self.connection_notes = ConnectionNotes(broker_id, self._emit)
        self.abandoned_session: str | None = None
        """The session a crash left behind, until a new process registers: ZooKeeper expires it."""
        self.control_plane_listener: str | None = None

    @property
    def alive(self) -> bool:
        return self.status in ("running", "paused", "shutting_down")

    def is_running(self) -> bool:
        return self.status == "running"

    # -- life ---------------------------------------------------------------------------------
    def start(self) -> None:
        """Start the process, in Kafka's order: request handling first, then the registration
        (the controller may send requests the moment it sees it), then the controller module.
        Raises :class:`NodeExistsException`, the process stopped again, when the registration is
        still held by a crashed process's session."""
        previous = self.status
        self.state = BrokerState(self.id)
        self.cable = Cable()
        self.session = ZkSession(self.services.zk_hosts + self.services.chroot,
                                 self.config["zookeeper.session.timeout.ms"], self._on_session_state, cable=self.cable)
        try:
            self.kafka_zk = self.session.start(multi_read=self.services.multi_read())
            self.kafka_zk.create_top_level_paths()
        except Exception as exc:
            self._fail_start(exc, previous)
            raise
        self.controller = None
        self.status = "running"
        self.gate.set()
        # KIP-291 (Kafka 2.2): with control.plane.listener.name set, the broker has a listener, a
        # queue and a thread for controller requests. A listener is static: read at start.
        self.control_plane_listener = self.config["control.plane.listener.name"]
        self.inter_broker_protocol_version = self.config["inter.broker.protocol.version"]  # static too
        self.requests.start(control_plane=bool(self.control_plane_listener))
        self.data.start()
        try:
            self.register()
        except Exception as exc:  # NodeExistsException included
            self._fail_start(exc, previous)
            raise
        timeout = self.config["zookeeper.session.timeout.ms"]
        self._emit("started", f"Broker {self.id} started and connected to ZooKeeper (session timeout {timeout} ms).",
                   detail={"session_timeout_ms": timeout})
        self.controller = KafkaController(
            self.id, config=lambda: self.config, zk=self.kafka_zk, emit=self.services.emit,
            event_ids=self.services.event_ids, correlation_ids=self.services.correlation_ids,
            peers=self.services.peers, clock=self.services.clock, stage=self.services.stage,
            pause_point=self.pause_point, gate=self.gate, control_plane=bool(self.control_plane_listener),
            register_broker=self.register)
        self.controller.startup()

    def _fail_start(self, exc: Exception, previous: str) -> None:
        """Kafka 2.8's ``KafkaServer.startup`` on an exception logs "Fatal error during
        KafkaServer startup" and shuts down, closing its own (new) session. Either
        ``checkedEphemeralCreate`` threw — ``/brokers/ids/<id>`` still held by the crashed
        process's session, whose countdown goes on — or ZooKeeper did not take the new session
        or answer its first requests within their time-out."""
        self.status = previous
        self._stop_everything()
        detail = {"error": type(exc).__name__, "message": str(exc)}
        if isinstance(exc, NodeExistsException):
            note = (f"/brokers/ids/{self.id} still belongs to the session of its crashed process, which ZooKeeper has "
                    f"not expired yet. Kafka's broker exits here (NodeExistsException); start it again once the "
                    f"session has expired.")
            detail["session_id"] = self.abandoned_session
        else:
            note = (f"ZooKeeper did not answer its new session in time ({type(exc).__name__}). It stays down; start "
                    f"it again when ZooKeeper answers.")
        self._emit("start_failed", f"Broker {self.id} could not start: {note}", outcome="error", detail=detail)

    def register(self) -> None:
        """Create ``/brokers/ids/<id>`` again after a new session; the broker epoch changes."""
        czxid = self.kafka_zk.register_broker(
            self.id, port=9092 + self.id, version=ibp.broker_registration_version(self.inter_broker_protocol_version))
        with self.lock:
            self.state = replace(self.state, broker_epoch=czxid)
        self.abandoned_session = None
        self._emit("registered", f"Broker {self.id} registered /brokers/ids/{self.id} (ephemeral): its broker "
                                 f"epoch is the znode's czxid {czxid}.",
                   detail={"broker_epoch": czxid, "session_id": self.session_id})

    @property
    def session_id(self) -> str | None:
        """The session ZooKeeper holds for this broker: after a crash, the one left to expire."""
        if self.abandoned_session is not None:
            return self.abandoned_session
        return None if self.session is None else self.session.session_id

    def crash(self) -> None:
        """``kill -9``: every thread stops, and no closeSession reaches ZooKeeper — the cable is
        cut before kazoo stops. ZooKeeper treats the dropped connection as it would a lost one
        (the client may reconnect within the timeout), so the session and its ephemeral znodes
        live on until it expires, ``zookeeper.session.timeout.ms`` after ZooKeeper last heard
        from the process. Who notices when: ``Cluster.crash_broker``."""
        timeout = self.config["zookeeper.session.timeout.ms"]
        was_paused = self.status == "paused"
        self.abandoned_session = self.session_id
        self.status = "crashed"
        since = "since it froze, and" if was_paused else "from now:"
        self._emit("crashed", (
            f"Broker {self.id} crashed (kill -9): it said nothing to ZooKeeper, so its session and /brokers/ids/{self.id} "
            f"live on until ZooKeeper gives up on it, {timeout} ms of silence {since} until then nobody can tell it "
            f"is dead."), detail={"session_id": self.abandoned_session, "session_timeout_ms": timeout,
                                   "session_expires_ms": None if was_paused else int(time.time() * 1000) + timeout})
        self._stop_everything(close_session=False)

    def exit(self) -> None:
        """The process exits cleanly but without controlled shutdown (SIGTERM with
        ``controlled.shutdown.enable=false``, say): it closes its session, so ZooKeeper deletes its
        ephemeral znodes at once and the controller hears of it at once."""
        self.status = "stopped"
        self._emit("stopped", f"Broker {self.id} exited cleanly: it closed its ZooKeeper session, so "
                              f"/brokers/ids/{self.id} disappears now. Its leaders were not moved first (no "
                              f"controlled shutdown).")
        self._stop_everything()

    def session_expiry_seen(self, session: str) -> None:
        """The crashed process's registration is gone: ZooKeeper expired its session. Called by
        whoever watched the znode (``Cluster.crash_broker``), which is all anyone can see of it."""
        if self.status != "crashed" or self.abandoned_session != session:
            return
        self._emit("session_expired", (
            f"ZooKeeper expired crashed broker {self.id}'s session after {self.config['zookeeper.session.timeout.ms']} "
            f"ms of silence and deleted /brokers/ids/{self.id}. (The lab saw it through its own watch on that znode; "
            f"the controller learns it from its watch on /brokers/ids.)"),
            detail={"session_id": session, "observed_by": f"watch on /brokers/ids/{self.id}"})

    def stop(self) -> None:
        self.status = "stopped"
        self._stop_everything()

    def silence(self) -> None:
        """Stop reacting (controller thread first), before the cluster is taken down."""
        if self.controller is not None:
            self.controller.shutdown()

    def _stop_everything(self, close_session: bool = True) -> None:
        """The process ends. With ``close_session`` its session is closed (the one place a clean
        exit tells ZooKeeper); without, the cable is cut first, so kazoo's closeSession goes
        nowhere and the session is left to expire."""
        self.pause_point.disarm()
        self.gate.set()  # let frozen threads run into their exits
        if not close_session and self.cable is not None:
            self.cable.close()
        if self.session is not None:
            self.session.close()
        self.data.stop()
        self.requests.close()
        if self.controller is not None:
            self.controller.shutdown()
        if self.cable is not None:
            self.cable.close()
        self.requests.join(5)

    def shutdown(self) -> dict:
        """Controlled shutdown: ask the controller to move this broker's leaders, then stop.
        Returns what the controller answered."""
        self.status = "shutting_down"
        self._emit("shutting_down", f"Broker {self.id} is stopping and asks the controller to move its leaders first.")
        answer = controlled_shutdown(
            self.id, self.state.broker_epoch, self.config, self.kafka_zk, self.services,
            note_retry=lambda attempt, answer: self._emit(
                "controlled_shutdown_retry", f"Controlled shutdown attempt {attempt} of broker {self.id} did not "
                                             f"finish: {answer}.", outcome="error"))
        self.status = "stopped"
        self._emit("stopped", f"Broker {self.id} stopped; its session is closed.")
        self._stop_everything()
        return answer

    def expire_session(self) -> None:
        """ZooKeeper expires this broker's session now (see ``ZkSession.expire``)."""
        self._expiry_asked = True  # its session_lost then blames nobody
        self.session.expire(self.services.zk_hosts + self.services.chroot)
        self._emit("session_expired", f"ZooKeeper expired the session of broker {self.id}: its ephemeral znodes "
                                      f"are gone; the broker will notice when it hears from ZooKeeper.")

    def pause(self, during: str | None = None) -> None:
        if during is not None:
            self.pause_point.arm(during)
            self._emit("pause_armed", f"Broker {self.id} will freeze in the middle of its next {during}, right after "
                                      f"its first ZooKeeper write — as a long GC pause would.",
                       detail={"during": during})
            return
        self._freeze(f"Broker {self.id} froze (as in a long GC pause): no heart-beats, no work. ZooKeeper will expire "
                     f"its session after {self.config['zookeeper.session.timeout.ms']} ms.")

    def _freeze(self, note: str) -> None:
        self.cable.pause()
        self.gate.clear()
        self.status = "paused"
        self._emit("paused", note)

    def _freeze_during(self, event_name: str) -> None:
        """The armed pause strikes on the controller thread, which then waits here to be woken."""
        self._freeze(f"Broker {self.id} froze in the middle of {event_name}, after its first ZooKeeper write: it "
                     f"still believes it is the controller.")
        self.gate.wait()

    def resume(self, timeout: float = 20.0) -> None:
        """Wake up: reconnect to ZooKeeper first, learning whether the session survived, then
        let the frozen threads carry on with what they were doing. When it did not, the new
        session waits until the controller thread takes ``Expire`` (Kafka's awaitProcessing),
        which it can only do once it runs again: so the threads go on as soon as the session
        is known lost, and finish their work against the expired session."""
        self.cable.resume()
        self.session.wait_connected(timeout, or_until=lambda: self._session_lost)
        self.status = "running"
        self._emit("resumed", f"Broker {self.id} woke up and carries on where it stopped, with what it believed then.")
        self.gate.set()
        self.data.wake()  # its replica thread's round waits for this (it has no thread of its own to block)

    # -- ZooKeeper session events (the sessions' loop: only put events; LOST: a thread of its own)
    def _on_session_state(self, state: SessionState) -> None:
        if self.status not in ("running", "paused", "shutting_down") or self.controller is None:
            return
        drop = self.session.last_drop
        dropped = state is not SessionState.CONNECTED
        late_s = drop.late_s if dropped else 0.0
        self.connection_notes.note(state, running=self.status == "running",
                                   timeout_ms=self.config["zookeeper.session.timeout.ms"], late_s=late_s,
                                   silent=dropped and drop.silent)
        was_lost = self._session_lost
        if state is SessionState.LOST:
            unasked = self.status == "running" and not self._expiry_asked
            why, detail = unasked_cause(late_s, expired=True) if unasked else ("", None)
            self._emit("session_lost", f"Broker {self.id} learned that its ZooKeeper session expired.{why}",
                       detail=detail)
            expire = self.controller.on_session_lost()
            self._session_lost = True  # only now may a resume() waiting for it go on: after Expire is queued
            expire.await_processing(EXPIRE_AWAIT_S)
            return
        if state is SessionState.CONNECTED:
            self._session_lost = False
            self._expiry_asked = False  # a new session, or the old one back
        self.controller.on_session_state(state, session_was_lost=was_lost)

    # -- requests (a request handler's thread) --------------------------------------------------------
    def _handle_control_request(self, request, correlation_id, sent_seq, callback, queue_name, waited_ms) -> None:
        with self.lock:
            self.state, response, record = HANDLERS[request.name](self.state, request, correlation_id)
            partitions = dict(self.state.partitions)
        detail = {**(record.detail or {}), "queue": queue_name, "queue_wait_ms": round(waited_ms, 1)}
        if waited_ms >= 50:
            record = record.evolve(note=f"{record.note} It waited {waited_ms:.0f} ms in the {queue_name} request "
                                        f"queue.")
        self.services.emit([record.evolve(detail=detail)], cause=f"{request.name}#{correlation_id}",
                           cause_seq=sent_seq)
        if request.name in ("LeaderAndIsr", "StopReplica") and response.error == "NONE":
            deleted = {p.topic_partition for p in getattr(request, "partition_states", ())
                       if getattr(p, "delete_partition", False)} if request.name == "StopReplica" else set()
            self.data.on_partitions_changed(partitions, deleted)
        callback(response)

    def _handle_produce(self, tp, payloads, acks, respond) -> None:
        cost = self.config["kclab.request.handling.ms"]
        if cost:
            time.sleep(cost / 1000)  # the appended bytes' disk write, in the lab
        self.data.handle_produce(tp, payloads, acks, respond)

    def queue_size(self) -> int:
        return self.requests.queue_size()

    # -- what the data plane may ask of its broker (``data_plane.ReplicaHost``) -------------------------
    def partitions(self) -> Mapping[TopicPartition, HostedPartition]:
        return self.state.partitions

    def update_isr(self, tp: TopicPartition, leader_epoch: int, isr: tuple[int, ...], zk_version: int) -> bool:
        """A leader changed the ISR in ZooKeeper: so does its own view — unless a LeaderAndIsr of
        another leader epoch got there first. False when it did."""
        with self.lock:
            partitions = dict(self.state.partitions)
            current = partitions.get(tp)
            if current is None or current.leader_epoch != leader_epoch:
                return False
            partitions[tp] = replace(current, isr=isr, zk_version=zk_version)
            self.state = replace(self.state, partitions=partitions)
        return True

    def _emit(self, to_state: str, note: str, outcome: str | None = None, detail: dict | None = None) -> None:
        self.services.emit([Record(kind="broker", subject=broker_subject(self.id), to_state=to_state,
                                   broker_id=self.id, outcome=outcome, note=note, detail=detail)])
