"""The ``cluster:`` section of a script: which brokers, which topics, which settings, how many
ZooKeeper servers.

A topic here is written exactly like a ``create_topic`` step (same fields, same rule, same
defaults), because it *is* one: the runtime creates these topics before the first step. Settings
are Kafka's own names, checked and parsed with ``backend.core.config``.

Two bounds on its size (``backend/scripts/limits.py``): a lesson's or script's own cluster may
start with up to ``MAX_LESSON_PARTITIONS`` partitions; a sandbox a request asks for
(``check_cluster(..., sandbox=True)``) keeps the request bounds, as a ``create_topic`` click does.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any, Mapping

from backend.scripts.checks import World
from backend.scripts.kafka_types import BROKER, TOPIC_NAME, TOPIC_PATTERN, Assignment, ConfigMap
from backend.scripts.fields import Field, Record, check_fields, fields_schema
from backend.scripts.limits import MAX_BROKERS, MAX_LESSON_PARTITIONS, MAX_PARTITIONS, MAX_TOPICS
from backend.scripts.types import Choice, FieldType, Int, Issue, ListOf, name_of, shown
from backend.scripts.vocabulary import COUNTS_OR_ASSIGNMENT, TOPIC_SPEC_FIELDS, counts_from_assignment, check_args



@dataclass(frozen=True)
class TopicSpec:
    """A topic the cluster starts with; ``assignment`` is ``None`` when Kafka's automatic one is wanted."""

    partitions: int
    replication_factor: int
    assignment: Mapping[int, tuple[int, ...]] | None = None
    config: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ClusterSpec:
    """The cluster a script starts from (brokers are started in the order listed)."""

    brokers: tuple[int, ...]
    topics: Mapping[str, TopicSpec] = field(default_factory=dict)
    config: Mapping[str, Any] = field(default_factory=dict)  # parsed Kafka settings (overrides)
    zookeeper_servers: int = 1


class TopicSpecs(FieldType):
    """``{topic: {partitions, replication_factor} | {assignment}, config?}``, checked like ``create_topic``
    (with ``fields``: the ``create_topic`` fields, or those of a lesson's larger cluster)."""

    label = "a mapping from topic name to {partitions: N, replication_factor: R} or {assignment: ...}"

    def __init__(self, fields: tuple[Field, ...]) -> None:
        self.fields = fields

    def check(self, value, path):
        if not isinstance(value, dict):
            return self._bad(value, path)
        out, issues = {}, []
        for name, spec in value.items():
            issues += TOPIC_NAME.check(name, path + (name,))[1]
            if not isinstance(spec, dict):
                issues.append((path + (name,), f"{name_of(path + (name,))} must be a mapping like "
                                               f"{{partitions: 3, replication_factor: 2}}, got {shown(spec)}"))
                out[name] = None
                continue
            checked, spec_issues = check_args(spec, self.fields, (COUNTS_OR_ASSIGNMENT,),
                                              counts_from_assignment, path + (name,), f"topic {name}")
            out[name] = None if spec_issues else checked
            issues += spec_issues
        return out, issues

    def schema(self):
        return {"type": "object", "propertyNames": TOPIC_NAME.key_schema(), "maxProperties": MAX_TOPICS,
                "additionalProperties": fields_schema(self.fields, dict(COUNTS_OR_ASSIGNMENT.schema))}


def _lesson_field(f: Field) -> Field:
    if f.name == "partitions":
        return replace(f, type=Int(1, MAX_LESSON_PARTITIONS))
    if f.name == "assignment":
        return replace(f, type=Assignment(MAX_LESSON_PARTITIONS))
    return f


SANDBOX_TOPIC_SPECS = TopicSpecs(TOPIC_SPEC_FIELDS)
TOPIC_SPECS = TopicSpecs(tuple(_lesson_field(f) for f in TOPIC_SPEC_FIELDS))


def _cluster_fields(topics: TopicSpecs) -> tuple[Field, ...]:
    return (
        Field("brokers", ListOf(BROKER, min_items=1, max_items=MAX_BROKERS, unique=True,
                                label=f"a list of 1 to {MAX_BROKERS} distinct broker ids"),
              "the brokers, started in this order", required=True),
        Field("topics", topics, "topics that exist before the first step"),
        Field("config", ConfigMap(), "Kafka settings for every broker, e.g. zookeeper.session.timeout.ms"),
        Field("zookeeper", Record((Field("servers", Choice((1, 3)), "1: one server; 3: an ensemble, needed "
                                                                    "for zk_server_stop and zk_server_start",
                                         default=1),),
                                  label="a mapping like {servers: 3}"),
              "the ZooKeeper the cluster runs against"),
    )


CLUSTER_FIELDS = _cluster_fields(TOPIC_SPECS)
"""A lesson's or script's ``cluster:`` section."""
SANDBOX_CLUSTER_FIELDS = _cluster_fields(SANDBOX_TOPIC_SPECS)
"""The cluster a request asks for (``POST /api/sandboxes``)."""


def check_cluster(value: Any, sandbox: bool = False) -> tuple[ClusterSpec | None, World, list[Issue]]:
    """The cluster spec (``None`` if anything is wrong), the world the first step sees, the issues.
    ``sandbox``: a request's cluster, held to the request bounds; else a lesson's or script's.

    The world is built from whatever parts are right, so steps are still checked against the
    brokers and topics that are known when another part of the cluster section is wrong.
    """
    fields, topic_specs = (SANDBOX_CLUSTER_FIELDS, SANDBOX_TOPIC_SPECS) if sandbox else (CLUSTER_FIELDS, TOPIC_SPECS)
    path = ("cluster",)
    if not isinstance(value, dict):
        return None, World(None, None), [(path, f"cluster must be a mapping with brokers (and optionally "
                                                f"topics, config, zookeeper), got {shown(value)}")]
    args, issues = check_fields(value, fields, path, "cluster")  # args: the sound fields
    brokers = tuple(args["brokers"]) if "brokers" in args else None
    servers = args.get("zookeeper", {}).get("servers", 1) if "zookeeper" in args or "zookeeper" not in value else None
    world = World(brokers, servers)
    # Topic by topic, so one broken topic does not hide the others from the steps.
    raw_topics = value.get("topics")
    topics = topic_specs.check(raw_topics, path + ("topics",))[0] if isinstance(raw_topics, dict) else {}
    for name, spec in topics.items():
        if not isinstance(name, str) or not re.fullmatch(TOPIC_PATTERN, name):
            continue
        if spec is None:
            world.add_topic(name, None, None, "cluster.topics")
            continue
        where = path + ("topics", name)
        issues += world.check_refs(ref for f in topic_specs.fields if f.name in spec
                                   for ref in f.type.refs(spec[f.name], where + (f.name,)))
        issues += world.replication_problems(spec, where)
        world.add_topic(name, spec["partitions"], spec["replication_factor"], "cluster.topics")
    issues += world.size_problems(path + ("topics",), MAX_PARTITIONS if sandbox else MAX_LESSON_PARTITIONS)
    if issues:
        return None, world, issues
    spec = ClusterSpec(
        brokers=brokers,
        topics={name: TopicSpec(t["partitions"], t["replication_factor"],
                                {p: tuple(r) for p, r in t["assignment"].items()} if "assignment" in t else None,
                                dict(t.get("config", {})))
                for name, t in topics.items()},
        config=dict(args.get("config", {})),
        zookeeper_servers=servers)
    return spec, world, []
