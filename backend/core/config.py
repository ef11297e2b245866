"""The Kafka settings the lab understands, under Kafka's own names.

Each setting has Kafka 2.8's default and the lab's default. The lab's defaults run at
teaching speed (a paused broker's session expires in seconds, not 18 s; the leader-imbalance
check runs every 30 s, not every 5 minutes); a lesson or script may set any of them back to
Kafka's value. Settings that Kafka hard-codes but a classroom needs to speed up are prefixed
``kclab.`` so nobody mistakes them for Kafka settings.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Mapping

from .ibp import NAMES as IBP_NAMES


@dataclass(frozen=True)
class Setting:
    name: str
    type: type
    kafka_default: Any
    lab_default: Any
    doc: str
    topic_level: bool = False
    maximum: int | None = None
    """The largest value an integer setting may take; 0 is the smallest unless ``minimum`` says."""
    minimum: int = 0
    static: bool = False
    """Kafka reads it once, when the broker starts (a "read-only" broker setting): a change
    applies to a broker only after it restarts."""
    choices: tuple[str, ...] | None = None
    """The only values a text setting may take (a YAML number such as ``2.6`` is read as text)."""


# ZooKeeper accepts session timeouts of 2 to 20 ticks unless its server sets other bounds; the
# lab's embedded server (tickTime 500, maxSessionTimeout 60000) allows 1 s to 60 s. A value
# outside is refused instead of being silently clamped (or, for 2**40 ms, killing kazoo's
# connection thread with an overflow).
ZK_MIN_SESSION_TIMEOUT_MS, ZK_MAX_SESSION_TIMEOUT_MS = 1000, 60_000
HOUR_MS = 3_600_000


SETTINGS: Mapping[str, Setting] = MappingProxyType({s.name: s for s in (
    Setting("zookeeper.session.timeout.ms", int, 18000, 4000,
            "How long ZooKeeper waits for a silent broker before its session (and /brokers/ids/<id>) expires.",
            minimum=ZK_MIN_SESSION_TIMEOUT_MS, maximum=ZK_MAX_SESSION_TIMEOUT_MS, static=True),
    Setting("unclean.leader.election.enable", bool, False, False,
            "May a replica outside the ISR become leader when no ISR member is alive? (Data may be lost.)",
            topic_level=True),
    Setting("auto.leader.rebalance.enable", bool, True, True,
            "Run the preferred-replica election for brokers whose leader imbalance is too high.", static=True),
    Setting("leader.imbalance.check.interval.seconds", int, 300, 30,
            "How often the controller checks the leader imbalance.", maximum=86_400),
    Setting("leader.imbalance.per.broker.percentage", int, 10, 10,
            "Imbalance above this percentage (strictly) triggers the preferred-replica election.", maximum=100),
    Setting("delete.topic.enable", bool, True, True, "May topics be deleted?"),
    Setting("controlled.shutdown.enable", bool, True, True,
            "Does a stopping broker ask the controller to move its leaders first?"),
    Setting("controlled.shutdown.max.retries", int, 3, 3, "ControlledShutdown attempts before giving up.", maximum=10),
    Setting("controlled.shutdown.retry.backoff.ms", int, 5000, 1000, "Pause between ControlledShutdown attempts.", maximum=60_000),
    Setting("replica.lag.time.max.ms", int, 30000, 5000,
            "A follower that has not caught up for this long is removed from the ISR by its leader.", maximum=HOUR_MS),
    Setting("replica.fetch.wait.max.ms", int, 500, 500,
            "How long a follower's fetch waits at its leader for new data before it is answered empty.",
            maximum=60_000),
    Setting("min.insync.replicas", int, 1, 1,
            "With acks=all, a write needs at least this many replicas in the ISR.", topic_level=True,
            maximum=1000),
    Setting("request.timeout.ms", int, 30000, 5000, "How long a produce request waits for the ISR.", maximum=HOUR_MS),
    Setting("inter.broker.protocol.version", str, "2.8", "2.8",
            "The protocol brokers speak to each other: from 2.7 a leader asks the controller to change its ISR "
            "(AlterIsr) and registrations carry features; from 2.8 topics get ids. 2.6 and older: leaders write "
            "ISR changes to ZooKeeper themselves.", static=True, choices=IBP_NAMES),
    Setting("control.plane.listener.name", str, None, None,
            "When set, controller requests get their own queue on every broker (KIP-291).", static=True),
    Setting("kclab.request.handling.ms", int, 0, 0,
            "Lab only: how long a broker's request thread spends on each produce request (its disk write), so "
            "a burst of produce requests can hold up the controller's requests behind it (KIP-291).", maximum=10_000),
    Setting("kclab.isr.change.propagation.interval.ms", int, 2500, 500,
            "Lab only: below inter.broker.protocol.version 2.7, Kafka checks pending ISR changes every 2.5 s before "
            "writing /isr_change_notification.",
            maximum=60_000),
    Setting("kclab.zk.pipelined.writes", bool, True, True,
            "Lab only: the controller sends its ZooKeeper writes without waiting for each answer (pipelined, "
            "Kafka 1.1+, KAFKA-5642); false writes them one at a time, each after the previous answer, as before."),
    Setting("kclab.auto.leader.rebalance.initial.delay.ms", int, 5000, 5000,
            "Lab only: Kafka runs the first imbalance check 5 s after failover.", maximum=HOUR_MS),
)})


class ConfigError(ValueError):
    """An unknown setting or a value of the wrong type."""


def parse_value(name: str, value: Any) -> Any:
    """``value`` as the setting's type; Kafka's property files give strings, YAML gives types."""
    setting = SETTINGS.get(name)
    if setting is None:
        raise ConfigError(f"unknown setting {name!r}; known settings: {', '.join(sorted(SETTINGS))}")
    if value is None:
        return None
    if setting.type is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in ("true", "false"):
            return value.lower() == "true"
        raise ConfigError(f"{name} must be true or false, got {value!r}")
    if setting.type is int:
        if isinstance(value, bool):
            raise ConfigError(f"{name} must be an integer, got {value!r}")
        try:
            parsed = int(value)
        except (TypeError, ValueError):
            raise ConfigError(f"{name} must be an integer, got {value!r}") from None
        if parsed < setting.minimum:
            least = "not be negative" if setting.minimum == 0 else f"be at least {setting.minimum}"
            raise ConfigError(f"{name} must {least}, got {parsed}")
        if setting.maximum is not None and parsed > setting.maximum:
            raise ConfigError(f"{name} must be at most {setting.maximum}, got {parsed}")
        return parsed
    if setting.choices is not None:
        return _choice(setting, value)
    return str(value)


def _choice(setting: Setting, value: Any) -> str:
    """A text setting with fixed values; YAML reads ``2.6`` as a number, so numbers are taken as written."""
    text = repr(value) if isinstance(value, float) else str(value)
    if isinstance(value, bool) or text not in setting.choices:
        raise ConfigError(f"{setting.name} must be one of {', '.join(setting.choices)}, got {value!r}")
    return text


def config_string(value: Any) -> str:
    """A setting as Kafka stores it in a config znode (``Properties``: strings, ``true``/``false``)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


@dataclass(frozen=True)
class KafkaConfig:
    """Broker-wide settings (the lab's defaults, overridden by ``overrides``)."""

    overrides: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        parsed = {name: parse_value(name, value) for name, value in self.overrides.items()}
        object.__setattr__(self, "overrides", MappingProxyType(parsed))

    def __getitem__(self, name: str) -> Any:
        if name in self.overrides:
            return self.overrides[name]
        if name not in SETTINGS:
            raise ConfigError(f"unknown setting {name!r}")
        return SETTINGS[name].lab_default

    def with_overrides(self, changes: Mapping[str, Any]) -> KafkaConfig:
        return KafkaConfig({**self.overrides, **changes})

    def as_dict(self) -> dict[str, Any]:
        return {name: self[name] for name in SETTINGS}


def topic_config_value(config: KafkaConfig, topic_overrides: Mapping[str, Any] | None, name: str) -> Any:
    """The effective value of a topic-level setting: ``/config/topics/T`` overrides the broker's."""
    if topic_overrides and name in topic_overrides:
        return parse_value(name, topic_overrides[name])
    return config[name]
