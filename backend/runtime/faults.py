"""The fault vocabulary, carried out on a live cluster.

One table (:data:`FAULTS`) serves the script runner, lessons, the browser and the HTTP API, so
an instructor's script and a student's click produce the same records. Each fault first checks
that it applies to the cluster *as it is now* (restarting a live broker, crashing an unknown
one, resuming a broker that is not paused…) and is otherwise refused with a reason — as a
record and as the answer — without touching the cluster. Admin operations go through the very
znodes Kafka's admin tools write, so the controller reacts exactly as it would to
``kafka-topics.sh`` or ``zkCli.sh``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Callable

from backend.core.controller import events as ev
from backend.core.config import SETTINGS, ConfigError, config_string, parse_value
from backend.core.errors import KafkaException
from backend.core.model import TopicPartition
from backend.core.records import Record
from backend.runtime.cluster import Cluster
from backend.faultscript.cluster_spec import TopicSpec
from backend.faultscript.limits import MAX_MESSAGES, MAX_PARTITIONS, MAX_TOPICS
from backend.faultscript.vocabulary import FAULT_VOCABULARY, check_step
from backend.zk import paths


class FaultRefused(Exception):
    """The fault does not apply to the cluster as it is; the message says why."""


@dataclass(frozen=True)
class FaultResult:
    ok: bool
    message: str
    record: Record | None = None


def apply_fault(cluster: Cluster, op: str, args: dict[str, Any], source: str = "user",
                prechecked: bool = False) -> FaultResult:
    """Check and carry out ``op``; never raises for a fault that does not apply.

    Two checks, both before anything changes: the arguments against the shared vocabulary (the
    same check a script gets; ``prechecked`` when a loaded script's step already had it), then
    whether the fault applies to the cluster as it is now."""
    raw = {k: v for k, v in args.items() if k != "op"}
    checked = check_step({"op": op, **raw}, FAULT_VOCABULARY) if not prechecked else None
    fault = FAULTS.get(op)
    args = raw if checked is None or checked.args is None else checked.args
    subject = f"broker:{args['broker']}" if isinstance(args.get("broker"), int) else f"fault:{op}"
    with cluster.lock:
        try:
            if checked is not None and checked.issues:
                raise FaultRefused("; ".join(message for _, message in checked.issues))
            if fault is None:
                raise FaultRefused(f"{op} is not available in this cluster")
            check = fault.check(cluster, args)
        except (FaultRefused, KafkaException, ConfigError) as exc:
            [record] = cluster.emit([Record(kind="fault", subject=subject, op=op, to_state="refused",
                                            outcome="refused", note=str(exc), detail={"args": args, "source": source})])
            return FaultResult(False, str(exc), record)
        [record] = cluster.emit([Record(kind="fault", subject=subject, op=op, to_state="applied", outcome="ok",
                                        broker_id=args.get("broker"), note=check,
                                        detail={"args": args, "source": source})])
    try:
        note = fault.apply(cluster, args, record)
    except (KafkaException, ConfigError, FaultRefused) as exc:
        cluster.emit([Record(kind="fault", subject=subject, op=op, to_state="failed", outcome="error",
                             note=str(exc), cause=op, cause_seq=record.seq)])
        return FaultResult(False, str(exc), record)
    return FaultResult(True, note or check, record)


@dataclass(frozen=True)
class Fault:
    """How one op of ``FAULT_VOCABULARY`` (which holds its fields and documentation) is carried out."""

    check: Callable[[Cluster, dict], str]
    """Raises :class:`FaultRefused` if the fault does not apply; returns what will happen."""
    apply: Callable[[Cluster, dict, Record], str | None]


# -- checks ------------------------------------------------------------------------------------------
def _broker(cluster: Cluster, args: dict, *statuses: str):
    broker_id = args.get("broker")
    broker = cluster.brokers.get(broker_id)
    if broker is None:
        raise FaultRefused(f"there is no broker {broker_id}; this cluster has brokers {sorted(cluster.brokers)}")
    if statuses and broker.status not in statuses:
        raise FaultRefused(f"broker {broker_id} is {broker.status.replace('_', ' ')}, so it cannot be "
                           f"{_verb(args)} (it must be {' or '.join(s.replace('_', ' ') for s in statuses)})")
    return broker


def _verb(args) -> str:
    return args.get("_verb", "used this way")


def _topic(cluster: Cluster, topic: str, must_exist: bool = True) -> None:
    exists = cluster.operator.topic_exists(topic)
    if must_exist and not exists:
        raise FaultRefused(f"topic {topic!r} does not exist")
    if not must_exist and exists:
        raise FaultRefused(f"topic {topic!r} already exists")


def _partition(cluster: Cluster, key: str) -> TopicPartition:
    topic, _, number = key.rpartition("-")
    if not topic or not number.isdigit():
        raise FaultRefused(f"{key!r} is not a partition name like 'orders-0'")
    _topic(cluster, topic)
    count = len(cluster.admin.get_topic_assignment(topic))
    if int(number) >= count:
        raise FaultRefused(f"topic {topic!r} has partitions 0..{count - 1}, not {number}")
    return TopicPartition(topic, int(number))


def _active_controller(cluster: Cluster):
    return cluster.active_controller()


# -- the faults ----------------------------------------------------------------------------------------
def _crash(cluster, args, record):
    cluster.brokers[args["broker"]].crash()


def _start(cluster, args, record):
    cluster.brokers[args["broker"]].start()


def _shutdown(cluster, args, record):
    answer = cluster.brokers[args["broker"]].shutdown()
    if answer.get("error"):
        return f"Broker {args['broker']} stopped, but its controlled shutdown failed: {answer['error']}."
    return f"Broker {args['broker']} moved its leaders away and stopped."


def _expire(cluster, args, record):
    cluster.brokers[args["broker"]].expire_session()


def _pause(cluster, args, record):
    cluster.brokers[args["broker"]].pause(during=args.get("during"))


def _resume(cluster, args, record):
    broker = cluster.brokers[args["broker"]]
    if broker.status == "paused":
        broker.resume()
    else:
        broker.pause_point.disarm()  # an armed pause that never fired


def _delete_controller(cluster, args, record):
    cluster.operator.delete_controller()


def _create_topic(cluster, args, record):
    spec = TopicSpec(args.get("partitions", 1), args.get("replication_factor", 1), args.get("assignment"),
                     args.get("config") or {})
    assignment = cluster.create_topic(args["topic"], spec)
    return f"Wrote /brokers/topics/{args['topic']} with assignment {assignment}; the controller does the rest."


def _delete_topic(cluster, args, record):
    cluster.admin.delete_topic(args["topic"])


def _add_partitions(cluster, args, record):
    live = [b for b, broker in cluster.brokers.items() if broker.alive]
    cluster.admin.add_partitions(args["topic"], args["partitions"], assignment=args.get("assignment"),
                                 brokers=live, rng=random.Random(args["topic"]))


def _reassign(cluster, args, record):
    mapping = {_partition(cluster, k): tuple(v) for k, v in args["partitions"].items()}
    # Any broker of the cluster may be a target, even a stopped one: the reassignment then waits
    # for it (ControllerIntegrationTest's "halts on an offline replica").
    cluster.admin.reassign_partitions(mapping, validate=False)


def _preferred(cluster, args, record):
    partitions = [_partition(cluster, k) for k in args["partitions"]] if args.get("partitions") else None
    cluster.admin.preferred_replica_election(partitions)


def _set_config(cluster, args, record):
    name, value, topic = args["name"], parse_value(args["name"], args["value"]), args.get("topic")
    if topic is not None:
        cluster.admin.set_topic_config(topic, {name: config_string(value)})
        controller = _active_controller(cluster)
        if name == "unclean.leader.election.enable" and value and controller is not None:
            controller.events.put(ev.TopicUncleanLeaderElectionEnable(topic))
        return f"Set {name}={value} for topic {topic} (/config/topics/{topic} and a change notification)."
    cluster.set_broker_config(name, value)
    controller = _active_controller(cluster)
    if controller is not None and value and name == "unclean.leader.election.enable":
        controller.events.put(ev.UncleanLeaderElectionEnable())
    if controller is not None and value and name == "auto.leader.rebalance.enable":
        controller.events.put(ev.AutoPreferredReplicaLeaderElection())
    return f"Set {name}={value} on every broker."


def _stall(cluster, args, record):
    cluster.brokers[args["broker"]].data.stalled.add(_stall_key(cluster, args))


def _resume_follower(cluster, args, record):
    cluster.brokers[args["broker"]].data.stalled.discard(_stall_key(cluster, args))


def _produce(cluster, args, record):
    tp = _partition(cluster, f"{args['topic']}-{args['partition']}")
    acks = str(args.get("acks", 1))
    if args.get("rate"):
        cluster.producer.produce_in_background(tp, args.get("count", 1), acks, args["rate"])
        return f"Producing {args.get('count', 1)} message(s) to {tp} at {args['rate']}/s in the background."
    result = cluster.producer.produce(tp, args.get("count", 1), acks)
    expected = args.get("expect_error")
    if expected is not None:
        if result.error != expected:
            raise FaultRefused(f"producing to {tp} with acks={acks} was expected to fail with {expected}, "
                               f"but the answer was {result.error}")
        return f"Producing to {tp} with acks={acks} failed with {expected}, as expected."
    if result.error != "NONE":
        raise FaultRefused(f"producing to {tp} with acks={acks} failed: {result.error}")
    return f"{result.count} message(s) produced to {tp} (acks={acks})."


def _consume(cluster, args, record):
    tp = _partition(cluster, f"{args['topic']}-{args['partition']}")
    payloads = cluster.producer.consume(tp)
    if payloads is None:
        raise FaultRefused(f"{tp} has no leader to read from")
    return f"Read {len(payloads)} committed message(s) from {tp}."


def _check_partition_args(verb):
    def check(cluster, args):
        _partition(cluster, f"{args['topic']}-{args['partition']}")
        return f"{verb} {args['topic']}-{args['partition']}."
    return check


def _stall_key(cluster, args):
    """``None`` stalls every partition; a topic alone, all of its partitions."""
    if args.get("topic") is None:
        return None
    return (args["topic"], args.get("partition"))


def _zk_stop(cluster, args, record):
    cluster.zk_control.stop_server(args["server"])


def _zk_start(cluster, args, record):
    cluster.zk_control.start_server(args["server"], timeout=30)  # returns once it serves again


def _check_zk(cluster, args, want_running):
    if cluster.zk_control is None or not hasattr(cluster.zk_control, "stop_server"):
        raise FaultRefused("ZooKeeper server faults need a three-server ensemble started by the lab "
                           "(cluster.zookeeper.servers: 3), not a single server or an external ensemble")
    server = args.get("server")
    if server not in cluster.zk_control.servers:
        raise FaultRefused(f"there is no ZooKeeper server {server}; the ensemble has {sorted(cluster.zk_control.servers)}")
    if cluster.zk_control.servers[server].running != want_running:
        raise FaultRefused(f"ZooKeeper server {server} is already {'stopped' if want_running else 'running'}")
    return f"ZooKeeper server {server} {'stops' if want_running else 'starts'}."


def _check_config(cluster, args):
    name = args.get("name")
    if name not in SETTINGS:
        raise FaultRefused(f"unknown setting {name!r}")
    parse_value(name, args.get("value"))
    if args.get("topic") is not None:
        if not SETTINGS[name].topic_level:
            raise FaultRefused(f"{name} is a broker setting, not a topic setting")
        _topic(cluster, args["topic"])
    return f"Setting {name} to {args.get('value')}" + (f" for topic {args['topic']}." if args.get("topic") else ".")


def _with_verb(verb, *statuses):
    def check(cluster, args):
        _broker(cluster, {**args, "_verb": verb}, *statuses)
        return f"Broker {args['broker']}: {verb}."
    return check


def _check_resume(cluster, args):
    broker = _broker(cluster, args)
    if broker.status != "paused" and broker.pause_point.during is None:
        raise FaultRefused(f"broker {args['broker']} is not paused (it is {broker.status.replace('_', ' ')})")
    return f"Broker {args['broker']}: resumed."


def _check_new_topic(cluster, args):
    _topic(cluster, args["topic"], must_exist=False)
    topics = cluster.operator.topic_partition_counts()
    _check_size(len(topics) + 1, sum(topics.values()) + args.get("partitions", 1))
    return f"Creating topic {args['topic']}."


def _check_add_partitions(cluster, args):
    _topic(cluster, args["topic"])
    topics = cluster.operator.topic_partition_counts()
    _check_size(len(topics), sum(topics.values()) - topics.get(args["topic"], 0) + args["partitions"])
    return f"Adding partitions to topic {args['topic']}."


def _check_size(topics: int, partitions: int) -> None:
    """The same bounds a script's cluster and steps are checked against (``backend/faultscript/limits``)."""
    if topics > MAX_TOPICS:
        raise FaultRefused(f"this cluster may hold at most {MAX_TOPICS} topics; delete one first")
    if partitions > MAX_PARTITIONS:
        raise FaultRefused(f"this cluster may hold at most {MAX_PARTITIONS} partitions in all; this would make "
                           f"{partitions}")


def _check_stall(verb):
    def check(cluster, args):
        _broker(cluster, {**args, "_verb": verb}, "running")
        if args.get("partition") is not None:
            _partition(cluster, f"{args['topic']}-{args['partition']}")
        elif args.get("topic") is not None:
            _topic(cluster, args["topic"])
        return f"Broker {args['broker']}: {verb}."
    return check


def _check_produce(cluster, args):
    sent, count = cluster.producer.requested, args.get("count", 1)
    if sent + count > MAX_MESSAGES:
        raise FaultRefused(f"this cluster has been sent {sent} messages; at most {MAX_MESSAGES} can be sent to one "
                           f"cluster (start a new sandbox for more)")
    return _check_partition_args("Producing to")(cluster, args)


def _check_topic(verb):
    def check(cluster, args):
        _topic(cluster, args["topic"])
        return f"{verb} topic {args['topic']}."
    return check


def _check_partitions(verb, optional=False):
    def check(cluster, args):
        keys = args.get("partitions") or []
        if not keys and not optional:
            raise FaultRefused("name at least one partition")
        for key in keys:
            _partition(cluster, key)
        targets = args["partitions"].values() if isinstance(args.get("partitions"), dict) else []
        for replicas in targets:
            unknown = [b for b in replicas if b not in cluster.brokers]
            if unknown or not replicas or len(set(replicas)) != len(replicas):
                raise FaultRefused(f"replicas {list(replicas)} must be distinct brokers of this cluster "
                                   f"{sorted(cluster.brokers)}")
        return f"{verb} {', '.join(keys) if keys else 'every partition'}."
    return check


def _check_controller_znode(cluster, args):
    if cluster.controller_id() is None:
        raise FaultRefused("/controller does not exist right now: there is no controller to remove")
    return "deleteall /controller, as an operator would with zkCli.sh."


FAULTS: dict[str, Fault] = {
    "crash_broker": Fault(_with_verb("crashed", "running", "paused", "shutting_down"), _crash),
    "start_broker": Fault(_with_verb("started", "crashed", "stopped"), _start),
    "shutdown_broker": Fault(_with_verb("shut down", "running"), _shutdown),
    "expire_session": Fault(_with_verb("expired", "running", "paused"), _expire),
    "pause_broker": Fault(_with_verb("paused", "running"), _pause),
    "resume_broker": Fault(_check_resume, _resume),
    "delete_controller_znode": Fault(_check_controller_znode, _delete_controller),
    "create_topic": Fault(_check_new_topic, _create_topic),
    "delete_topic": Fault(_check_topic("Deleting"),
                          _delete_topic),
    "add_partitions": Fault(_check_add_partitions, _add_partitions),
    "reassign_partitions": Fault(_check_partitions("Reassigning"), _reassign),
    "preferred_election": Fault(_check_partitions("Preferred replica election for", optional=True), _preferred),
    "set_config": Fault(_check_config, _set_config),
    "stall_follower": Fault(_check_stall("stalled"), _stall),
    "resume_follower": Fault(_check_stall("resumed"), _resume_follower),
    "produce": Fault(_check_produce, _produce),
    "consume": Fault(_check_partition_args("Consuming from"), _consume),
    "zk_server_stop": Fault(lambda c, a: _check_zk(c, a, True), _zk_stop),
    "zk_server_start": Fault(lambda c, a: _check_zk(c, a, False), _zk_start),
}
