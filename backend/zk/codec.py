"""Every znode payload, byte for byte as Kafka 2.8 writes it (spec §1; ``kafka.zk.ZkData``).

Kafka writes compact JSON through Jackson maps, so key order is irrelevant; a few details are
not: ``/controller``'s ``timestamp`` and ``/cluster/id``'s ``version`` are *strings*,
``/controller_epoch`` is a bare ASCII integer, topic ids are 22-character base64url UUIDs.

Decoders are stricter than Kafka's where Kafka would fail later or silently misbehave, because
our znodes are edited by students with ``zkCli.sh``: malformed data raises
:class:`ZnodeFormatError` saying which znode and what is wrong ("partitions.0 must be a list of
broker ids"), which the runtime turns into a record. Empty data (``b""``, kazoo's null) decodes
as Kafka decodes ``null``: ``None`` or an empty collection, as each function says.
"""

from __future__ import annotations

import base64
import binascii
import json
import random
import re
import time
import uuid
from typing import Any, Iterable, Mapping, NamedTuple, Sequence

from backend.core.model import BrokerInfo, LeaderAndIsr, LeaderIsrAndControllerEpoch, ReplicaAssignment, TopicPartition

from . import paths


class ZnodeFormatError(ValueError):
    """A znode's data is not what Kafka writes there. ``path`` names the znode (or its kind)."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


# -- JSON helpers ------------------------------------------------------------------------------
def _dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


def _show(value: Any) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _parse(data: bytes | None, where: str) -> Any:
    """The JSON value in ``data``, or None when the znode has no data (Kafka's null)."""
    if not data:
        return None
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as error:
        raise ZnodeFormatError(where, f"data is not UTF-8 text (byte {error.start})") from None
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as error:
        raise ZnodeFormatError(where, f"data is not valid JSON ({error.msg} at line {error.lineno} "
                                      f"column {error.colno}): {text[:60]!r}") from None
    except ValueError as error:
        raise ZnodeFormatError(where, f"data is not valid JSON ({error})") from None


def _object(value: Any, where: str, field: str = "data") -> dict:
    if not isinstance(value, dict):
        raise ZnodeFormatError(where, f"{field} must be a JSON object, got {_show(value)}")
    return value


def _get(obj: dict, key: str, where: str, prefix: str = "") -> Any:
    if key not in obj:
        raise ZnodeFormatError(where, f"missing field {prefix}{key!r}")
    return obj[key]


def _int(value: Any, where: str, field: str, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ZnodeFormatError(where, f"{field} must be an integer, got {_show(value)}")
    if minimum is not None and value < minimum:
        raise ZnodeFormatError(where, f"{field} must be >= {minimum}, got {value}")
    return value


def _str(value: Any, where: str, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise ZnodeFormatError(where, f"{field} must be a non-empty string, got {_show(value)}")
    return value


def _version(obj: dict, where: str, allowed: tuple[Any, ...]) -> None:
    """Kafka's readers ignore ``version``; a zkCli user may omit it, but a wrong one is a typo."""
    if "version" in obj and (isinstance(obj["version"], bool) or obj["version"] not in allowed):
        raise ZnodeFormatError(where, f"unsupported version {_show(obj['version'])}; "
                                      f"Kafka 2.8 writes {' or '.join(map(json.dumps, allowed))}")


def _broker_ids(value: Any, where: str, field: str, allow_empty: bool = False) -> tuple[int, ...]:
    if not isinstance(value, list) or any(isinstance(b, bool) or not isinstance(b, int) or b < 0 for b in value):
        raise ZnodeFormatError(where, f"{field} must be a list of broker ids, got {_show(value)}")
    if not value and not allow_empty:
        raise ZnodeFormatError(where, f"{field} must not be empty")
    seen: set[int] = set()
    for broker in value:
        if broker in seen:
            raise ZnodeFormatError(where, f"{field} lists broker {broker} twice: {_show(value)}")
        seen.add(broker)
    return tuple(value)


# -- /controller and /controller_epoch (§2) -----------------------------------------------------
def encode_controller(broker_id: int, timestamp_ms: int | None = None) -> bytes:
    stamp = _now_ms() if timestamp_ms is None else timestamp_ms
    return _dumps({"version": 1, "brokerid": broker_id, "timestamp": str(stamp)})


def decode_controller(data: bytes | None, where: str = paths.CONTROLLER) -> int | None:
    """The controller's broker id (v1, or 3.4+'s v2); None for an empty znode."""
    value = _parse(data, where)
    if value is None:
        return None
    obj = _object(value, where)
    _version(obj, where, (1, 2))
    return _int(_get(obj, "brokerid", where), where, "brokerid", minimum=0)


def encode_controller_epoch(epoch: int) -> bytes:
    return str(epoch).encode("ascii")


_EPOCH = re.compile(rb"^(0|[1-9][0-9]*)$")


def decode_controller_epoch(data: bytes | None, where: str = paths.CONTROLLER_EPOCH) -> int:
    if not data or not _EPOCH.match(bytes(data)):
        raise ZnodeFormatError(where, f"must be a plain ASCII integer such as 1 (not JSON), got {bytes(data or b'')[:40]!r}")
    return int(data)


# -- /brokers/ids/<id> (§1.1) -------------------------------------------------------------------
_ENDPOINT = re.compile(r"^([A-Za-z0-9_-]+)://\[?([0-9A-Za-z\-%._:]*)\]?:([0-9]+)$")


def _connection_string(listener: str, host: str, port: int) -> str:
    return f"{listener}://[{host}]:{port}" if ":" in host else f"{listener}://{host}:{port}"


def encode_broker(host: str, port: int, timestamp_ms: int | None = None, rack: str | None = None,
                  jmx_port: int = -1, version: int = 4) -> bytes:
    """A broker registration with one PLAINTEXT listener. v4 is what Kafka writes with
    ``inter.broker.protocol.version`` < 2.7; v5 (IBP >= 2.7, 2.8's default) adds ``features``."""
    if version not in (4, 5):
        raise ValueError(f"broker registration version must be 4 or 5, got {version}")
    info: dict[str, Any] = {
        "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
        "endpoints": [_connection_string("PLAINTEXT", host, port)],
        "jmx_port": jmx_port, "host": host,
        "timestamp": str(_now_ms() if timestamp_ms is None else timestamp_ms),
        "port": port, "version": version,
    }
    if rack is not None:
        info["rack"] = rack
    if version >= 5:
        info["features"] = {}
    return _dumps(info)


def decode_broker(broker_id: int, data: bytes | None, czxid: int, where: str | None = None) -> BrokerInfo:
    """``BrokerIdZNode.decode`` plus the broker epoch, which is the znode's czxid (KIP-380)."""
    where = where or paths.broker_path(broker_id)
    obj = _object(_parse(data, where), where, "a broker registration")
    version = _int(_get(obj, "version", where), where, "version", minimum=1)
    _int(_get(obj, "jmx_port", where), where, "jmx_port")
    if version == 1:
        host = _str(_get(obj, "host", where), where, "host")
        port = _int(_get(obj, "port", where), where, "port", minimum=0)
    else:
        endpoints = _get(obj, "endpoints", where)
        if not isinstance(endpoints, list) or not endpoints or not all(isinstance(e, str) for e in endpoints):
            raise ZnodeFormatError(where, f"endpoints must be a non-empty list of 'LISTENER://host:port' "
                                          f"strings, got {_show(endpoints)}")
        parsed = []
        for i, endpoint in enumerate(endpoints):
            match = _ENDPOINT.match(endpoint)
            if not match:
                raise ZnodeFormatError(where, f"endpoints[{i}] must look like 'PLAINTEXT://host:9092', got {endpoint!r}")
            parsed.append((match.group(1), match.group(2), int(match.group(3))))
        _, host, port = next((e for e in parsed if e[0] == "PLAINTEXT"), parsed[0])
    rack = obj.get("rack")
    if rack is not None and not isinstance(rack, str):
        raise ZnodeFormatError(where, f"rack must be a string, got {_show(rack)}")
    return BrokerInfo(id=broker_id, epoch=czxid, host=host, port=port, rack=rack)


# -- topic ids and the cluster id (KIP-516) -----------------------------------------------------
ZERO_UUID = "AAAAAAAAAAAAAAAAAAAAAA"
METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"
"""Kafka 2.8's reserved ids (``Uuid.ZERO_UUID``, ``Uuid.METADATA_TOPIC_ID`` = Uuid(0, 1))."""
_BASE64URL = re.compile(r"^[A-Za-z0-9_-]{22}(==)?$")


def uuid_to_base64(value: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString()``: the 16 bytes (most significant first), base64url, no padding."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode("ascii")


def new_topic_id(source: random.Random | uuid.UUID | None = None) -> str:
    """Kafka's ``Uuid.randomUuid().toString()``: a random (version 4) UUID in base64url form,
    never a reserved id. Later Kafka versions also skip ids starting with '-' (they look like a
    command-line option); so do we, which only narrows the ids 2.8 could produce."""
    if isinstance(source, uuid.UUID):
        text = uuid_to_base64(source)
        if text in (ZERO_UUID, METADATA_TOPIC_ID):
            raise ValueError(f"{text} is a reserved topic id")
        return text
    while True:
        value = uuid.uuid4() if source is None else uuid.UUID(int=source.getrandbits(128), version=4)
        text = uuid_to_base64(value)
        if text not in (ZERO_UUID, METADATA_TOPIC_ID) and not text.startswith("-"):
            return text


new_cluster_id = new_topic_id
"""``/cluster/id`` uses the same form (``CoreUtils.generateUuidAsBase64``)."""


def parse_topic_id(text: Any, where: str = "topic id", field: str = "topic_id") -> str:
    """Validate a base64url UUID (Kafka's ``Uuid.fromString``) and return its 22-char form."""
    if not isinstance(text, str) or not _BASE64URL.match(text):
        raise ZnodeFormatError(where, f"{field} must be a 22-character base64url UUID, got {_show(text)}")
    try:
        raw = base64.urlsafe_b64decode(text[:22] + "==")
    except (binascii.Error, ValueError):  # pragma: no cover - the pattern admits only valid text
        raise ZnodeFormatError(where, f"{field} is not base64url: {text!r}") from None
    return uuid_to_base64(uuid.UUID(bytes=raw))


def encode_cluster_id(cluster_id: str) -> bytes:
    return _dumps({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes | None, where: str = paths.CLUSTER_ID) -> str:
    obj = _object(_parse(data, where), where)
    _version(obj, where, ("1",))
    return _str(_get(obj, "id", where), where, "id")


# -- /brokers/topics/<T> (§1.2) -----------------------------------------------------------------
TOPIC_ASSIGNMENT_VERSION = 3


class TopicIdReplicaAssignment(NamedTuple):
    """Kafka's ``TopicZNode.TopicIdReplicaAssignment`` (unpacks as ``assignment, topic_id``)."""

    assignment: dict[int, ReplicaAssignment]
    topic_id: str | None


def _as_replica_assignment(value: ReplicaAssignment | Sequence[int]) -> ReplicaAssignment:
    return value if isinstance(value, ReplicaAssignment) else ReplicaAssignment(tuple(value))


def encode_topic_assignment(assignment: Mapping[int, ReplicaAssignment | Sequence[int]],
                            topic_id: str | None = None) -> bytes:
    """``TopicZNode.encode``: 2.8 writes version 3 (with or without an id); ``adding_replicas``
    and ``removing_replicas`` are always present and list only partitions being reassigned."""
    partitions, adding, removing = {}, {}, {}
    for partition in sorted(assignment):
        replicas = _as_replica_assignment(assignment[partition])
        partitions[str(partition)] = list(replicas.replicas)
        if replicas.adding_replicas:
            adding[str(partition)] = list(replicas.adding_replicas)
        if replicas.removing_replicas:
            removing[str(partition)] = list(replicas.removing_replicas)
    value: dict[str, Any] = {"version": TOPIC_ASSIGNMENT_VERSION, "partitions": partitions,
                             "adding_replicas": adding, "removing_replicas": removing}
    if topic_id is not None:
        value["topic_id"] = parse_topic_id(topic_id)
    return _dumps(value)


_PARTITION_KEY = re.compile(r"^(0|[1-9][0-9]*)$")


def _replica_map(obj: dict, key: str, where: str) -> dict[str, tuple[int, ...]]:
    value = _object(obj.get(key, {}), where, key)
    for partition in value:
        if not _PARTITION_KEY.match(partition):
            raise ZnodeFormatError(where, f"{key} key {partition!r} must be a partition id like \"0\"")
    return {p: _broker_ids(r, where, f"{key}.{p}") for p, r in value.items()}


def decode_topic_assignment(topic: str, data: bytes | None, where: str | None = None) -> TopicIdReplicaAssignment:
    """Accepts v1 (1.1-2.3), v2 (2.4-2.7) and v3 (2.8); missing ``adding_replicas``,
    ``removing_replicas`` and ``topic_id`` are normal. Empty data: no partitions, no id (as Kafka)."""
    where = where or paths.topic_path(topic)
    value = _parse(data, where)
    if value is None:
        return TopicIdReplicaAssignment({}, None)
    obj = _object(value, where)
    _version(obj, where, (1, 2, 3))
    topic_id = parse_topic_id(obj["topic_id"], where) if "topic_id" in obj else None
    partitions = _replica_map({"partitions": _get(obj, "partitions", where)}, "partitions", where)
    adding = _replica_map(obj, "adding_replicas", where)
    removing = _replica_map(obj, "removing_replicas", where)
    for key, extra in (("adding_replicas", adding), ("removing_replicas", removing)):
        for partition, brokers in extra.items():
            if partition not in partitions:
                raise ZnodeFormatError(where, f"{key}.{partition} names a partition missing from partitions")
            stray = [b for b in brokers if b not in partitions[partition]]
            if stray:
                raise ZnodeFormatError(where, f"{key}.{partition} lists broker {stray[0]}, which is not in "
                                              f"partitions.{partition} {list(partitions[partition])}")
    assignment = {int(p): ReplicaAssignment(r, adding.get(p, ()), removing.get(p, ()))
                  for p, r in sorted(partitions.items(), key=lambda item: int(item[0]))}
    return TopicIdReplicaAssignment(assignment, topic_id)


# -- /brokers/topics/<T>/partitions/<P>/state (§1.3) --------------------------------------------
def encode_partition_state(state: LeaderIsrAndControllerEpoch) -> bytes:
    """Kafka's bytes, formatted directly: every field is an integer, so this is exactly what
    ``_dumps`` of the same dict gives (a test compares them) at a fraction of the cost — the
    controller encodes one per partition it moves, 2,000 for one failed broker in the bench."""
    leader_and_isr = state.leader_and_isr
    return b'{"controller_epoch":%d,"leader":%d,"version":1,"leader_epoch":%d,"isr":[%b]}' % (
        state.controller_epoch, leader_and_isr.leader, leader_and_isr.leader_epoch,
        b",".join(b"%d" % broker for broker in leader_and_isr.isr))


def decode_partition_state(data: bytes | None, zk_version: int,
                           where: str = "partition state") -> LeaderIsrAndControllerEpoch | None:
    """``TopicPartitionStateZNode.decode``; ``zk_version`` is the znode's dataVersion (the
    expected version of the next conditional write). None for an empty znode."""
    value = _parse(data, where)
    if value is None:
        return None
    obj = _object(value, where)
    _version(obj, where, (1,))
    leader = _int(_get(obj, "leader", where), where, "leader", minimum=-1)
    leader_epoch = _int(_get(obj, "leader_epoch", where), where, "leader_epoch", minimum=0)
    isr = _broker_ids(_get(obj, "isr", where), where, "isr", allow_empty=True)
    controller_epoch = _int(_get(obj, "controller_epoch", where), where, "controller_epoch", minimum=0)
    return LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, leader_epoch, isr, zk_version), controller_epoch)


# -- partition lists: /admin/reassign_partitions, /admin/preferred_replica_election,
#    /isr_change_notification/isr_change_<seq> (§13.1, §15.1, §16) ------------------------------
def _partition_entries(obj: dict, where: str) -> list[tuple[dict, TopicPartition, str]]:
    entries = _get(obj, "partitions", where)
    if not isinstance(entries, list):
        raise ZnodeFormatError(where, f"partitions must be a list of {{\"topic\":…,\"partition\":…}} objects, "
                                      f"got {_show(entries)}")
    result = []
    for i, entry in enumerate(entries):
        field = f"partitions[{i}]"
        entry = _object(entry, where, field)
        topic = _str(_get(entry, "topic", where, f"{field}."), where, f"{field}.topic")
        if "/" in topic:
            raise ZnodeFormatError(where, f"{field}.topic must not contain '/', got {topic!r}")
        partition = _int(_get(entry, "partition", where, f"{field}."), where, f"{field}.partition", minimum=0)
        result.append((entry, TopicPartition(topic, partition), field))
    return result


def _encode_partitions(partitions: Iterable[TopicPartition]) -> bytes:
    unique = dict.fromkeys(TopicPartition(*tp) for tp in partitions)
    return _dumps({"version": 1, "partitions": [{"topic": tp.topic, "partition": tp.partition} for tp in unique]})


def _decode_partitions(data: bytes | None, where: str) -> tuple[TopicPartition, ...]:
    value = _parse(data, where)
    if value is None:
        return ()
    obj = _object(value, where)
    _version(obj, where, (1,))
    return tuple(dict.fromkeys(tp for _, tp, _ in _partition_entries(obj, where)))


def encode_reassignment(reassignment: Mapping[TopicPartition, Sequence[int]]) -> bytes:
    return _dumps({"version": 1, "partitions": [
        {"topic": tp.topic, "partition": tp.partition, "replicas": list(replicas)}
        for tp, replicas in reassignment.items()]})


def decode_reassignment(data: bytes | None,
                        where: str = paths.REASSIGN_PARTITIONS) -> dict[TopicPartition, tuple[int, ...]]:
    """Target replicas per partition; {} for an empty znode."""
    value = _parse(data, where)
    if value is None:
        return {}
    obj = _object(value, where)
    _version(obj, where, (1,))
    result: dict[TopicPartition, tuple[int, ...]] = {}
    for entry, tp, field in _partition_entries(obj, where):
        if tp in result:
            raise ZnodeFormatError(where, f"{field} lists partition {tp} a second time")
        result[tp] = _broker_ids(_get(entry, "replicas", where, f"{field}."), where, f"{field}.replicas")
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
    return _dumps({"version": 1, "config": dict(config)})


def decode_topic_config(data: bytes | None, where: str = "topic config") -> dict[str, str]:
    """The overrides; {} for an empty znode (Kafka reads null as no overrides)."""
    value = _parse(data, where)
    if value is None:
        return {}
    obj = _object(value, where)
    _version(obj, where, (1,))
    config = _object(_get(obj, "config", where), where, "config")
    for name, item in config.items():
        if not isinstance(item, str):
            raise ZnodeFormatError(where, f"config.{name} must be a string (Kafka stores properties as "
                                          f"strings, e.g. \"true\"), got {_show(item)}")
    return dict(config)


def encode_config_change(entity_path: str) -> bytes:
    """The change notification brokers' config managers watch: ``entity_path`` is e.g. ``topics/T``."""
    return _dumps({"version": 2, "entity_path": entity_path})


def decode_config_change(data: bytes | None, where: str = "config change notification") -> str:
    """The entity path, e.g. ``topics/T``."""
    obj = _object(_parse(data, where), where)
    _version(obj, where, (2,))
    return _str(_get(obj, "entity_path", where), where, "entity_path")
