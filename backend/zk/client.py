"""``KafkaZkClient``: every read and write a broker or controller makes, in Kafka's formats.

The one rule worth reading this file for: **every controller write is fenced**. Each write
travels in a ZooKeeper transaction together with ``check(/controller_epoch, version)``, the
version this controller set when it won. If another broker has since won, the version moved,
ZooKeeper refuses the whole transaction, and the write never happens — the zombie is stopped
by ZooKeeper itself, not by an ``if`` in our code (§3, KAFKA-6082). The outcome comes back as
``rejected_stale_epoch`` and is recorded.

Writes are pipelined with kazoo's async calls (``*_async().get(timeout)``), which also never
block forever while the session is suspended; unwatched bulk reads go in ``multiRead``s.
"""

from __future__ import annotations

from typing import Callable, Iterable, Mapping

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError
from kazoo.handlers.utils import AsyncResult
from kazoo.protocol.paths import _prefix_root
from kazoo.protocol.serialization import Create, Create2
from kazoo.security import OPEN_ACL_UNSAFE

from backend.core.controller.failover import ClusterMetadata
from backend.core.controller.plan import WriteResult
from backend.core.errors import ControllerMovedException, NodeExistsException
from backend.core.model import BrokerInfo, LeaderIsrAndControllerEpoch, ReplicaAssignment, TopicPartition
from backend.core.records import Record
from backend.zk import codec, paths
from backend.zk.fenced import FencedWriter
from backend.zk.multi_read import ZnodeReader
from backend.zk.watches import Watch, watch as as_watch

TIMEOUT_S = 10.0
CREATE_AGAIN = 5
"""How many times ``register_broker`` creates its znode when the one in the way vanishes before it
is read (Kafka retries without a bound; each try is a new race with another session's expiry)."""


def create_async(zk: KazooClient, path: str, value: bytes, ephemeral: bool = False, sequence: bool = False,
                 include_data: bool = False) -> AsyncResult:
    """kazoo's ``create_async`` for what the brokers and the admin create (no ``makepath``),
    without its closures: kazoo's create wraps three functions that refer to each other and to the
    client, a reference cycle for every create, which keeps the client and whatever its answer
    holds (a refused start's ``NodeExists`` and the frames it was raised through) until the cyclic
    collector runs (issue 14, thirty-seventh round). Same request (``Create``, or ``Create2`` with
    ``include_data``), same answer; the created path comes back with the chroot (a sequential
    znode's name: :meth:`KafkaZkClient.create_isr_change_notification`)."""
    result = zk.handler.async_result()
    request = Create2 if include_data else Create
    zk._call(request(_prefix_root(zk.chroot, path, trailing=sequence), value, OPEN_ACL_UNSAFE,
                     (1 if ephemeral else 0) | (2 if sequence else 0)), result)
    return result  # a request refused before it is sent (the client closed) has its exception set


def create_recursive(zk: KazooClient, path: str, value: bytes = b"", sequence: bool = False,
                     throw_if_path_exists: bool = False, timeout: float = TIMEOUT_S) -> str | None:
    """Kafka's ``createRecursive``: create ``path`` (persistent), and on ``NoNode`` make its missing
    parents (empty, parents first) and create it again; a ``path`` that exists is fine unless
    ``throw_if_path_exists``. Returns the created path (with the chroot: a sequential znode's
    name), or ``None`` when it existed. kazoo's ``ensure_path`` and ``makepath`` did this with
    closures whose cycles held the client: a cluster's settle froze them with the first broker's
    client (``backend/runtime/heap.py``), which then outlived the broker's restart for the class."""
    try:
        try:
            return create_async(zk, path, value, sequence=sequence).get(timeout=timeout)
        except NoNodeError:
            parent = path.rsplit("/", 1)[0] or "/"
            if parent == path:
                raise  # "/" of a client whose chroot is missing: nothing above it to make
            create_recursive(zk, parent, timeout=timeout)
            return create_async(zk, path, value, sequence=sequence).get(timeout=timeout)
    except NodeExistsError:
        if throw_if_path_exists:
            raise
        return None


