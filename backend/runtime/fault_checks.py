"""Whether a fault applies to the cluster as it is now, and if not, why not, in words.

Each check runs before anything changes (``backend.runtime.faults.apply_fault``) and either
says what will happen or raises :class:`FaultRefused` with a reason a student can read:
restarting a live broker, crashing an unknown one, resuming a broker that is not paused,
producing to a partition that does not exist. The page asks the same questions of its view
(``static/js/actions.js``) to disable a button with its reason; the server asks again here,
because the view may be a moment old.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from backend.core.config import SETTINGS, parse_value
from backend.core.model import TopicPartition
from backend.faultscript.limits import MAX_MESSAGES, MAX_PARTITIONS, MAX_TOPICS
from backend.runtime.cluster import Cluster


class FaultRefused(Exception):
    """The fault does not apply to the cluster as it is; the message says why."""


def broker_of(cluster: Cluster, args: dict, *statuses: str, verb: str = "used this way"):
    """The broker ``args`` names; with ``statuses``, only if it is in one of them."""
    broker_id = args.get("broker")
    broker = cluster.brokers.get(broker_id)
    if broker is None:
        raise FaultRefused(f"there is no broker {broker_id}; this cluster has brokers {sorted(cluster.brokers)}")
    if statuses and broker.status not in statuses:
        raise FaultRefused(f"broker {broker_id} is {broker.status.replace('_', ' ')}, so it cannot be "
                           f"{verb} (it must be {' or '.join(s.replace('_', ' ') for s in statuses)})")
    return broker


def check_topic_exists(cluster: Cluster, topic: str, must_exist: bool = True) -> None:
    """``topic`` exists (or, with ``must_exist=False``, does not yet)."""
    exists = cluster.operator.topic_exists(topic)
    if must_exist and not exists:
        raise FaultRefused(f"topic {topic!r} does not exist")
    if not must_exist and exists:
        raise FaultRefused(f"topic {topic!r} already exists")


def _named(key: str) -> TopicPartition:
    """``orders-0`` read as a name, nothing looked up."""
    topic, _, number = key.rpartition("-")
    if not topic or not number.isdigit():
        raise FaultRefused(f"{key!r} is not a partition name like 'orders-0'")
    return TopicPartition(topic, int(number))


def partition_of(cluster: Cluster, key: str) -> TopicPartition:
    """``orders-0`` as the partition of an existing topic."""
    tp = _named(key)
    check_topic_exists(cluster, tp.topic)
    count = len(cluster.admin.get_topic_assignment(tp.topic))
    if tp.partition >= count:
        raise FaultRefused(f"topic {tp.topic!r} has partitions 0..{count - 1}, not {tp.partition}")
    return tp


@dataclass(frozen=True)
class BrokerCheck:
    """A fault on one broker that applies while the broker is in one of ``statuses`` — or, with
    ``or_armed``, while a pause is armed for it. Data, not only a function: the vocabulary the page
    loads says the same (``web.service.vocabulary``), so a button is disabled with this reason."""

    verb: str
    statuses: tuple[str, ...]
    or_armed: bool = False

    def __call__(self, cluster: Cluster, args: dict) -> str:
        if not self.or_armed:
            broker_of(cluster, args, *self.statuses, verb=self.verb)
        elif (broker := broker_of(cluster, args)).status not in self.statuses and broker.pause_point.during is None:
            raise FaultRefused(f"broker {args['broker']} is not paused (it is {broker.status.replace('_', ' ')})")
        return f"Broker {args['broker']}: {self.verb}."


def check_broker(verb: str, *statuses: str) -> BrokerCheck:
    return BrokerCheck(verb, statuses)


check_resume = BrokerCheck("resumed", ("paused",), or_armed=True)


def check_controller_znode(cluster, args):
    if cluster.controller_id() is None:
        raise FaultRefused("/controller does not exist right now: there is no controller to remove")
    return "deleteall /controller, as an operator would with zkCli.sh."


def check_new_topic(cluster, args):
    check_topic_exists(cluster, args["topic"], must_exist=False)
    topics = cluster.operator.topic_partition_counts()
    _check_size(len(topics) + 1, sum(topics.values()) + args.get("partitions", 1))
    return f"Creating topic {args['topic']}."


def check_add_partitions(cluster, args):
    check_topic_exists(cluster, args["topic"])
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


def check_topic(verb):
    """A fault on an existing topic."""
    def check(cluster, args):
        check_topic_exists(cluster, args["topic"])
        return f"{verb} topic {args['topic']}."
    return check


def client_partition_of(cluster: Cluster, key: str) -> TopicPartition:
    """``orders-0`` as a producer or consumer finds it: in the metadata the brokers serve
    (``Producer.metadata_of``), without asking ZooKeeper. A partition not there (no broker
    running, a topic created a moment ago, or none such) is looked up as :func:`partition_of`
    does, and refused in its words.

    Each ZooKeeper read here is a round trip through the worker's one session thread before the
    fault's record: in a saturated worker a produce waited 1.3–1.7 s at the median for the four
    reads of its check and its carrying out, where every other fault waited 30–50 ms
    (docs/performance.md, issue 14, thirty-fourth round)."""
    tp = _named(key)
    return tp if cluster.producer.metadata_of(tp) is not None else partition_of(cluster, key)


def check_partition(verb, resolve: Callable[[Cluster, str], TopicPartition] = partition_of):
    """A fault on ``args``' topic and partition, which must exist (found by ``resolve``)."""
    def check(cluster, args):
        resolve(cluster, f"{args['topic']}-{args['partition']}")
        return f"{verb} {args['topic']}-{args['partition']}."
    return check


