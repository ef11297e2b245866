"""The fault vocabulary: one table of named operations for scripts, lessons, the browser and the
HTTP API, so an instructor's script and a student's click produce the same records.

Each :class:`Op` lists its fields (type, required or not, default, a one-line doc) and the
:class:`Rule`\\ s that relate fields to each other. The table is data: the loader checks steps
with it, ``script_schema`` turns it into the JSON Schema the lesson editor uses, and the CLI can
print it as help. Fault ops (``kind="fault"``) are what a student may click; script ops only make
sense in a script (waiting and checking). Lessons add their teaching steps with
``SCRIPT_VOCABULARY.extended(Op(...), ...)`` and pass that vocabulary to ``parse_script``.

``check_step`` checks one step on its own (shapes, types, names); whether broker 7 is in the
cluster or topic ``t`` exists yet depends on the script around it (``script_checks``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping

from backend.core.config import SETTINGS
from backend.core.controller.events import EVENTS
from backend.core.controller.states import PartitionState, ReplicaState
from backend.faultscript.kafka_types import (BROKER, BROKER_LIST, PARTITION, TOPIC, TOPIC_NAME, ZNODES, Assignment,
                                          ConfigMap, NewPartitionsAssignment, PartitionKey, ReplicaKey,
                                          SettingName, check_setting_value, not_topic_level, setting_schema)
from backend.faultscript.fields import Field, Struct, check_fields
from backend.faultscript.limits import MAX_PARTITIONS, MAX_PARTITIONS_PER_TOPIC, MAX_PRODUCE_COUNT, MAX_REPLICATION_FACTOR
from backend.faultscript.types import NO_DEFAULT, Choice, Int, Issue, ListOf, MapOf, Nullable, Scalar, shown, suggestion
from backend.view.rules import RULE_IDS

EVENT_NAMES = tuple(EVENTS)
"""Kafka 2.8's ControllerEvent classes a broker can be paused in (``backend/core/controller/events.py``)."""
BROKER_STATES = ("alive", "dead", "paused", "shutting_down")
EXPECTATIONS = ("controller", "controller_epoch", "brokers", "partitions", "replicas", "znodes", "rules")
RULE_VERDICTS = ("held", "broke", "holds", "broken")
"""``held``/``broke``: never / at least once broken since the run began; ``holds``/``broken``: now."""


@dataclass(frozen=True)
class Rule:
    """A check across the fields of one step, with the same rule in JSON Schema (may be weaker)."""

    doc: str
    check: Callable[[dict], list[Issue]]
    schema: Mapping[str, Any]


@dataclass(frozen=True)
class Op:
    """One named operation: what it does, its fields, and the rules between them."""

    name: str
    doc: str
    fields: tuple[Field, ...] = ()
    rules: tuple[Rule, ...] = ()
    kind: str = "fault"  # "fault": also a click/HTTP call; "script": only in scripts and lessons
    normalize: Callable[[dict], dict] | None = None  # completes args after defaults are applied
    observes: bool = False  # only looks: may name topics deleted earlier (deletion takes time)

    def field(self, name: str) -> Field | None:
        return next((f for f in self.fields if f.name == name), None)

    def describe(self) -> str:
        """Help text: the op's doc and one line per field."""
        return "\n".join([f"{self.name}: {self.doc}", *(f"  {f.describe()}" for f in self.fields)])


class Vocabulary(Mapping[str, Op]):
    """An immutable table of ops by name, in the order they were given."""

    def __init__(self, ops: Iterable[Op]) -> None:
        self._ops: dict[str, Op] = {}
        for op in ops:
            if op.name in self._ops:
                raise ValueError(f"op {op.name!r} is defined twice")
            self._ops[op.name] = op

    def __getitem__(self, name: str) -> Op:
        return self._ops[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._ops)

    def __len__(self) -> int:
        return len(self._ops)

    def extended(self, *ops: Op) -> Vocabulary:
        """This table plus ``ops`` (e.g. a lesson's ``say``, ``pause``, ``predict`` steps)."""
        return Vocabulary([*self._ops.values(), *ops])

    def of_kind(self, *kinds: str) -> Vocabulary:
        return Vocabulary(op for op in self._ops.values() if op.kind in kinds)


def _f(name: str, type_, doc: str, required: bool = False, default: Any = NO_DEFAULT) -> Field:
    return Field(name, type_, doc, required, default)


def _broker(doc: str) -> tuple[Field, ...]:
    return (_f("broker", BROKER, doc, required=True),)


