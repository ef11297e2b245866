"""Every znode path Kafka 2.8 uses, under Kafka's names (spec §1; ``kafka.zk.ZkData``).

Paths are relative to the cluster's chroot: the kazoo client is started with
``join_chroot(hosts, default_chroot(cluster_id))``, so ``/controller`` here is
``/kclab/<cluster_id>/controller`` on the server, and ``zkCli.sh -server host:port/kclab/<id>``
shows exactly Kafka's layout. Many sandboxes share one ZooKeeper that way (DESIGN.md).

Topic names are validated the Kafka way by the admin layer (``admin_validation.validate_topic_name``);
here a name only has to be one non-empty path segment, so a bad name can never address
another znode.
"""

from __future__ import annotations

import re

from backend.core.model import TopicPartition

# -- the controller (spec §2) ------------------------------------------------------------------
CONTROLLER = "/controller"
"""Ephemeral; the active controller's id. Its creation is the controller election."""
CONTROLLER_EPOCH = "/controller_epoch"
"""Plain ASCII integer; its dataVersion is the fencing token of every controller write (§3)."""

# -- brokers and topics ------------------------------------------------------------------------
BROKERS = "/brokers"
BROKER_IDS = "/brokers/ids"
BROKER_TOPICS = "/brokers/topics"
BROKER_SEQID = "/brokers/seqid"

# -- admin requests the controller watches (§9, §13.1, §14, §15) -------------------------------
ADMIN = "/admin"
DELETE_TOPICS = "/admin/delete_topics"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
PREFERRED_REPLICA_ELECTION = "/admin/preferred_replica_election"

# -- notifications (persistent-sequential children; ZooKeeper appends a 10-digit suffix) -------
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
ISR_CHANGE_PREFIX = "isr_change_"
"""Child-name prefix (Kafka's ``IsrChangeNotificationSequenceZNode.SequenceNumberPrefix``)."""
LOG_DIR_EVENT_NOTIFICATION = "/log_dir_event_notification"
LOG_DIR_EVENT_PREFIX = "log_dir_event_"

# -- configs -----------------------------------------------------------------------------------
CONFIG = "/config"
CONFIG_TOPICS = "/config/topics"
CONFIG_CLIENTS = "/config/clients"
CONFIG_USERS = "/config/users"
CONFIG_BROKERS = "/config/brokers"
CONFIG_CHANGES = "/config/changes"
CONFIG_CHANGE_PREFIX = "config_change_"

# -- misc --------------------------------------------------------------------------------------
CLUSTER = "/cluster"
CLUSTER_ID = "/cluster/id"
LATEST_PRODUCER_ID_BLOCK = "/latest_producer_id_block"
CONSUMERS = "/consumers"
FEATURE = "/feature"

PERSISTENT_PATHS: tuple[str, ...] = (
    CONSUMERS, BROKER_IDS, BROKER_TOPICS, CONFIG_CHANGES, DELETE_TOPICS, BROKER_SEQID,
    ISR_CHANGE_NOTIFICATION, LATEST_PRODUCER_ID_BLOCK, LOG_DIR_EVENT_NOTIFICATION,
    CONFIG_TOPICS, CONFIG_CLIENTS, CONFIG_USERS, CONFIG_BROKERS,
)
"""Kafka 2.8's ``ZkData.PersistentZkPaths`` in its order: every broker creates them (empty) at
startup if missing (§1). ``/config/ips`` is 3.x only."""

SEQUENCE_DIGITS = 10


def _segment(name: str, what: str) -> str:
    if not isinstance(name, str) or not name or "/" in name or name in (".", ".."):
        raise ValueError(f"{what} must be a non-empty string without '/' (and not '.' or '..'), got {name!r}")
    return name


def _partition_id(partition: int) -> int:
    if isinstance(partition, bool) or not isinstance(partition, int) or partition < 0:
        raise ValueError(f"a partition id must be a non-negative integer, got {partition!r}")
    return partition


def broker_path(broker_id: int) -> str:
    if isinstance(broker_id, bool) or not isinstance(broker_id, int) or broker_id < 0:
        raise ValueError(f"a broker id must be a non-negative integer, got {broker_id!r}")
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{BROKER_TOPICS}/{_segment(topic, 'a topic name')}"


def topic_partitions_path(topic: str) -> str:
    return f"{topic_path(topic)}/partitions"


def partition_path(topic: str, partition: int) -> str:
    return f"{topic_partitions_path(topic)}/{_partition_id(partition)}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{partition_path(topic, partition)}/state"


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS}/{_segment(topic, 'a topic name')}"


def topic_config_path(topic: str) -> str:
    return f"{CONFIG_TOPICS}/{_segment(topic, 'a topic name')}"


