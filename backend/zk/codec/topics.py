"""Topics: ids and the cluster id (KIP-516), ``/brokers/topics/<T>`` (§1.2) and each partition's
``state`` znode (§1.3).
"""

from __future__ import annotations

import base64
import binascii
import random
import re
import uuid
from typing import Any, Mapping, NamedTuple, Sequence

from backend.core.model import LeaderAndIsr, LeaderIsrAndControllerEpoch, ReplicaAssignment
from backend.zk import paths

from .format import (
    ZnodeFormatError, broker_ids, check_version, dumps, int_field, json_object, parse_json, required_key, show,
    str_field,
)


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
        raise ZnodeFormatError(where, f"{field} must be a 22-character base64url UUID, got {show(text)}")
    try:
        raw = base64.urlsafe_b64decode(text[:22] + "==")
    except (binascii.Error, ValueError):  # pragma: no cover - the pattern admits only valid text
        raise ZnodeFormatError(where, f"{field} is not base64url: {text!r}") from None
    return uuid_to_base64(uuid.UUID(bytes=raw))


def encode_cluster_id(cluster_id: str) -> bytes:
    return dumps({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes | None, where: str = paths.CLUSTER_ID) -> str:
    obj = json_object(parse_json(data, where), where)
    check_version(obj, where, ("1",))
    return str_field(required_key(obj, "id", where), where, "id")


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
    return dumps(value)


_PARTITION_KEY = re.compile(r"^(0|[1-9][0-9]*)$")


def _replica_map(obj: dict, key: str, where: str) -> dict[str, tuple[int, ...]]:
    value = json_object(obj.get(key, {}), where, key)
    for partition in value:
        if not _PARTITION_KEY.match(partition):
            raise ZnodeFormatError(where, f"{key} key {partition!r} must be a partition id like \"0\"")
    return {p: broker_ids(r, where, f"{key}.{p}") for p, r in value.items()}


def decode_topic_assignment(topic: str, data: bytes | None, where: str | None = None) -> TopicIdReplicaAssignment:
    """Accepts v1 (1.1-2.3), v2 (2.4-2.7) and v3 (2.8); missing ``adding_replicas``,
    ``removing_replicas`` and ``topic_id`` are normal. Empty data: no partitions, no id (as Kafka)."""
    where = where or paths.topic_path(topic)
    value = parse_json(data, where)
    if value is None:
        return TopicIdReplicaAssignment({}, None)
    obj = json_object(value, where)
    check_version(obj, where, (1, 2, 3))
    topic_id = parse_topic_id(obj["topic_id"], where) if "topic_id" in obj else None
    partitions = _replica_map({"partitions": required_key(obj, "partitions", where)}, "partitions", where)
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
    value = parse_json(data, where)
    if value is None:
        return None
    obj = json_object(value, where)
    check_version(obj, where, (1,))
    leader = int_field(required_key(obj, "leader", where), where, "leader", minimum=-1)
    leader_epoch = int_field(required_key(obj, "leader_epoch", where), where, "leader_epoch", minimum=0)
    isr = broker_ids(required_key(obj, "isr", where), where, "isr", allow_empty=True)
    controller_epoch = int_field(required_key(obj, "controller_epoch", where), where, "controller_epoch", minimum=0)
    return LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, leader_epoch, isr, zk_version), controller_epoch)
