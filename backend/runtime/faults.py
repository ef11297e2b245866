"""The fault vocabulary, carried out on a live cluster.

One table (:data:`FAULTS`, built from the fault vocabulary, so an op without an implementation
stops the import) serves the script runner, lessons, the browser and the HTTP API, so an
instructor's script and a student's click produce the same records. Each fault first checks
that it applies to the cluster *as it is now* (``fault_checks.py``) and is otherwise refused
with a reason — as a record and as the answer — without touching the cluster. Admin operations go through the very
znodes Kafka's admin tools write, so the controller reacts exactly as it would to
``kafka-topics.sh`` or ``zkCli.sh``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Callable

from backend.core.config import SETTINGS, ConfigError, config_string, parse_value
from backend.core.controller import events as ev
from backend.core.dispatch import dispatch_table
from backend.core.errors import KafkaException, NodeExistsException
from backend.core.records import Record
from backend.faultscript.cluster_spec import TopicSpec
from backend.faultscript.vocabulary import FAULT_VOCABULARY, check_step
from backend.runtime.cluster import Cluster
from backend.runtime.fault_checks import (
    FaultRefused, check_add_partitions, check_broker, check_config, check_controller_znode, check_new_topic,
    check_partition, check_partitions, check_produce, check_resume, check_stall, check_topic, check_zk_server,
    client_partition_of, partition_of,
)


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


# -- the faults ----------------------------------------------------------------------------------------
def _crash(cluster, args, record):
    cluster.crash_broker(args["broker"])


def _stop(cluster, args, record):
    cluster.brokers[args["broker"]].exit()


def _start(cluster, args, record):
    try:
        cluster.brokers[args["broker"]].start()
    except NodeExistsException as exc:
        raise FaultRefused(f"broker {args['broker']} did not start ({exc}): its crashed process's session has not "
                           f"expired yet; start it again after zookeeper.session.timeout.ms") from None


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
    mapping = {partition_of(cluster, k): tuple(v) for k, v in args["partitions"].items()}
    # Any broker of the cluster may be a target, even a stopped one: the reassignment then waits
    # for it (ControllerIntegrationTest's "halts on an offline replica").
    cluster.admin.reassign_partitions(mapping, validate=False)


def _preferred(cluster, args, record):
    partitions = [partition_of(cluster, k) for k in args["partitions"]] if args.get("partitions") else None
    cluster.admin.preferred_replica_election(partitions)


def _set_config(cluster, args, record):
    name, value, topic = args["name"], parse_value(args["name"], args["value"]), args.get("topic")
    if topic is not None:
        cluster.admin.set_topic_config(topic, {name: config_string(value)})
        controller = cluster.active_controller()
        if name == "unclean.leader.election.enable" and value and controller is not None:
            controller.events.put(ev.TopicUncleanLeaderElectionEnable(topic))
        return f"Set {name}={value} for topic {topic} (/config/topics/{topic} and a change notification)."
    cluster.set_broker_config(name, value)
    controller = cluster.active_controller()
    if controller is not None and value and name == "unclean.leader.election.enable":
        controller.events.put(ev.UncleanLeaderElectionEnable())
    if SETTINGS[name].static:
        return f"Set {name}={value} for every broker; Kafka reads it when a broker starts, so it applies after a restart."
    return f"Set {name}={value} on every broker."


def _stall(cluster, args, record):
    cluster.brokers[args["broker"]].data.stalled.add(_stall_key(cluster, args))


def _resume_follower(cluster, args, record):
    cluster.brokers[args["broker"]].data.stalled.discard(_stall_key(cluster, args))
    cluster.brokers[args["broker"]].data.wake(fetch=True)  # it fetches at once, not at its next wait-max


def _produce(cluster, args, record):
    tp = client_partition_of(cluster, f"{args['topic']}-{args['partition']}")
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
    tp = client_partition_of(cluster, f"{args['topic']}-{args['partition']}")
    payloads = cluster.producer.consume(tp)
    if payloads is None:
        raise FaultRefused(f"{tp} has no leader to read from")
    return f"Read {len(payloads)} committed message(s) from {tp}."


def _stall_key(cluster, args):
    """``None`` stalls every partition; a topic alone, all of its partitions."""
    if args.get("topic") is None:
        return None
    return (args["topic"], args.get("partition"))


def _zk_stop(cluster, args, record):
    cluster.zk_control.stop_server(args["server"])


def _zk_start(cluster, args, record):
    cluster.zk_control.start_server(args["server"], timeout=30)  # returns once it serves again


FAULTS: dict[str, Fault] = dispatch_table(FAULT_VOCABULARY, {
    "crash_broker": Fault(check_broker("crashed", "running", "paused", "shutting_down"), _crash),
    "stop_broker": Fault(check_broker("stopped", "running"), _stop),
    "start_broker": Fault(check_broker("started", "crashed", "stopped"), _start),
    "shutdown_broker": Fault(check_broker("shut down", "running"), _shutdown),
    "expire_session": Fault(check_broker("expired", "running", "paused"), _expire),
    "pause_broker": Fault(check_broker("paused", "running"), _pause),
    "resume_broker": Fault(check_resume, _resume),
    "delete_controller_znode": Fault(check_controller_znode, _delete_controller),
    "create_topic": Fault(check_new_topic, _create_topic),
    "delete_topic": Fault(check_topic("Deleting"), _delete_topic),
    "add_partitions": Fault(check_add_partitions, _add_partitions),
    "reassign_partitions": Fault(check_partitions("Reassigning"), _reassign),
    "preferred_election": Fault(check_partitions("Preferred replica election for", optional=True), _preferred),
    "set_config": Fault(check_config, _set_config),
    "stall_follower": Fault(check_stall("stalled"), _stall),
    "resume_follower": Fault(check_stall("resumed"), _resume_follower),
    "produce": Fault(check_produce, _produce),
    "consume": Fault(check_partition("Consuming from", client_partition_of), _consume),
    "zk_server_stop": Fault(check_zk_server(want_running=True), _zk_stop),
    "zk_server_start": Fault(check_zk_server(want_running=False), _zk_start),
}, "fault ops")
