"""Kafka-shaped value types for scripts: brokers, topics, ``t-0`` partition keys, ``t-0/1``
replica keys, settings, replica assignments and znode paths.

They follow Kafka's own rules where Kafka has them (topic names: ``[a-zA-Z0-9._-]{1,249}`` and
not ``.`` or ``..``, as ``kafka.common.Topic`` checks; an assignment lists partitions 0..n-1, each
with the same number of distinct brokers, as ``AdminZkClient`` checks), so a script that loads
here describes something Kafka would accept too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from backend.core.config import SETTINGS, ConfigError, parse_value
from backend.faultscript.limits import MAX_BROKERS, MAX_PARTITIONS_PER_TOPIC
from backend.faultscript.types import (FieldType, Int, ListOf, MapOf, Ref, Str, is_int, name_of,
                                          shown, suggestion)

TOPIC_PATTERN = r"(?!\.\.?$)[a-zA-Z0-9._-]{1,249}"
# The same rule inside a partition key "t-0" or a replica key "t-0/1", for the JSON Schema.
PARTITION_KEY_PATTERN = r"(?!\.\.?-[0-9]+(?:/|$))[a-zA-Z0-9._-]{1,249}-[0-9]+"
MAX_BROKER_ID = 1000

BROKER = Int(0, MAX_BROKER_ID, ref="broker", label=f"a broker id from 0 to {MAX_BROKER_ID}")
PARTITION = Int(0, label="a partition number (an integer of at least 0)")
TOPIC_NAME = Str(TOPIC_PATTERN, "a topic name (1 to 249 letters, digits, '.', '_' or '-')")
TOPIC = Str(TOPIC_PATTERN, TOPIC_NAME.label, ref="topic")
BROKER_LIST = ListOf(BROKER, min_items=1, max_items=MAX_BROKERS, unique=True, label="a list of distinct broker ids")


def parse_partition_key(key: str) -> tuple[str, int]:
    """``"orders-0"`` -> ``("orders", 0)``; the topic may contain dashes, so split at the last one."""
    if not isinstance(key, str):
        raise ValueError(f"a partition is written topic-number, like orders-0; got {shown(key)}")
    topic, dash, number = key.rpartition("-")
    if not dash or not number.isdigit() or not number.isascii():
        raise ValueError(f"{key!r} is not a partition: write the topic, a dash and the partition "
                         f"number, like orders-0")
    if not re.fullmatch(TOPIC_PATTERN, topic):
        raise ValueError(f"{key!r} is not a partition: {topic!r} is not a valid topic name "
                         f"(1 to 249 letters, digits, '.', '_' or '-')")
    return topic, int(number)


class PartitionKey(FieldType):
    """``"t-0"``: topic, dash, partition number. Normalised to its canonical spelling."""

    label = "a partition like orders-0 (topic, dash, partition number)"

    def check(self, value, path):
        try:
            topic, partition = parse_partition_key(value)
        except ValueError as error:
            return value, [(path, f"{name_of(path)}: {error}")]
        return f"{topic}-{partition}", []

    def key_schema(self):
        return {"pattern": f"^{PARTITION_KEY_PATTERN}$"}

    def schema(self):
        return {"type": "string", **self.key_schema()}

    def refs(self, value, path):
        return [Ref("partition", parse_partition_key(value), path)]


class ReplicaKey(FieldType):
    """``"t-0/1"``: the replica of partition t-0 on broker 1 (Kafka's ``PartitionAndReplica``)."""

    label = "a replica like orders-0/1 (partition, slash, broker id)"

    def check(self, value, path):
        partition, slash, broker = value.rpartition("/") if isinstance(value, str) else ("", "", "")
        try:
            topic, number = parse_partition_key(partition)
        except ValueError:
            slash = ""
        if not slash or not broker.isdigit() or not broker.isascii() or int(broker) > MAX_BROKER_ID:
            return value, [(path, f"{name_of(path)} must be {self.label}, got {shown(value)}")]
        return f"{topic}-{number}/{int(broker)}", []

    def key_schema(self):
        return {"pattern": f"^{PARTITION_KEY_PATTERN}/[0-9]+$"}

    def schema(self):
        return {"type": "string", **self.key_schema()}

    def refs(self, value, path):
        partition, _, broker = value.rpartition("/")
        return [Ref("partition", parse_partition_key(partition), path), Ref("broker", int(broker), path)]


class SettingName(FieldType):
    """A Kafka setting the lab knows (``backend.core.config.SETTINGS``)."""

    label = "a Kafka setting name such as zookeeper.session.timeout.ms"

    def check(self, value, path):
        if isinstance(value, str) and value in SETTINGS:
            return value, []
        return value, [(path, unknown_setting(value))]

    def schema(self):
        return {"enum": sorted(SETTINGS)}


def unknown_setting(name) -> str:
    return (f"unknown setting {name!r}{suggestion(name, SETTINGS)} "
            f"(the lab's settings are listed in backend/core/config.py)")


def setting_schema(name: str) -> dict:
    """The JSON Schema of one setting's value: its YAML type, and null only if Kafka has no default."""
    setting = SETTINGS[name]
    bounds = {"minimum": setting.minimum, **({"maximum": setting.maximum} if setting.maximum is not None else {})}
    base = {bool: {"type": "boolean"}, int: {"type": "integer", **bounds}}.get(setting.type, {"type": "string"})
    if setting.choices is not None:  # YAML reads 2.6 as a number: both spellings are allowed
        numbers = sorted({float(c) for c in setting.choices if _is_number(c)})
        base = {"anyOf": [{"enum": list(setting.choices)}, *([{"enum": numbers}] if numbers else [])]}
    return {"anyOf": [base, {"type": "null"}]} if setting.kafka_default is None else base


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def check_setting_value(name: str, value) -> tuple[object, str | None]:
    """``value`` parsed for setting ``name``, or an error message.

    A script gives typed YAML values, so the type must match (``true``, not ``"true"``) before
    ``parse_value`` checks the rest; null is accepted only where Kafka's own default is none,
    because "no value" for any other setting would leave the broker without one.
    """
    setting = SETTINGS[name]
    if value is None:
        return (None, None) if setting.kafka_default is None else (value, f"{name} must have a value, not null")
    text = isinstance(value, str) or (setting.choices is not None and isinstance(value, float))
    expected = {bool: (isinstance(value, bool), "true or false"),
                int: (is_int(value), "an integer of at least 0")}.get(setting.type, (text, "text"))
    if not expected[0]:
        return value, f"{name} must be {expected[1]}, got {shown(value)}"
    try:
        return parse_value(name, value), None
    except ConfigError as error:
        return value, str(error)


@dataclass(frozen=True)
class ConfigMap(FieldType):
    """``{setting: value}``; with ``topic_level`` only settings Kafka allows per topic."""

    topic_level: bool = False

    @property
    def label(self) -> str:  # type: ignore[override]
        return "a mapping of topic-level settings" if self.topic_level else "a mapping of Kafka settings"

    def names(self) -> list[str]:
        return sorted(n for n, s in SETTINGS.items() if s.topic_level or not self.topic_level)

    def check(self, value, path):
        if not isinstance(value, dict):
            return value, [(path, f"{name_of(path)} must be {self.label}, got {shown(value)}")]
        out, issues = {}, []
        for name, item in value.items():
            if name not in SETTINGS:
                issues.append((path + (name,), unknown_setting(name)))
            elif self.topic_level and not SETTINGS[name].topic_level:
                issues.append((path + (name,), not_topic_level(name)))
            else:
                out[name], problem = check_setting_value(name, item)
                if problem:
                    issues.append((path + (name,), problem))
        return out, issues

    def schema(self):
        return {"type": "object", "additionalProperties": False,
                "properties": {name: setting_schema(name) for name in self.names()}}


def not_topic_level(name: str) -> str:
    allowed = ", ".join(n for n, s in SETTINGS.items() if s.topic_level)
    return f"{name} is a broker-wide setting and cannot be set for one topic (topic-level settings: {allowed})"


class Assignment(MapOf):
    """``{partition: [broker, ...]}``: partitions 0..n-1, each with the same number of distinct brokers."""

    def __init__(self, max_partitions: int = MAX_PARTITIONS_PER_TOPIC) -> None:
        super().__init__(PARTITION, BROKER_LIST, min_items=1, max_items=max_partitions,
                         label="a replica assignment like {0: [1, 0], 1: [0, 1]}")

    def check(self, value, path):
        out, issues = super().check(value, path)
        if issues:
            return out, issues
        if sorted(out) != list(range(len(out))):
            issues.append((path, f"{name_of(path)} must list partitions 0 to {len(out) - 1} "
                                 f"(got {sorted(out)})"))
        if len({len(replicas) for replicas in out.values()}) > 1:
            issues.append((path, f"{name_of(path)}: every partition must have the same number of "
                                 f"replicas (got {[len(out[p]) for p in sorted(out)]})"))
        return out, issues


class NewPartitionsAssignment(MapOf):
    """The replicas of the partitions ``add_partitions`` creates; the ids are checked per topic."""

    def __init__(self) -> None:
        super().__init__(PARTITION, BROKER_LIST, min_items=1, max_items=MAX_PARTITIONS_PER_TOPIC,
                         label="a replica assignment of the new partitions like {3: [1, 0]}")


ZNODE_PATH = Str(r"/|(/[^/\x00]+)+", "a znode path such as /controller")


class ZnodeExpectation(FieldType):
    """The data a znode should hold (compared as decoded JSON or text), or ``{exists: false}``."""

    label = "the expected data, or {exists: false} / {exists: true}"

    def check(self, value, path):
        if isinstance(value, dict) and "exists" in value:
            if set(value) != {"exists"} or not isinstance(value["exists"], bool):
                return value, [(path, f"{name_of(path)}: write {{exists: false}} or {{exists: true}} "
                                      f"alone, got {dict(value)!r}")]
        return value, []

    def schema(self):
        return {"if": {"type": "object", "required": ["exists"]},
                "then": {"properties": {"exists": {"type": "boolean"}}, "additionalProperties": False}}


ZNODES = MapOf(ZNODE_PATH, ZnodeExpectation(), min_items=1,
               label="a mapping from znode path to expected data or {exists: false}")
