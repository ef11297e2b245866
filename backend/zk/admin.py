"""What Kafka's admin tools write to ZooKeeper, and nothing more (spec §9, §13.1, §14, §15.1).

Kafka's ``AdminZkClient`` (used by ``kafka-topics.sh --zookeeper``, ``kafka-configs.sh``,
``kafka-reassign-partitions.sh`` and ``kafka-preferred-replica-election.sh``) never talks to a
broker: it validates, writes a znode, and the controller reacts to the watch. Doing the same
here is the point of the lab: a topic created from the page and one created with ``zkCli.sh``
take the same path through the controller, and a student sees the same znodes as on Kafka.

Refusals raise Kafka's exceptions by Kafka's names (``TopicExistsException: Topic 't' already
exists.``). The client must already be rooted at the cluster's chroot. Calls wait at most
``timeout`` seconds (a synchronous kazoo call would block for as long as the session is
SUSPENDED, DESIGN.md).
"""

from __future__ import annotations

import random
from typing import Any, Callable, Iterable, Mapping, Sequence

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NoNodeError, NodeExistsError

from backend.core.assignment import assign_replicas_to_brokers
from backend.core.errors import (
    BrokerNotAvailableException, InvalidPartitionsException, InvalidTopicException, TopicExistsException,
    UnknownTopicOrPartitionException,
)
from backend.core.model import LeaderIsrAndControllerEpoch, ReplicaAssignment, TopicPartition

from . import codec, paths
from .client import create_recursive
from .admin_validation import (
    AdminOperationException, TopicAlreadyMarkedForDeletionException, broker_list, new_partition_assignment,
    topics_collide, validate_assignment, validate_topic_config, validate_topic_name,
)


def _listing(partitions: Iterable[TopicPartition]) -> str:
    return ", ".join(str(tp) for tp in partitions)