def check_partitions(verb, optional=False):
    """A fault on the partitions ``args`` lists (a reassignment's targets are brokers of the cluster)."""
    def check(cluster, args):
        keys = args.get("partitions") or []
        if not keys and not optional:
            raise FaultRefused("name at least one partition")
        for key in keys:
            partition_of(cluster, key)
        targets = args["partitions"].values() if isinstance(args.get("partitions"), dict) else []
        for replicas in targets:
            unknown = [b for b in replicas if b not in cluster.brokers]
            if unknown or not replicas or len(set(replicas)) != len(replicas):
                raise FaultRefused(f"replicas {list(replicas)} must be distinct brokers of this cluster "
                                   f"{sorted(cluster.brokers)}")
        return f"{verb} {', '.join(keys) if keys else 'every partition'}."
    return check


def check_config(cluster, args):
    name = args.get("name")
    if name not in SETTINGS:
        raise FaultRefused(f"unknown setting {name!r}")
    parse_value(name, args.get("value"))
    if args.get("topic") is not None:
        if not SETTINGS[name].topic_level:
            raise FaultRefused(f"{name} is a broker setting, not a topic setting")
        check_topic_exists(cluster, args["topic"])
    return f"Setting {name} to {args.get('value')}" + (f" for topic {args['topic']}." if args.get("topic") else ".")


def check_stall(verb):
    """Stalling or resuming a running broker's fetching, of everything, a topic or a partition."""
    def check(cluster, args):
        broker_of(cluster, args, "running", verb=verb)
        if args.get("partition") is not None:
            partition_of(cluster, f"{args['topic']}-{args['partition']}")
        elif args.get("topic") is not None:
            check_topic_exists(cluster, args["topic"])
        return f"Broker {args['broker']}: {verb}."
    return check


def check_produce(cluster, args):
    sent, count = cluster.producer.requested, args.get("count", 1)
    if sent + count > MAX_MESSAGES:
        raise FaultRefused(f"this cluster has been sent {sent} messages; at most {MAX_MESSAGES} can be sent to one "
                           f"cluster (start a new sandbox for more)")
    return check_partition("Producing to", client_partition_of)(cluster, args)


def check_zk_server(want_running: bool):
    """Stopping (``want_running``) or starting a server of the lab's own ensemble."""
    return lambda cluster, args: _zk_server(cluster, args, want_running)


def _zk_server(cluster, args, want_running):
    if cluster.zk_control is None or not hasattr(cluster.zk_control, "stop_server"):
        raise FaultRefused("ZooKeeper server faults need a three-server ensemble started by the lab "
                           "(cluster.zookeeper.servers: 3), not a single server or an external ensemble")
    server = args.get("server")
    if server not in cluster.zk_control.servers:
        raise FaultRefused(f"there is no ZooKeeper server {server}; the ensemble has {sorted(cluster.zk_control.servers)}")
    if cluster.zk_control.servers[server].running != want_running:
        raise FaultRefused(f"ZooKeeper server {server} is already {'stopped' if want_running else 'running'}")
    return f"ZooKeeper server {server} {'stops' if want_running else 'starts'}."
