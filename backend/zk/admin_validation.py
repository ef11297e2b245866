"""What Kafka's admin tools check before they write (``Topic.validate``,
``AdminZkClient.validateTopicCreate``, ``LogConfig``): pure, no ZooKeeper. ``admin.py`` calls
these and then writes; a refusal raises Kafka's exception by Kafka's name."""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Sequence

from backend.core.assignment import assign_replicas_to_brokers, start_index_for_new_partitions
from backend.core.config import SETTINGS, ConfigError, config_string, parse_value
from backend.core.errors import (
    BrokerNotAvailableException, InvalidReplicaAssignmentException, InvalidTopicException, KafkaException,
)
from backend.core.model import ReplicaAssignment


class TopicAlreadyMarkedForDeletionException(KafkaException):
    """``kafka.common.TopicAlreadyMarkedForDeletionException``: ``/admin/delete_topics/T`` exists."""


class AdminOperationException(KafkaException):
    """``kafka.admin.AdminOperationException``: an admin tool refuses (e.g. one already running)."""


class InvalidConfigurationException(KafkaException):
    """``org.apache.kafka.common.errors.InvalidConfigurationException``."""


MAX_NAME_LENGTH = 249
_LEGAL_NAME = re.compile(r"^[a-zA-Z0-9._-]+$")

TOPIC_CONFIG_NAMES = frozenset({
    "cleanup.policy", "compression.type", "delete.retention.ms", "file.delete.delay.ms",
    "flush.messages", "flush.ms", "follower.replication.throttled.replicas", "index.interval.bytes",
    "leader.replication.throttled.replicas", "max.compaction.lag.ms", "max.message.bytes",
    "message.downconversion.enable", "message.format.version", "message.timestamp.difference.max.ms",
    "message.timestamp.type", "min.cleanable.dirty.ratio", "min.compaction.lag.ms",
    "min.insync.replicas", "preallocate", "retention.bytes", "retention.ms", "segment.bytes",
    "segment.index.bytes", "segment.jitter.ms", "segment.ms", "unclean.leader.election.enable",
})
"""Kafka 2.8's topic-level configs (``LogConfig``); any other name is refused, as Kafka does."""


def validate_topic_name(topic: str) -> str:
    """Kafka's ``Topic.validate``: ASCII letters, digits, '.', '_', '-'; 1..249 chars; not . or .."""
    if not isinstance(topic, str) or not topic:
        raise InvalidTopicException("Topic name is illegal, it can't be empty")
    if topic in (".", ".."):
        raise InvalidTopicException('Topic name cannot be "." or ".."')
    if len(topic) > MAX_NAME_LENGTH:
        raise InvalidTopicException(f"Topic name is illegal, it can't be longer than {MAX_NAME_LENGTH} "
                                    f"characters, topic name: {topic}")
    if not _LEGAL_NAME.match(topic):
        raise InvalidTopicException(f'Topic name "{topic}" is illegal, it contains a character other than '
                                    "ASCII alphanumerics, '.', '_' and '-'")
    return topic


def topics_collide(a: str, b: str) -> bool:
    """Kafka's ``Topic.hasCollision``: metric names replace '.' by '_', so 'a.b' and 'a_b' clash."""
    return a != b and a.replace(".", "_") == b.replace(".", "_")


def partition_ids(assignment: Mapping[Any, Any]) -> list[int]:
    if any(isinstance(p, bool) or not isinstance(p, int) for p in assignment):
        raise InvalidReplicaAssignmentException(
            f"partition ids must be integers, got {sorted(map(repr, assignment))}")
    return sorted(assignment)


def broker_list(replicas: Any, what: str) -> tuple[int, ...]:
    if isinstance(replicas, (str, bytes)) or not isinstance(replicas, Sequence):
        raise InvalidReplicaAssignmentException(f"{what} must be a list of broker ids, got {replicas!r}")
    if any(isinstance(b, bool) or not isinstance(b, int) or b < 0 for b in replicas):
        raise InvalidReplicaAssignmentException(f"{what} must be a list of broker ids, got {list(replicas)}")
    if not replicas:
        raise InvalidReplicaAssignmentException(f"Cannot have replication factor of 0 for {what}.")
    if len(set(replicas)) != len(replicas):
        raise InvalidReplicaAssignmentException(
            f"Duplicate brokers not allowed in replica assignment: {', '.join(map(str, replicas))} for {what}.")
    return tuple(replicas)