def _counts_or_assignment(args: dict) -> list[Issue]:
    both = [name for name in ("partitions", "replication_factor") if name in args]
    if "assignment" in args and both:
        return [((both[0],), f"give either assignment or {' and '.join(both)}, not both: an assignment "
                             f"already says how many partitions and replicas there are")]
    return []


def counts_from_assignment(args: dict) -> dict:
    if "assignment" in args:
        args["partitions"] = len(args["assignment"])
        args["replication_factor"] = len(next(iter(args["assignment"].values())))
    return args


def _partition_needs_topic(args: dict) -> list[Issue]:
    return [(("partition",), "partition needs topic: say which topic's partition")] \
        if "partition" in args and "topic" not in args else []


def _value_fits_setting(args: dict) -> list[Issue]:
    name = args["name"]
    if "topic" in args and not SETTINGS[name].topic_level:
        return [(("name",), not_topic_level(name))]
    args["value"], problem = check_setting_value(name, args["value"])
    return [(("value",), problem)] if problem else []


def _at_least_one_expectation(args: dict) -> list[Issue]:
    if any(key in args for key in EXPECTATIONS):
        return []
    return [((), f"expect needs at least one of: {', '.join(EXPECTATIONS)}")]


COUNTS_OR_ASSIGNMENT = Rule(
    "assignment, or partitions and replication_factor, not both", _counts_or_assignment,
    {"if": {"required": ["assignment"]},
     "then": {"not": {"anyOf": [{"required": ["partitions"]}, {"required": ["replication_factor"]}]}}})
PARTITION_NEEDS_TOPIC = Rule("a partition is given with its topic", _partition_needs_topic,
                             {"dependentRequired": {"partition": ["topic"]}})
VALUE_FITS_SETTING = Rule(
    "the value has the setting's type; per-topic only for topic-level settings", _value_fits_setting,
    {"allOf": [{"if": {"properties": {"name": {"const": name}}, "required": ["name"]},
                "then": {"properties": {"value": setting_schema(name)}}} for name in sorted(SETTINGS)]
     + [{"if": {"required": ["topic"]},
         "then": {"properties": {"name": {"enum": sorted(n for n, s in SETTINGS.items() if s.topic_level)}}}}]})
AT_LEAST_ONE_EXPECTATION = Rule("at least one expectation", _at_least_one_expectation,
                                {"anyOf": [{"required": [key]} for key in EXPECTATIONS]})

TOPIC_SPEC_FIELDS = (
    _f("partitions", Int(1, MAX_PARTITIONS_PER_TOPIC), "how many partitions", default=1),
    _f("replication_factor", Int(1, MAX_REPLICATION_FACTOR), "how many replicas each partition has", default=1),
    _f("assignment", Assignment(), "which brokers hold each partition's replicas, preferred leader first"),
    _f("config", ConfigMap(topic_level=True), "topic-level settings, e.g. unclean.leader.election.enable"),
)
PARTITION_EXPECTATION = Struct((
    _f("leader", Int(-1, 1000, ref="broker", label="a broker id, or -1 for no leader"), "the leader"),
    _f("isr", ListOf(BROKER, unique=True, label="a list of broker ids, in order"), "the in-sync replicas"),
    _f("leader_epoch", Int(0), "the leader epoch"),
    _f("state", Choice(tuple(PartitionState.__members__)), "the controller's PartitionState"),
    _f("replicas", ListOf(BROKER, unique=True, label="a list of broker ids, in order"),
       "the assigned replicas (during a reassignment: the full set, target first)"),
    _f("high_watermark", Int(0), "the leader's high watermark (committed messages)"),
    _f("log_end_offset", Int(0), "the leader's log end offset"),
    _f("lost", Int(0), "acknowledged messages reported lost (data_loss records)"),
), label="a mapping with leader, isr, leader_epoch, state and/or replicas", min_fields=1)

_ZK_SERVER = Int(1, 3, label="a ZooKeeper server number (1 to 3)")

