"""What the admin tools and the brokers' notifications write: the partition lists of
``/admin/reassign_partitions``, ``/admin/preferred_replica_election`` and
``/isr_change_notification``, and topic and broker configs with their change notifications.
"""

from __future__ import annotations

from typing import Iterable, Mapping, Sequence

from backend.core.model import TopicPartition
from backend.zk import paths

from .format import (
    ZnodeFormatError, broker_ids, check_version, dumps, int_field, json_object, parse_json, required_key, show,
    str_field,
)


# -- partition lists: /admin/reassign_partitions, /admin/preferred_replica_election,
#    /isr_change_notification/isr_change_<seq> (§13.1, §15.1, §16) ------------------------------
def _partition_entries(obj: dict, where: str) -> list[tuple[dict, TopicPartition, str]]:
    entries = required_key(obj, "partitions", where)
    if not isinstance(entries, list):
        raise ZnodeFormatError(where, f"partitions must be a list of {{\"topic\":…,\"partition\":…}} objects, "
                                      f"got {show(entries)}")
    result = []
    for i, entry in enumerate(entries):
        field = f"partitions[{i}]"
        entry = json_object(entry, where, field)
        topic = str_field(required_key(entry, "topic", where, f"{field}."), where, f"{field}.topic")
        if "/" in topic:
            raise ZnodeFormatError(where, f"{field}.topic must not contain '/', got {topic!r}")
        partition = int_field(required_key(entry, "partition", where, f"{field}."), where, f"{field}.partition", minimum=0)
        result.append((entry, TopicPartition(topic, partition), field))
    return result


def _encode_partitions(partitions: Iterable[TopicPartition]) -> bytes:
    unique = dict.fromkeys(TopicPartition(*tp) for tp in partitions)
    return dumps({"version": 1, "partitions": [{"topic": tp.topic, "partition": tp.partition} for tp in unique]})


def _decode_partitions(data: bytes | None, where: str) -> tuple[TopicPartition, ...]:
    value = parse_json(data, where)
    if value is None:
        return ()
    obj = json_object(value, where)
    check_version(obj, where, (1,))
    return tuple(dict.fromkeys(tp for _, tp, _ in _partition_entries(obj, where)))


def encode_reassignment(reassignment: Mapping[TopicPartition, Sequence[int]]) -> bytes:
    return dumps({"version": 1, "partitions": [
        {"topic": tp.topic, "partition": tp.partition, "replicas": list(replicas)}
        for tp, replicas in reassignment.items()]})


def decode_reassignment(data: bytes | None,
                        where: str = paths.REASSIGN_PARTITIONS) -> dict[TopicPartition, tuple[int, ...]]:
    """Target replicas per partition; {} for an empty znode."""
    value = parse_json(data, where)
    if value is None:
        return {}
    obj = json_object(value, where)
    check_version(obj, where, (1,))
    result: dict[TopicPartition, tuple[int, ...]] = {}
    for entry, tp, field in _partition_entries(obj, where):
        if tp in result:
            raise ZnodeFormatError(where, f"{field} lists partition {tp} a second time")
        result[tp] = broker_ids(required_key(entry, "replicas", where, f"{field}."), where, f"{field}.replicas")
    return result


def encode_preferred_replica_election(partitions: Iterable[TopicPartition]) -> bytes:
    return _encode_partitions(partitions)


def decode_preferred_replica_election(data: bytes | None,
                                      where: str = paths.PREFERRED_REPLICA_ELECTION) -> tuple[TopicPartition, ...]:
    """The partitions to elect, duplicates dropped (Kafka reads a set); () for an empty znode."""
    return _decode_partitions(data, where)


def encode_isr_change_notification(partitions: Iterable[TopicPartition]) -> bytes:
    return _encode_partitions(partitions)


def decode_isr_change_notification(data: bytes | None,
                                   where: str = "isr change notification") -> tuple[TopicPartition, ...]:
    return _decode_partitions(data, where)


# -- /config/topics/<T> and /config/changes/config_change_<seq> ---------------------------------
def encode_topic_config(config: Mapping[str, str]) -> bytes:
    """``ConfigEntityZNode.encode``: Kafka stores ``Properties``, so every value is a string."""
    for name, value in config.items():
        if not isinstance(name, str) or not isinstance(value, str):
            raise TypeError(f"topic config names and values must be strings, got {name!r}: {value!r}")
    return dumps({"version": 1, "config": dict(config)})


def decode_topic_config(data: bytes | None, where: str = "topic config") -> dict[str, str]:
    """The overrides; {} for an empty znode (Kafka reads null as no overrides)."""
    value = parse_json(data, where)
    if value is None:
        return {}
    obj = json_object(value, where)
    check_version(obj, where, (1,))
    config = json_object(required_key(obj, "config", where), where, "config")
    for name, item in config.items():
        if not isinstance(item, str):
            raise ZnodeFormatError(where, f"config.{name} must be a string (Kafka stores properties as "
                                          f"strings, e.g. \"true\"), got {show(item)}")
    return dict(config)


def encode_config_change(entity_path: str) -> bytes:
    """The change notification brokers' config managers watch: ``entity_path`` is e.g. ``topics/T``."""
    return dumps({"version": 2, "entity_path": entity_path})


def decode_config_change(data: bytes | None, where: str = "config change notification") -> str:
    """The entity path, e.g. ``topics/T``."""
    obj = json_object(parse_json(data, where), where)
    check_version(obj, where, (2,))
    return str_field(required_key(obj, "entity_path", where), where, "entity_path")