BROKER_DEFAULT_CONFIG = f"{CONFIG_BROKERS}/<default>"
"""Where ``kafka-configs.sh --entity-type brokers --entity-default`` keeps cluster-wide dynamic
broker configs (KIP-226); brokers merge it over their ``server.properties``."""


def isr_change_path(sequence_number: str = "") -> str:
    """``/isr_change_notification/isr_change_<seq>``; with no number, the path to create
    sequentially (ZooKeeper appends the number)."""
    return f"{ISR_CHANGE_NOTIFICATION}/{ISR_CHANGE_PREFIX}{sequence_number}"


def config_change_path(sequence_number: str = "") -> str:
    return f"{CONFIG_CHANGES}/{CONFIG_CHANGE_PREFIX}{sequence_number}"


def log_dir_event_path(sequence_number: str = "") -> str:
    return f"{LOG_DIR_EVENT_NOTIFICATION}/{LOG_DIR_EVENT_PREFIX}{sequence_number}"


# -- parsers -----------------------------------------------------------------------------------
_NUMBER = r"(0|[1-9][0-9]*)"
_STATE_PATH = re.compile(rf"^{re.escape(BROKER_TOPICS)}/([^/]+)/partitions/{_NUMBER}/state$")
_TOPIC_PATH = re.compile(rf"^{re.escape(BROKER_TOPICS)}/([^/]+)$")
_BROKER_PATH = re.compile(rf"^{re.escape(BROKER_IDS)}/{_NUMBER}$")
_BROKER_ID = re.compile(rf"^{_NUMBER}$")


def parse_partition_state_path(path: str) -> TopicPartition | None:
    """``/brokers/topics/T/partitions/P/state`` -> ``TopicPartition(T, P)``; else None."""
    match = _STATE_PATH.match(path)
    return TopicPartition(match.group(1), int(match.group(2))) if match else None


def parse_topic_path(path: str) -> str | None:
    """``/brokers/topics/T`` -> ``T``; else None."""
    match = _TOPIC_PATH.match(path)
    return match.group(1) if match else None


def parse_broker_path(path: str) -> int | None:
    """``/brokers/ids/3`` -> 3; else None."""
    match = _BROKER_PATH.match(path)
    return int(match.group(1)) if match else None


def parse_broker_id(child_name: str) -> int | None:
    """A child name of ``/brokers/ids`` as a broker id, or None if it is not one
    (Kafka would fail on such a name; the caller decides what to report)."""
    return int(child_name) if _BROKER_ID.match(child_name) else None


def sequence_number(child_name: str, prefix: str) -> str | None:
    """The sequence suffix of ``<prefix><10 digits>`` (Kafka's ``sequenceNumber``), or None
    when ``child_name`` is not such a child (e.g. a znode a student created by hand)."""
    if not child_name.startswith(prefix):
        return None
    suffix = child_name[len(prefix):]
    return suffix if len(suffix) == SEQUENCE_DIGITS and suffix.isdigit() else None


# -- chroots -----------------------------------------------------------------------------------
KCLAB_ROOT = "/kclab"
_CLUSTER_ID = re.compile(r"^[A-Za-z0-9._-]+$")


def default_chroot(cluster_id: str) -> str:
    """``/kclab/<cluster_id>``: each lab cluster gets its own subtree of a shared ZooKeeper."""
    if not isinstance(cluster_id, str) or not _CLUSTER_ID.match(cluster_id) or cluster_id in (".", ".."):
        raise ValueError(f"a cluster id may contain only letters, digits, '-', '_' and '.' "
                         f"(and may not be '.' or '..'), got {cluster_id!r}")
    return f"{KCLAB_ROOT}/{cluster_id}"


def join_chroot(hosts: str, chroot: str) -> str:
    """A kazoo/ZooKeeper connect string: ``"h1:2181,h2:2181" + "/kclab/a"`` ->
    ``"h1:2181,h2:2181/kclab/a"`` (the chroot follows the last host, ZooKeeper's syntax)."""
    hosts = hosts.strip()
    if not hosts or "/" in hosts:
        raise ValueError(f"hosts must be 'host:port[,host:port...]' without a chroot, got {hosts!r}")
    if not chroot.startswith("/") or "//" in chroot or (len(chroot) > 1 and chroot.endswith("/")):
        raise ValueError(f"a chroot must be an absolute znode path like '/kclab/demo', got {chroot!r}")
    if any(part in (".", "..") for part in chroot.split("/")):
        raise ValueError(f"a chroot may not contain '.' or '..' segments, got {chroot!r}")
    return hosts if chroot == "/" else hosts + chroot


def zk_servers(hosts: str) -> list[tuple[str, int]]:
    """``HOST:PORT,HOST:PORT`` (no chroot) as ``[(host, port), …]``; an empty host is loopback."""
    servers = []
    for host_port in hosts.split(","):
        host, _, port = host_port.strip().rpartition(":")
        servers.append((host or "127.0.0.1", int(port)))
    return servers