OPS = (
    Op("crash_broker", "Kill a broker (kill -9): it says nothing to ZooKeeper, so /brokers/ids/<id> stays until "
                       "its session expires (zookeeper.session.timeout.ms).",
       _broker("the broker to crash")),
    Op("stop_broker", "Stop a broker's process cleanly, without controlled shutdown: it closes its session, so "
                      "/brokers/ids/<id> disappears at once.",
       _broker("the broker to stop")),
    Op("start_broker", "Start a stopped or crashed broker: it registers again and rejoins (it fails while a crashed "
                       "process's session still holds /brokers/ids/<id>).",
       _broker("the broker to start")),
    Op("shutdown_broker", "Stop a broker politely: controlled shutdown moves its leaders away first.",
       _broker("the broker to stop")),
    Op("expire_session", "Expire a broker's ZooKeeper session, as after a long pause; it re-registers.",
       _broker("the broker whose session expires")),
    Op("pause_broker", "Freeze a broker's process: no heartbeats, no work; it resumes with stale beliefs.",
       (*_broker("the broker to freeze"),
        _f("during", Choice(EVENT_NAMES, "a ControllerEvent name such as BrokerChange"),
           "freeze when its controller starts handling this event (absent: at once)"))),
    Op("resume_broker", "Unfreeze a paused broker.", _broker("the broker to resume")),
    Op("delete_controller_znode", "Delete /controller, as an operator would, to force a controller election."),
    Op("create_topic", "Create a topic by writing /brokers/topics/<topic>, as Kafka's admin tools do.",
       (_f("topic", TOPIC_NAME, "the new topic's name", required=True), *TOPIC_SPEC_FIELDS),
       (COUNTS_OR_ASSIGNMENT,), normalize=counts_from_assignment),
    Op("delete_topic", "Ask for a topic's deletion via /admin/delete_topics/<topic>.",
       (_f("topic", TOPIC, "the topic to delete", required=True),)),
    Op("add_partitions", "Grow a topic to a new total number of partitions.",
       (_f("topic", TOPIC, "the topic to grow", required=True),
        _f("partitions", Int(1, MAX_PARTITIONS_PER_TOPIC), "the new total number of partitions", required=True),
        _f("assignment", NewPartitionsAssignment(), "replicas of the new partitions (absent: automatic)"))),
    Op("reassign_partitions", "Move partitions to new replicas via /admin/reassign_partitions.",
       (_f("partitions", MapOf(PartitionKey(), BROKER_LIST, min_items=1, max_items=MAX_PARTITIONS),
           "each partition's new replicas, preferred leader first", required=True),)),
    Op("preferred_election", "Move leadership back to preferred replicas via /admin/preferred_replica_election.",
       (_f("partitions", ListOf(PartitionKey(), min_items=1, max_items=MAX_PARTITIONS, unique=True),
           "which partitions (absent: all)"),)),
    Op("produce", "Write records to a partition's leader.",
       (_f("topic", TOPIC, "the topic", required=True),
        _f("partition", PARTITION, "the partition", required=True),
        _f("count", Int(1, MAX_PRODUCE_COUNT), "how many records", default=1),
        _f("acks", Choice((0, 1, "all")), "0: no wait; 1: the leader; all: every ISR member", default=1),
        _f("rate", Int(1, 10000), "messages per second, sent one by one in the background (absent: all at once, "
                                  "waiting for the answer)"),
        _f("expect_error", Choice(("NOT_ENOUGH_REPLICAS", "NOT_ENOUGH_REPLICAS_AFTER_APPEND", "REQUEST_TIMED_OUT",
                                   "NOT_LEADER_OR_FOLLOWER", "LEADER_NOT_AVAILABLE")),
           "the error this produce must fail with (the step fails if it succeeds or fails otherwise)"))),
    Op("consume", "Read a partition from its leader, up to the high watermark.",
       (_f("topic", TOPIC, "the topic", required=True), _f("partition", PARTITION, "the partition", required=True))),
    Op("stall_follower", "Stop a broker fetching as a follower, so it falls out of the ISR.",
       (*_broker("the follower"), _f("topic", TOPIC, "only this topic (absent: all)"),
        _f("partition", PARTITION, "only this partition of the topic (absent: all)")), (PARTITION_NEEDS_TOPIC,)),
    Op("resume_follower", "Let a stalled follower fetch again.",
       (*_broker("the follower"), _f("topic", TOPIC, "only this topic (absent: all)"),
        _f("partition", PARTITION, "only this partition of the topic (absent: all)")), (PARTITION_NEEDS_TOPIC,)),
    Op("set_config", "Change a setting for all brokers, or for one topic via /config/topics/<topic>.",
       (_f("name", SettingName(), "the Kafka setting", required=True),
        _f("value", Scalar(), "its new value", required=True),
        _f("topic", TOPIC, "set it for this topic only (topic-level settings)")), (VALUE_FITS_SETTING,)),
    Op("zk_server_stop", "Stop one server of the three-server ZooKeeper ensemble.",
       (_f("server", _ZK_SERVER, "which server", required=True),)),
    Op("zk_server_start", "Start a stopped ZooKeeper server again.",
       (_f("server", _ZK_SERVER, "which server", required=True),)),
    Op("wait_stable", "Wait until the controller has no queued events and no requests in flight.",
       (_f("timeout_ms", Int(0), "give up (and fail) after this long", default=30000),), kind="script"),
    Op("wait_ms", "Wait a fixed time (prefer wait_stable or expect's within_ms).",
       (_f("ms", Int(0), "milliseconds to wait", required=True),), kind="script"),
    Op("expect", "Check the cluster: each given expectation must hold within within_ms.",
       (_f("within_ms", Int(0), "how long the cluster may take to get there", default=10000),
        _f("controller", Nullable(BROKER, "no controller"), "the active controller's broker id"),
        _f("controller_epoch", Int(0), "the epoch in /controller_epoch"),
        _f("brokers", MapOf(BROKER, Choice(BROKER_STATES), min_items=1), "each broker's state"),
        _f("partitions", MapOf(PartitionKey(), PARTITION_EXPECTATION, min_items=1), "partitions' state"),
        _f("replicas", MapOf(ReplicaKey(), Choice(tuple(ReplicaState.__members__)), min_items=1),
           "replicas' ReplicaState, keyed topic-partition/broker"),
        _f("znodes", ZNODES, "znodes' data (decoded JSON or text), or {exists: false}"),
        _f("rules", MapOf(Choice(RULE_IDS, "a rule such as leader_in_isr"), Choice(RULE_VERDICTS), min_items=1),
           "Kafka's rules (kclab check): held or broke since the start, holds or broken now")),
       (AT_LEAST_ONE_EXPECTATION,), kind="script", observes=True),
)