class KafkaZkClient:
    def __init__(self, zk: KazooClient, multi_read: bool = False) -> None:
        """``multi_read``: every server of the ensemble answers ``multiRead`` (3.6+); the
        cluster asks them before it starts the brokers (``backend/zk/multi_read.py``)."""
        self.zk = zk
        self.reader = ZnodeReader(zk, TIMEOUT_S, multi_read)
        self.pipelined = True
        """``False`` makes controller writes synchronous, one at a time, as Kafka's controller
        wrote before 1.1 (KAFKA-5642). The controller sets it from ``kclab.zk.pipelined.writes``."""

    # -- broker registration (§1.1) -------------------------------------------------------------
    def create_top_level_paths(self) -> None:
        """Kafka's ``createTopLevelPaths``: each persistent path made if it is missing, parents
        first, in Kafka's order.

        Which exist is read in one request (a ``multiRead``, where the ensemble has it; else
        the pipelined burst of gets it replaces): the 13 looks were a third of a broker start's
        ZooKeeper requests, and a request is the expensive unit on both sides
        (``backend/zk/multi_read.py``). Reads leave no trace in the tree. Only the missing ones
        are then made, one by one in the same order, so a new cluster's znodes are created
        exactly as before. Bounded like every other call here: kazoo keeps a request made while
        its connection is being re-established until it is, and a broker's start (a student's
        request) must not wait for ever on a ZooKeeper that does not take the connection back."""
        for path, look in zip(paths.PERSISTENT_PATHS, self.reader.get_many(paths.PERSISTENT_PATHS)):
            if isinstance(look, NoNodeError):
                create_recursive(self.zk, path)
            elif isinstance(look, Exception):
                raise look

    def register_broker(self, broker_id: int, host: str = "localhost", port: int = 9092, version: int = 5) -> int:
        """Create ``/brokers/ids/<id>`` (ephemeral) and return its czxid: the broker epoch.
        ``version``: 5 (with ``features``) from inter.broker.protocol.version 2.7, else 4."""
        path = paths.broker_path(broker_id)
        data = codec.encode_broker(host, port, version=version)
        for _ in range(CREATE_AGAIN):
            try:
                _, stat = create_async(self.zk, path, data, ephemeral=True, include_data=True).get(timeout=TIMEOUT_S)
                return stat.czxid
            except NodeExistsError:
                try:
                    _, stat = self.zk.get_async(path).get(timeout=TIMEOUT_S)
                except NoNodeError:
                    # Kafka's CheckedEphemeral.getAfterNodeExists: "The ephemeral node at <path> went
                    # away while reading it, attempting create() again" — a crashed process's
                    # session expired between the two requests (a student's start, just in time).
                    continue
                if stat.ephemeralOwner == self.zk.client_id[0]:
                    return stat.czxid  # our own registration survived (a retried create)
                raise NodeExistsException(f"{path} already exists, owned by session {hex(stat.ephemeralOwner)}, "
                                          f"not this broker's {hex(self.zk.client_id[0])}") from None
        raise NodeExistsException(f"{path} kept appearing and vanishing: {CREATE_AGAIN} tries to create it failed")

    # -- controller election (§2.2) ----------------------------------------------------------------
    def get_controller_id(self, watch: Watch | None = None) -> int | None:
        """Who holds ``/controller``. With ``watch``, Kafka's ``registerZNodeChangeHandlerAndCheckExistence``
        then ``getControllerId``: an ``exists`` arms the watch whether or not the znode is there (a
        ``getData`` of an absent znode arms none). Without, ``getControllerId`` alone: one ``getData``."""
        if watch is not None and self.zk.exists(paths.CONTROLLER, watch=as_watch(watch)) is None:
            return None
        try:
            return codec.decode_controller(self.zk.get(paths.CONTROLLER)[0])
        except NoNodeError:
            return None

    def get_controller_epoch(self) -> tuple[int, int] | None:
        try:
            data, stat = self.zk.get(paths.CONTROLLER_EPOCH)
        except NoNodeError:
            return None
        return codec.decode_controller_epoch(data), stat.version

    def register_controller_and_increment_epoch(self, broker_id: int) -> tuple[int, int]:
        """One transaction: create ``/controller`` (ephemeral) and set ``/controller_epoch`` to
        epoch + 1 *at the version read*. Returns (new epoch, its znode version)."""
        current = self.get_controller_epoch()
        if current is None:  # Kafka's maybeCreateControllerEpochZNode: another may have made it meanwhile
            create_recursive(self.zk, paths.CONTROLLER_EPOCH, codec.encode_controller_epoch(0))
            current = self.get_controller_epoch()
        epoch, version = current
        new_epoch = epoch + 1
        tx = self.zk.transaction()
        tx.create(paths.CONTROLLER, codec.encode_controller(broker_id), ephemeral=True)
        tx.set_data(paths.CONTROLLER_EPOCH, codec.encode_controller_epoch(new_epoch), version=version)
        results = tx.commit()
        if not any(isinstance(r, Exception) for r in results):
            return new_epoch, results[1].version
        # Lost the race — or won it but the reply was lost: check what ZooKeeper says.
        holder = self.get_controller_id()
        now = self.get_controller_epoch()
        if holder == broker_id and now is not None and now[0] == new_epoch:
            return new_epoch, now[1]
        raise ControllerMovedException(
            f"/controller is held by broker {holder}" if holder is not None
            else f"/controller_epoch moved past version {version}")

    # -- reads the controller makes -------------------------------------------------------------------
    def get_all_brokers(self, watch: Watch | None = None) -> dict[int, BrokerInfo]:
        children = self.zk.get_children(paths.BROKER_IDS, watch=as_watch(watch))
        ids = [b for b in (paths.parse_broker_id(c) for c in children) if b is not None]
        found = self._get_many({b: paths.broker_path(b) for b in ids})
        return {b: codec.decode_broker(b, data, stat.czxid) for b, (data, stat) in found.items()}

    def get_broker(self, broker_id: int, watch: Watch | None = None) -> BrokerInfo | None:
        """One registration, arming ``watch`` on its znode (Kafka's BrokerModificationsHandler)."""
        path = paths.broker_path(broker_id)
        if self.zk.exists(path, watch=as_watch(watch)) is None:
            return None
        try:
            data, stat = self.zk.get(path)
        except NoNodeError:
            return None
        return codec.decode_broker(broker_id, data, stat.czxid)

    def watch_brokers(self, broker_ids: Iterable[int], watch: Callable[[int], Watch]) -> None:
        """Arm a data watch on each registration (``registerBrokerModificationsHandler``)."""
        self._watch_each({paths.broker_path(b): watch(b) for b in broker_ids})

    def watch_partition_states(self, partitions: Iterable[TopicPartition], watch: Callable[[TopicPartition], Watch]
                               ) -> None:
        """Arm a data watch on each partition's state znode (``PartitionReassignmentIsrChangeHandler``)."""
        self._watch_each({paths.partition_state_path(tp.topic, tp.partition): watch(tp) for tp in partitions})

    def _watch_each(self, watches: dict[str, Watch]) -> None:
        for handle in [self.zk.exists_async(path, watch=as_watch(w)) for path, w in watches.items()]:
            handle.get(timeout=TIMEOUT_S)

    def get_all_topics(self, watch: Watch | None = None) -> set[str]:
        return set(self.zk.get_children(paths.BROKER_TOPICS, watch=as_watch(watch)))

    def get_topic_assignments(self, topics: Iterable[str], watch: Callable[[str], Watch] | None = None
                              ) -> dict[str, dict[int, ReplicaAssignment]]:
        topics = list(topics)
        asyncs = {t: self.zk.get_async(paths.topic_path(t), watch=as_watch(watch(t)) if watch else None) for t in topics}
        out = {}
        for topic, result in asyncs.items():
            try:
                data, _ = result.get(timeout=TIMEOUT_S)
            except NoNodeError:
                continue
            out[topic] = codec.decode_topic_assignment(topic, data).assignment
        return out

    def get_topic_configs(self, topics: Iterable[str]) -> dict[str, dict[str, str]]:
        found = self._get_many({t: paths.topic_config_path(t) for t in topics})
        return {t: codec.decode_topic_config(data, paths.topic_config_path(t)) for t, (data, _) in found.items()}

    def get_partition_states(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, LeaderIsrAndControllerEpoch | None]:
        partitions = list(partitions)
        found = self._get_many({tp: paths.partition_state_path(tp.topic, tp.partition) for tp in partitions})
        return {tp: (codec.decode_partition_state(found[tp][0], found[tp][1].version) if tp in found else None)
                for tp in partitions}

    def get_topic_deletions(self, watch: Watch | None = None) -> list[str]:
        return sorted(self.zk.get_children(paths.DELETE_TOPICS, watch=as_watch(watch)))

    def get_partition_reassignment(self, watch: Watch | None = None) -> dict[TopicPartition, tuple[int, ...]] | None:
        if self.zk.exists(paths.REASSIGN_PARTITIONS, watch=as_watch(watch)) is None:
            return None
        try:
            return codec.decode_reassignment(self.zk.get(paths.REASSIGN_PARTITIONS)[0])
        except NoNodeError:
            return None

    def get_preferred_replica_election(self, watch: Watch | None = None) -> tuple[TopicPartition, ...] | None:
        if self.zk.exists(paths.PREFERRED_REPLICA_ELECTION, watch=as_watch(watch)) is None:
            return None
        try:
            return codec.decode_preferred_replica_election(self.zk.get(paths.PREFERRED_REPLICA_ELECTION)[0])
        except NoNodeError:
            return None

    def get_isr_change_notifications(self, watch: Watch | None = None) -> list[str]:
        children = self.zk.get_children(paths.ISR_CHANGE_NOTIFICATION, watch=as_watch(watch))
        numbers = (paths.sequence_number(c, paths.ISR_CHANGE_PREFIX) for c in children)
        return sorted(n for n in numbers if n is not None)

    def get_partitions_from_isr_change_notifications(self, sequence_numbers: Iterable[str]) -> list[TopicPartition]:
        found = self._get_many({n: paths.isr_change_path(n) for n in sequence_numbers})
        partitions = set()
        for number, (data, _) in found.items():
            partitions.update(codec.decode_isr_change_notification(data, paths.isr_change_path(number)))
        return sorted(partitions)

    def read_cluster_metadata(self, watches: Mapping[str, Callable]) -> ClusterMetadata:
        """Everything failover reads, arming the controller's watches as Kafka does."""
        brokers = self.get_all_brokers(watch=watches["brokers"])
        topics = self.get_all_topics(watch=watches["topics"])
        assignments = self.get_topic_assignments(topics, watch=watches["topic"])
        states = self.get_partition_states(TopicPartition(t, p) for t, a in assignments.items() for p in a)
        return ClusterMetadata(
            brokers=brokers, assignments=assignments,
            partition_states={tp: s for tp, s in states.items() if s is not None},
            topic_configs=self.get_topic_configs(topics),
            topics_to_delete=tuple(self.get_topic_deletions(watch=watches["delete_topics"])),
            zk_reassignment=self.get_partition_reassignment(watch=watches["reassign"]),
            preferred_replica_election=self.get_preferred_replica_election(watch=watches["preferred"]),
            isr_change_notifications=tuple(self.get_isr_change_notifications(watch=watches["isr_change"])),
        )

    def _get_many(self, keyed_paths: Mapping) -> dict:
        """``(data, stat)`` per key, in multiReads (``backend/zk/multi_read.py``); absent znodes
        are left out, any other error is raised."""
        keys = list(keyed_paths)
        out = {}
        for key, result in zip(keys, self.reader.get_many([keyed_paths[k] for k in keys])):
            if isinstance(result, NoNodeError):
                continue
            if isinstance(result, Exception):
                raise result
            out[key] = result
        return out

    # -- fenced writes (§3) -------------------------------------------------------------------------
    def execute(self, writes, epoch_zk_version: int, emit: Callable[[list[Record]], object] | None = None
                ) -> list[WriteResult]:
        """Attempt each write in its own fenced transaction; one outcome per write, in order."""
        return FencedWriter(self.zk, epoch_zk_version, emit, pipelined=self.pipelined).execute(list(writes))

    # -- what a partition leader writes itself (§16, pre-AlterIsr) -------------------------------------
    def update_partition_state_as_leader(self, tp: TopicPartition, state: LeaderIsrAndControllerEpoch) -> int | None:
        """Conditional write at ``state.leader_and_isr.zk_version`` — not fenced by the controller
        epoch: the leader is not the controller. Returns the new version, or ``None`` when
        someone else (the controller) changed the znode first."""
        path = paths.partition_state_path(tp.topic, tp.partition)
        try:
            return self.zk.set(path, codec.encode_partition_state(state), version=state.leader_and_isr.zk_version).version
        except BadVersionError:
            data, stat = self.zk.get(path)
            current = codec.decode_partition_state(data, stat.version)
            if current.leader_and_isr.leader == state.leader and current.isr == state.isr \
                    and current.leader_and_isr.leader_epoch == state.leader_and_isr.leader_epoch:
                return stat.version  # our own write, retried (Kafka's checkLeaderAndIsrZkData)
            return None
        except NoNodeError:
            return None

    def create_isr_change_notification(self, partitions: Iterable[TopicPartition]) -> str:
        created = create_async(self.zk, paths.isr_change_path(), codec.encode_isr_change_notification(partitions),
                               sequence=True)
        return self.zk.unchroot(created.get())