class AdminZkClient:
    """Kafka's ``AdminZkClient`` plus the ZooKeeper side of the reassignment and
    preferred-election tools, over a started kazoo client rooted at the cluster's chroot."""

    def __init__(self, zk: KazooClient, timeout: float = 10.0):
        self.zk = zk
        self.timeout = timeout

    # -- small kazoo helpers -------------------------------------------------------------------
    def _wait(self, async_result):
        return async_result.get(timeout=self.timeout)

    def _get(self, path: str):
        return self._wait(self.zk.get_async(path))

    def _children(self, path: str) -> list[str]:
        try:
            return self._wait(self.zk.get_children_async(path))
        except NoNodeError:
            return []

    def _exists(self, path: str) -> bool:
        return self._wait(self.zk.exists_async(path)) is not None

    def _create(self, path: str, data: bytes = b"", sequence: bool = False) -> str:
        """kazoo's create with ``makepath`` was; Kafka's ``createRecursive`` is
        (``backend.zk.client.create_recursive``): a znode already there is an error here."""
        return self.zk.unchroot(create_recursive(self.zk, path, data, sequence=sequence, throw_if_path_exists=True,
                                                 timeout=self.timeout))

    # -- readers -------------------------------------------------------------------------------
    def list_topics(self) -> list[str]:
        return sorted(self._children(paths.BROKER_TOPICS))

    def list_brokers(self) -> list[int]:
        """Registered (live) broker ids, ascending, from ``/brokers/ids``."""
        ids = []
        for name in self._children(paths.BROKER_IDS):
            broker_id = paths.parse_broker_id(name)
            if broker_id is None:
                raise codec.ZnodeFormatError(f"{paths.BROKER_IDS}/{name}", "a broker znode's name must be a broker id")
            ids.append(broker_id)
        return sorted(ids)

    def get_topic(self, topic: str) -> codec.TopicIdReplicaAssignment:
        return self._get_topic_with_version(topic)[0]

    def _get_topic_with_version(self, topic: str) -> tuple[codec.TopicIdReplicaAssignment, int]:
        try:
            data, stat = self._get(paths.topic_path(topic))
        except NoNodeError:
            raise UnknownTopicOrPartitionException(f"Topic '{topic}' does not exist.") from None
        return codec.decode_topic_assignment(topic, data), stat.version

    def get_topic_assignment(self, topic: str) -> dict[int, ReplicaAssignment]:
        return self.get_topic(topic).assignment

    def get_topic_id(self, topic: str) -> str | None:
        return self.get_topic(topic).topic_id

    def get_topic_config(self, topic: str) -> dict[str, str]:
        try:
            data, _ = self._get(paths.topic_config_path(topic))
        except NoNodeError:
            return {}
        return codec.decode_topic_config(data, paths.topic_config_path(topic))

    def get_partition_state(self, topic: str, partition: int) -> LeaderIsrAndControllerEpoch | None:
        """None until the controller has elected the partition's first leader (§9)."""
        path = paths.partition_state_path(topic, partition)
        try:
            data, stat = self._get(path)
        except NoNodeError:
            return None
        return codec.decode_partition_state(data, stat.version, path)

    # -- topics (§9, §14) ----------------------------------------------------------------------
    def create_topic(self, topic: str, assignment: Mapping[int, Sequence[int]],
                     config: Mapping[str, Any] | None = None, topic_id: str | None = None,
                     known_brokers: Iterable[int] | None = None, uses_topic_id: bool = True) -> str | None:
        """``createTopicWithAssignment``: validate, write ``/config/topics/T``, create
        ``/brokers/topics/T`` (v3, with a new topic id when ``uses_topic_id``: the cluster's
        inter.broker.protocol.version is 2.8 or newer). Returns the topic id (or ``None``)."""
        validate_topic_name(topic)
        replicas = validate_assignment(assignment, known_brokers)
        overrides = validate_topic_config(config or {})
        if topic_id is not None:
            topic_id = codec.parse_topic_id(topic_id)
        elif uses_topic_id:
            topic_id = codec.new_topic_id()
        existing = self.list_topics()
        if topic in existing:
            raise TopicExistsException(f"Topic '{topic}' already exists.")
        colliding = [t for t in existing if topics_collide(topic, t)]
        if colliding:
            raise InvalidTopicException(f"Topic '{topic}' collides with existing topics: {', '.join(colliding)}")
        self._write_config(paths.topic_config_path(topic), overrides)
        try:
            self._create(paths.topic_path(topic), codec.encode_topic_assignment(replicas, topic_id))
        except NodeExistsError:
            raise TopicExistsException(f"Topic '{topic}' already exists.") from None
        return topic_id

    def create_topic_with_assignment_from(
            self, topic: str, brokers: Iterable[int] | None, partitions: int, replication_factor: int,
            rng: random.Random | None = None, config: Mapping[str, Any] | None = None,
            fixed_start_index: int = -1) -> tuple[dict[int, tuple[int, ...]], str]:
        """``createTopic(topic, partitions, rf)``: Kafka's assignment (§18.1) over ``brokers``
        (default: the registered ones), random start unless ``rng`` is seeded or
        ``fixed_start_index`` given. Returns ``(assignment, topic_id)``."""
        validate_topic_name(topic)
        broker_ids = self.list_brokers() if brokers is None else sorted(set(brokers))
        assignment = assign_replicas_to_brokers(
            partitions, replication_factor, broker_ids, fixed_start_index=fixed_start_index,
            rng=rng if rng is not None or fixed_start_index >= 0 else random.Random())
        topic_id = self.create_topic(topic, assignment, config)
        return {p: tuple(r) for p, r in assignment.items()}, topic_id

    def add_partitions(self, topic: str, new_total: int, assignment: Mapping[int, Sequence[int]] | None = None,
                       brokers: Iterable[int] | None = None,
                       rng: random.Random | None = None) -> dict[int, tuple[int, ...]]:
        """``AdminZkClient.addPartitions``: rewrite ``/brokers/topics/T`` with the old
        partitions (and topic id) unchanged plus the new ones; returns the new ones.

        New replicas follow Kafka's algorithm with a *fixed* start (the first broker whose id is
        >= partition 0's preferred replica) and ``start_partition_id`` = the current count, so
        the result is deterministic: ``rng`` is accepted for symmetry with topic creation and
        not used. ``brokers`` defaults to the ids registered in ``/brokers/ids``."""
        del rng  # Kafka draws nothing here
        for _ in range(5):  # re-read if the controller rewrote the znode meanwhile
            current, version = self._get_topic_with_version(topic)
            existing = current.assignment
            if 0 not in existing:
                raise AdminOperationException(f"Unexpected existing replica assignment for topic '{topic}', "
                                              f"partition id 0 is missing. Assignment: {existing}")
            if new_total - len(existing) <= 0:
                raise InvalidPartitionsException(
                    f"The number of partitions for a topic can only be increased. Topic {topic} currently has "
                    f"{len(existing)} partitions, {new_total} would not be an increase.")
            broker_ids = self.list_brokers() if brokers is None else sorted(set(brokers))
            new = new_partition_assignment(existing, new_total, assignment, broker_ids)
            combined = {**existing, **{p: ReplicaAssignment(r) for p, r in new.items()}}
            try:
                self._wait(self.zk.set_async(paths.topic_path(topic),
                                             codec.encode_topic_assignment(combined, current.topic_id), version))
                return new
            except BadVersionError:
                continue
        raise AdminOperationException(f"{paths.topic_path(topic)} kept changing; try again.")

    def delete_topic(self, topic: str) -> None:
        """``deleteTopic``: create ``/admin/delete_topics/T``; the controller does the rest (§14)."""
        if not self._exists(paths.topic_path(topic)):
            raise UnknownTopicOrPartitionException(f"Topic `{topic}` to delete does not exist")
        try:
            self._create(paths.delete_topic_path(topic))
        except NodeExistsError:
            raise TopicAlreadyMarkedForDeletionException(
                f"Topic '{topic}' is already marked for deletion ({paths.delete_topic_path(topic)} exists); "
                "the controller removes that znode when the deletion completes.") from None

    # -- reassignment and preferred election (§15, §13.1) --------------------------------------
    def reassign_partitions(self, reassignment: Mapping[TopicPartition, Sequence[int]],
                            validate: bool = True) -> None:
        """Create ``/admin/reassign_partitions`` as ``kafka-reassign-partitions.sh --zookeeper``
        does. ``validate=False`` writes unknown partitions or brokers too (to show how the
        controller handles them)."""
        targets = {TopicPartition(*tp): tuple(replicas) for tp, replicas in reassignment.items()}
        if validate:
            self._validate_reassignment(targets)
        try:
            self._create(paths.REASSIGN_PARTITIONS, codec.encode_reassignment(targets))
        except NodeExistsError:
            raise AdminOperationException(
                f"Cannot execute because there is an existing partition reassignment "
                f"({paths.REASSIGN_PARTITIONS} exists); wait until the controller completes it and "
                "deletes the znode.") from None

    def _validate_reassignment(self, targets: dict[TopicPartition, tuple[int, ...]]) -> None:
        if not targets:
            raise AdminOperationException("Partition reassignment list cannot be empty.")
        for tp, replicas in targets.items():
            broker_list(replicas, f"partition {tp}")
        missing = self._missing_partitions(targets)
        if missing:
            raise UnknownTopicOrPartitionException(
                f"The proposed assignment contains non-existent partitions: {_listing(missing)}")
        live = set(self.list_brokers())
        unknown = sorted({b for replicas in targets.values() for b in replicas} - live)
        if unknown:
            raise BrokerNotAvailableException(
                f"The proposed assignment contains non-existent brokerIDs: {', '.join(map(str, unknown))}")

    def _partitions_of(self, topic: str) -> set[int]:
        try:
            return set(self.get_topic_assignment(topic))
        except UnknownTopicOrPartitionException:
            return set()

    def _missing_partitions(self, partitions: Sequence[TopicPartition]) -> list[TopicPartition]:
        known: dict[str, set[int]] = {}
        for tp in partitions:
            if tp.topic not in known:
                known[tp.topic] = self._partitions_of(tp.topic)
        return [tp for tp in partitions if tp.partition not in known[tp.topic]]

    def preferred_replica_election(self, partitions: Iterable[TopicPartition] | None = None,
                                   validate: bool = True) -> tuple[TopicPartition, ...]:
        """Create ``/admin/preferred_replica_election`` (``PreferredReplicaLeaderElectionCommand``);
        ``None`` = every partition of every topic. Returns the partitions written."""
        if partitions is None:
            chosen = tuple(TopicPartition(t, p) for t in self.list_topics() for p in sorted(self._partitions_of(t)))
        else:
            chosen = tuple(dict.fromkeys(TopicPartition(*tp) for tp in partitions))
        if validate:
            if not chosen:
                raise AdminOperationException("There are no partitions to elect preferred leaders for.")
            missing = self._missing_partitions(chosen)
            if missing:
                raise UnknownTopicOrPartitionException(
                    f"Preferred replica election data contains non-existent partitions: {_listing(missing)}")
        try:
            self._create(paths.PREFERRED_REPLICA_ELECTION, codec.encode_preferred_replica_election(chosen))
        except NodeExistsError:
            raise AdminOperationException(
                f"Preferred replica leader election currently in progress ({paths.PREFERRED_REPLICA_ELECTION} "
                "exists). Aborting operation") from None
        return chosen

    # -- topic configs -------------------------------------------------------------------------
    def set_topic_config(self, topic: str, changes: Mapping[str, Any]) -> dict[str, str]:
        """``kafka-configs.sh --alter``: merge ``changes`` (a ``None`` value deletes the
        override) into ``/config/topics/T``, then create the change notification
        ``/config/changes/config_change_<seq>`` that brokers watch. Returns the new overrides."""
        validate_topic_name(topic)
        if not self._exists(paths.topic_path(topic)):
            raise UnknownTopicOrPartitionException(f"Topic '{topic}' does not exist.")
        updates = validate_topic_config({k: v for k, v in changes.items() if v is not None})
        deletions = {k for k, v in changes.items() if v is None}
        merged = self._write_config(
            paths.topic_config_path(topic),
            lambda old: {k: v for k, v in {**old, **updates}.items() if k not in deletions})
        self._create(paths.config_change_path(), codec.encode_config_change(f"topics/{topic}"), sequence=True)
        return merged

    def set_broker_default_config(self, changes: Mapping[str, str]) -> dict[str, str]:
        """``kafka-configs.sh --entity-type brokers --entity-default --alter``: merge ``changes``
        into ``/config/brokers/<default>`` and notify (entity path ``brokers/<default>``), as
        Kafka 2.8 does for a cluster-wide dynamic broker config. Returns the new overrides."""
        merged = self._write_config(paths.BROKER_DEFAULT_CONFIG, lambda old: {**old, **changes})
        self._create(paths.config_change_path(), codec.encode_config_change("brokers/<default>"), sequence=True)
        return merged

    def _write_config(self, path: str, update: Mapping[str, str] | Callable[[dict], dict]) -> dict[str, str]:
        """Kafka's ``setOrCreateEntityConfigs`` for a config entity znode (``/config/topics/T``,
        ``/config/brokers/<default>``): ``update`` is the new config or a function of the old one
        (read-modify-write, retried on races)."""
        for _ in range(5):
            try:
                data, stat = self._get(path)
            except NoNodeError:
                config = dict(update) if isinstance(update, Mapping) else update({})
                try:
                    self._create(path, codec.encode_topic_config(config))
                    return config
                except NodeExistsError:
                    continue
            config = dict(update) if isinstance(update, Mapping) else update(codec.decode_topic_config(data, path))
            try:
                self._wait(self.zk.set_async(path, codec.encode_topic_config(config), stat.version))
                return config
            except (BadVersionError, NoNodeError):
                continue
        raise AdminOperationException(f"{path} kept changing; try again.")