SCRIPT_VOCABULARY = Vocabulary(OPS)
FAULT_VOCABULARY = SCRIPT_VOCABULARY.of_kind("fault")


@dataclass(frozen=True)
class CheckedStep:
    """One step checked on its own.

    ``args`` (without ``op``, defaults filled in, values normalised) is ``None`` if anything is
    wrong; ``sound`` then still holds the fields that passed, so their references can be checked.
    """

    op: Op | None
    args: dict | None
    issues: list[Issue]
    sound: dict


def check_args(value: dict, fields: tuple[Field, ...], rules: tuple[Rule, ...] = (),
               normalize: Callable[[dict], dict] | None = None, path: tuple = (), owner: str = "",
               ignore: tuple[str, ...] = ()) -> tuple[dict, list[Issue]]:
    """Check a mapping against fields and rules; if all is well, fill in defaults and normalise.

    With issues, the returned mapping holds only the fields that passed on their own.
    """
    args, issues = check_fields(value, fields, path, owner, ignore)
    if not issues:
        issues = [(path + where, message) for rule in rules for where, message in rule.check(args)]
    if issues:
        return args, issues
    for f in fields:
        if f.name not in args and f.default is not NO_DEFAULT:
            args[f.name] = copy.deepcopy(f.default)
    return (normalize(args) if normalize else args), []


def check_step(step: Any, vocabulary: Mapping[str, Op] = SCRIPT_VOCABULARY) -> CheckedStep:
    """Check one step on its own: its op, fields, types and rules."""
    if not isinstance(step, dict):
        return CheckedStep(None, None, [((), f"a step must be a mapping like {{op: crash_broker, broker: 1}}, "
                                             f"got {shown(step)}")], {})
    if "op" not in step:
        return CheckedStep(None, None, [((), f"a step needs op: one of {', '.join(vocabulary)}")], {})
    name = step["op"]
    op = vocabulary.get(name) if isinstance(name, str) else None
    if op is None:
        hint = suggestion(name, vocabulary) or f"; the ops are: {', '.join(vocabulary)}"
        return CheckedStep(None, None, [(("op",), f"unknown op {name!r}{hint}")], {})
    args, issues = check_args(step, op.fields, op.rules, op.normalize, (), op.name, ignore=("op",))
    return CheckedStep(op, None, issues, args) if issues else CheckedStep(op, args, [], args)


def validate_step(step: Any, vocabulary: Mapping[str, Op] = SCRIPT_VOCABULARY) -> list[str]:
    """What is wrong with one step on its own, one message each (empty: nothing).

    For the browser and HTTP API, which check a single click or request; a script is checked
    with ``parse_script``, which also knows the cluster and the steps before.
    """
    return [message for _path, message in check_step(step, vocabulary).issues]
