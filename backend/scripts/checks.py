"""Checks that need the script around a step: is broker 7 in the cluster, does topic ``t`` exist
at this point, has it a partition 5, is there a ZooKeeper ensemble to stop a server of?

:class:`World` walks the steps in order and keeps what a script author can rely on at each
point: the cluster's brokers, the topics created and deleted so far and their partition counts.
Faults do not change it (a crashed broker is still a broker of the cluster; starting it is a
valid next step). Only the ops that create, delete or grow topics do; :meth:`World.check_step`
dispatches to them by name, and every other op, including ops a lesson adds, is checked through
the :class:`~backend.scripts.types.Ref`\\ s its field types name.

Where a step's shape is already wrong we still record what it would create
(:meth:`World.check_unsound_step`), so one typo does not make every later step report an unknown topic.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable

from backend.scripts.kafka_types import TOPIC_PATTERN
from backend.scripts.limits import MAX_PARTITIONS, MAX_TOPICS
from backend.scripts.types import Issue, Ref, is_int, name_of, suggestion
from backend.scripts.vocabulary import Op


@dataclass
class _Topic:
    partitions: int | None  # None: unknown (its definition had a problem)
    replication_factor: int | None
    origin: str  # "cluster.topics" or "step 3"
    deleted_by: str | None = None


class World:
    """What exists at the current step of a script, for checking the steps that refer to it."""

    def __init__(self, brokers: Iterable[int] | None, zookeeper_servers: int | None) -> None:
        self.brokers = tuple(brokers) if brokers is not None else None  # None: unknown, do not check
        self.zookeeper_servers = zookeeper_servers
        self.topics: dict[str, _Topic] = {}

    def add_topic(self, name: str, partitions: int | None, replication_factor: int | None, origin: str) -> None:
        self.topics[name] = _Topic(partitions, replication_factor, origin)

    # -- references -------------------------------------------------------------------------

    def check_refs(self, refs: Iterable[Ref], may_be_deleted: bool = False) -> list[Issue]:
        issues = []
        for ref in refs:
            problem = {"broker": self._broker_problem, "topic": self._topic_problem,
                       "partition": self._partition_problem}[ref.kind](ref.value, may_be_deleted)
            if problem:  # "broker 9 is not ...", but "controller: broker 9 is not ..."
                prefix = "" if ref.path == (ref.kind,) else f"{name_of(ref.path)}: "
                issues.append((ref.path, prefix + problem))
        return issues

    def _broker_problem(self, broker: int, _may_be_deleted: bool = False) -> str | None:
        if self.brokers is None or broker in self.brokers:
            return None
        return f"broker {broker} is not in cluster.brokers {list(self.brokers)}"

    def _topic_problem(self, name: str, may_be_deleted: bool = False) -> str | None:
        topic = self.topics.get(name)
        if topic is None:
            return (f"topic {name!r} does not exist at this step: it is not in cluster.topics and no "
                    f"earlier step creates it{suggestion(name, self.topics)}")
        if topic.deleted_by and not may_be_deleted:
            return f"topic {name!r} was deleted by {topic.deleted_by}"
        return None

    def _partition_problem(self, key: tuple[str, int], may_be_deleted: bool = False) -> str | None:
        name, partition = key
        problem = self._topic_problem(name, may_be_deleted)
        if problem:
            return problem
        count = self.topics[name].partitions
        if count is not None and partition >= count:
            return (f"topic {name!r} has {count} partition{'s' if count != 1 else ''} "
                    f"(0 to {count - 1}), so there is no partition {partition}")
        return None

    # -- steps ------------------------------------------------------------------------------

    def check_step(self, op: Op, args: dict, origin: str) -> list[Issue]:
        """Problems with a valid-looking step in this world; then the world as after the step."""
        refs = [ref for f in op.fields if f.name in args for ref in f.type.refs(args[f.name], (f.name,))]
        issues = self.check_refs(refs, may_be_deleted=op.observes)
        topic, partition = args.get("topic"), args.get("partition")
        if isinstance(topic, str) and is_int(partition) and not self._topic_problem(topic, op.observes):
            issues += self.check_refs([Ref("partition", (topic, partition), ("partition",))])
        special = getattr(self, f"_step_{op.name}", None)
        return issues + (special(args, origin) if special else [])

    def check_unsound_step(self, op: Op | None, sound: dict, raw: Any, origin: str) -> list[Issue]:
        """For a step with a wrong shape: the references in its ``sound`` fields, and the topic it
        would create or grow recorded, so one typo does not make every later step fail too."""
        if op is None:
            return []
        issues = self.check_refs((ref for f in op.fields if f.name in sound
                                  for ref in f.type.refs(sound[f.name], (f.name,))), op.observes)
        self._note_unchecked(op, raw, origin)
        return issues

    def _note_unchecked(self, op: Op, raw: Any, origin: str) -> None:
        name = raw.get("topic") if isinstance(raw, dict) else None
        if not isinstance(name, str) or not re.fullmatch(TOPIC_PATTERN, name):
            return
        if op.name == "create_topic" and (name not in self.topics or self.topics[name].deleted_by):
            self.add_topic(name, None, None, origin)
        elif op.name == "add_partitions" and name in self.topics:
            self.topics[name].partitions = None

    def _step_create_topic(self, args: dict, origin: str) -> list[Issue]:
        name, issues = args["topic"], []
        existing = self.topics.get(name)
        if existing and not existing.deleted_by:
            issues.append((("topic",), f"topic {name!r} already exists (from {existing.origin})"))
        issues += self.replication_problems(args, ())
        self.add_topic(name, args["partitions"], args["replication_factor"], origin)
        return issues + self.size_problems(("topic",))

    def size_problems(self, path: tuple, max_partitions: int = MAX_PARTITIONS) -> list[Issue]:
        """A cluster holds at most ``MAX_TOPICS`` topics and ``max_partitions`` partitions at once
        (``MAX_PARTITIONS``, except for the cluster a lesson starts from)."""
        live = [t for t in self.topics.values() if not t.deleted_by]
        partitions = sum(t.partitions or 0 for t in live)
        issues = []
        if len(live) > MAX_TOPICS:
            issues.append((path, f"a cluster may hold at most {MAX_TOPICS} topics; this would make {len(live)}"))
        if partitions > max_partitions:
            issues.append((path, f"a cluster may hold at most {max_partitions} partitions in all its topics; "
                                 f"this would make {partitions}"))
        return issues

    def replication_problems(self, args: dict, path: tuple) -> list[Issue]:
        """Kafka refuses a replication factor larger than the number of brokers."""
        factor = args["replication_factor"]
        if self.brokers is None or factor <= len(self.brokers):
            return []
        where = path + (("assignment",) if "assignment" in args else ("replication_factor",))
        prefix = f"{name_of(path)}: " if path else ""
        return [(where, f"{prefix}replication factor {factor} is larger than the cluster's {len(self.brokers)} "
                        f"broker{'s' if len(self.brokers) != 1 else ''}")]

    def _step_delete_topic(self, args: dict, origin: str) -> list[Issue]:
        topic = self.topics.get(args["topic"])
        if topic and not topic.deleted_by:
            topic.deleted_by = origin
        return []

    def _step_add_partitions(self, args: dict, origin: str) -> list[Issue]:
        topic = self.topics.get(args["topic"])
        if topic is None or topic.deleted_by:
            return []  # already reported as a reference
        issues, total, current = [], args["partitions"], topic.partitions
        if current is not None and total <= current:
            issues.append((("partitions",), f"topic {args['topic']!r} already has {current} partitions; "
                                            f"partitions is the new total, so it must be more than {current}"))
        assignment = args.get("assignment")
        if assignment is not None and current is not None and total > current:
            wanted = list(range(current, total))
            if sorted(assignment) != wanted:
                issues.append((("assignment",), f"assignment must list the new partitions {wanted}, "
                                                f"got {sorted(assignment)}"))
            factor = topic.replication_factor
            for partition, replicas in assignment.items():
                if factor is not None and len(replicas) != factor:
                    issues.append((("assignment", partition), f"assignment.{partition} has {len(replicas)} "
                                   f"replicas but topic {args['topic']!r} has replication factor {factor}"))
        topic.partitions = total
        return issues + self.size_problems(("partitions",))

    def _zookeeper_problems(self, op_name: str) -> list[Issue]:
        if self.zookeeper_servers in (None, 3):
            return []
        return [((), f"{op_name} needs a three-server ZooKeeper ensemble: set cluster.zookeeper.servers: 3")]

    def _step_zk_server_stop(self, args: dict, origin: str) -> list[Issue]:
        return self._zookeeper_problems("zk_server_stop")

    def _step_zk_server_start(self, args: dict, origin: str) -> list[Issue]:
        return self._zookeeper_problems("zk_server_start")
