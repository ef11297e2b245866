"""Every znode payload, byte for byte as Kafka 2.8 writes it (spec §1; ``kafka.zk.ZkData``).

Kafka writes compact JSON through Jackson maps, so key order is irrelevant; a few details are
not: ``/controller``'s ``timestamp`` and ``/cluster/id``'s ``version`` are *strings*,
``/controller_epoch`` is a bare ASCII integer, topic ids are 22-character base64url UUIDs.

Decoders are stricter than Kafka's where Kafka would fail later or silently misbehave, because
our znodes are edited by students with ``zkCli.sh``: malformed data raises
:class:`ZnodeFormatError` saying which znode and what is wrong ("partitions.0 must be a list of
broker ids"), which the runtime turns into a record. Empty data (``b""``, kazoo's null) decodes
as Kafka decodes ``null``: ``None`` or an empty collection, as each function says.

The payloads are grouped by znode family, one module each: ``controller.py`` (``/controller``,
``/controller_epoch``), ``brokers.py`` (``/brokers/ids``), ``topics.py`` (topic ids, the cluster
id, ``/brokers/topics`` and partition states), ``admin.py`` (reassignment, preferred election,
ISR change notifications, configs); ``format.py`` reads JSON strictly. Callers use this
package's names (``codec.decode_partition_state``), not the modules.
"""

from __future__ import annotations

from .format import ZnodeFormatError
from .controller import decode_controller, decode_controller_epoch, encode_controller, encode_controller_epoch
from .brokers import decode_broker, encode_broker
from .topics import (
    METADATA_TOPIC_ID, TOPIC_ASSIGNMENT_VERSION, TopicIdReplicaAssignment, ZERO_UUID, decode_cluster_id,
    decode_partition_state, decode_topic_assignment, encode_cluster_id, encode_partition_state,
    encode_topic_assignment, new_cluster_id, new_topic_id, parse_topic_id, uuid_to_base64,
)
from .admin import (
    decode_config_change, decode_isr_change_notification, decode_preferred_replica_election, decode_reassignment,
    decode_topic_config, encode_config_change, encode_isr_change_notification, encode_preferred_replica_election,
    encode_reassignment, encode_topic_config,
)
