"""``inter.broker.protocol.version``: which of Kafka 2.8's two worlds a cluster lives in.

Kafka 2.8 keeps the older brokers' behaviour for a rolling upgrade: a cluster runs the
inter-broker protocol its setting names until every broker runs the new code (Kafka's
``ApiVersion``). Three of its switches matter to the controller, and the lab follows them:

* ``isAlterIsrSupported`` (≥ 2.7-IV2): a leader asks the controller to change its ISR with an
  AlterIsr request; before, it wrote the state znode itself and announced the change under
  ``/isr_change_notification`` (and the controller watched reassigning partitions' state znodes);
* ``registration`` (≥ 2.7-IV0): ``/brokers/ids/<id>`` is written at version 5, with ``features``;
  before, at version 4;
* ``usesTopicId`` (≥ 2.8-IV0): topics get a topic id.

A short name ("2.7") means that release's last version ("2.7-IV2"), as Kafka's ``ApiVersion.apply`` reads it.
"""

from __future__ import annotations

VERSIONS: tuple[str, ...] = (
    "2.4-IV0", "2.4-IV1", "2.5-IV0", "2.6-IV0", "2.7-IV0", "2.7-IV1", "2.7-IV2", "2.8-IV0", "2.8-IV1")
"""Kafka's ``ApiVersion`` names the lab accepts, oldest first (2.4 … 2.8)."""

SHORT_NAMES: tuple[str, ...] = ("2.4", "2.5", "2.6", "2.7", "2.8")
NAMES: tuple[str, ...] = SHORT_NAMES + VERSIONS
"""Every value ``inter.broker.protocol.version`` may take."""


def _index(version: str) -> int:
    """Position in :data:`VERSIONS`; a short name is its release's last version."""
    if version in VERSIONS:
        return VERSIONS.index(version)
    if version in SHORT_NAMES:
        return max(i for i, v in enumerate(VERSIONS) if v.startswith(version + "-"))
    raise ValueError(f"inter.broker.protocol.version must be one of {', '.join(NAMES)}; got {version!r}")


def is_alter_isr_supported(version: str) -> bool:
    return _index(version) >= VERSIONS.index("2.7-IV2")


def broker_registration_version(version: str) -> int:
    """``KafkaZkClient.registerBroker``'s ``BrokerInfo`` version: 5 (with ``features``) from 2.7-IV0."""
    return 5 if _index(version) >= VERSIONS.index("2.7-IV0") else 4


def uses_topic_id(version: str) -> bool:
    return _index(version) >= VERSIONS.index("2.8-IV0")