def validate_assignment(assignment: Mapping[int, Sequence[int]],
                        known_brokers: Iterable[int] | None = None) -> dict[int, tuple[int, ...]]:
    """``validateTopicCreate``'s checks: partitions 0..n-1, every list non-empty without
    duplicates, one replication factor, and (if ``known_brokers`` is given) known brokers only."""
    if not assignment:
        raise InvalidReplicaAssignmentException("The assignment must list at least one partition.")
    ids = partition_ids(assignment)
    if ids != list(range(len(ids))):
        raise InvalidReplicaAssignmentException(
            f"partitions should be a consecutive 0-based integer sequence, got {ids}")
    result = {p: broker_list(assignment[p], f"partition id {p}") for p in ids}
    if len({len(r) for r in result.values()}) != 1:
        sizes = {p: len(r) for p, r in result.items()}
        raise InvalidReplicaAssignmentException(
            f"All partitions should have the same number of replicas, got {sizes} (partition: replicas)")
    if known_brokers is not None:
        known = set(known_brokers)
        for p, replicas in result.items():
            unknown = [b for b in replicas if b not in known]
            if unknown:
                raise InvalidReplicaAssignmentException(
                    f"Unknown broker(s) {', '.join(map(str, unknown))} in the assignment of partition id {p}; "
                    f"known brokers: {', '.join(map(str, sorted(known))) or 'none'}.")
    return result


def validate_topic_config(config: Mapping[str, Any]) -> dict[str, str]:
    """Names must be Kafka topic configs; values become strings (Kafka stores properties) and
    the settings the lab understands (``backend.core.config``) must parse."""
    result = {}
    for name, value in config.items():
        if name not in TOPIC_CONFIG_NAMES:
            raise InvalidConfigurationException(f"Unknown topic config name: {name}")
        if not isinstance(value, (str, int)):  # bool is an int: true/false
            raise InvalidConfigurationException(f"Invalid value {value!r} for configuration {name}: not a string")
        text = config_string(value)
        if name in SETTINGS:
            try:
                parse_value(name, text)
            except ConfigError as error:
                raise InvalidConfigurationException(f"Invalid value {text} for configuration {name}: {error}") from None
        result[name] = text
    return result


def new_partition_assignment(existing: Mapping[int, ReplicaAssignment], new_total: int,
                             assignment: Mapping[int, Sequence[int]] | None, brokers: list[int]
                             ) -> dict[int, tuple[int, ...]]:
    """The replicas of the partitions ``addPartitions`` adds to ``existing``: Kafka's algorithm
    with a fixed start (the first broker whose id is >= partition 0's preferred replica), or
    ``assignment`` as given once it lists exactly the new partitions over available brokers."""
    partition0 = existing[0].replicas
    count, rf = len(existing), len(partition0)
    if assignment is None:
        start = start_index_for_new_partitions(brokers, partition0)
        new = assign_replicas_to_brokers(new_total - count, rf, brokers, fixed_start_index=start,
                                         start_partition_id=count)
        return {p: tuple(r) for p, r in new.items()}
    ids = partition_ids(assignment)
    if ids != list(range(count, new_total)):
        raise InvalidReplicaAssignmentException(
            f"The assignment must list exactly the new partitions {list(range(count, new_total))}, got {ids}")
    new = {p: broker_list(assignment[p], f"partition id {p}") for p in ids}
    for p, replicas in new.items():
        if not set(replicas) <= set(brokers):
            raise BrokerNotAvailableException(
                f"Some brokers specified for partition id {p} are not available. Specified brokers: "
                f"{', '.join(map(str, replicas))}, available brokers: {', '.join(map(str, brokers))}.")
    bad = {p: len(r) for p, r in new.items() if len(r) != rf}
    if bad:
        raise InvalidReplicaAssignmentException(
            f"Inconsistent replication factor between partitions, partition 0 has {rf} while partitions "
            f"[{', '.join(map(str, bad))}] have replication factors [{', '.join(map(str, bad.values()))}], "
            "respectively.")
    return new
