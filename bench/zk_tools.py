"""ZooKeeper helpers for the benches: write the znodes a Kafka cluster holds, delete big trees
quickly, and measure the *floors* (what a plain kazoo client needs for the same reads/writes).

Everything here uses kazoo's async API through a sliding window (:func:`pipelined`), so at most
``WINDOW`` requests are outstanding: the pipe stays full without holding 200,000 pending results
in memory at once.
"""

from __future__ import annotations

import json
import random
import time
from collections import deque
from typing import Callable, Iterable, Mapping, Sequence

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError, NodeExistsError

from backend.core.model import LeaderAndIsr, LeaderIsrAndControllerEpoch
from backend.zk import codec, paths

WINDOW = 5000
TIMEOUT_S = 60.0


def started_client(hosts: str, timeout_s: float = 30.0) -> KazooClient:
    client = KazooClient(hosts=hosts, timeout=timeout_s)
    client.start(timeout=15)
    return client


def close(client: KazooClient | None) -> None:
    if client is not None:
        client.stop()
        client.close()


def pipelined(calls: Iterable[Callable[[], object]], ignore: tuple[type[BaseException], ...] = (),
              window: int = WINDOW) -> list:
    """Submit each call (which returns a kazoo async result), keeping ``window`` in flight;
    return the results in order (``None`` where an ``ignore``d error came back)."""
    pending: deque = deque()
    out: list = []

    def drain_one() -> None:
        try:
            out.append(pending.popleft().get(timeout=TIMEOUT_S))
        except ignore:
            out.append(None)

    for call in calls:
        pending.append(call())
        if len(pending) >= window:
            drain_one()
    while pending:
        drain_one()
    return out


# -- the starting state: what a Kafka 2.8 cluster holds in ZooKeeper ----------------------------
def preferred_state(replicas: Sequence[int], controller_epoch: int = 1) -> bytes:
    """Leader = preferred replica, ISR = every replica, leader epoch 0."""
    return codec.encode_partition_state(
        LeaderIsrAndControllerEpoch(LeaderAndIsr(replicas[0], 0, tuple(replicas)), controller_epoch))


def seed_cluster(client: KazooClient, topics: Mapping[str, Mapping[int, Sequence[int]]],
                 controller_epoch: int = 1, seed: int = 0) -> int:
    """Create, in ``client``'s chroot, the topic, config and partition-state znodes of
    ``topics`` and ``/controller_epoch``, as a running Kafka cluster would have them.
    Returns the number of znodes created."""
    rng = random.Random(seed)
    for path in (paths.BROKER_TOPICS, paths.CONFIG_TOPICS):
        client.ensure_path(path)
    try:
        client.create(paths.CONTROLLER_EPOCH, codec.encode_controller_epoch(controller_epoch))
    except NodeExistsError:
        client.set(paths.CONTROLLER_EPOCH, codec.encode_controller_epoch(controller_epoch))
    waves: list[list[tuple[str, bytes]]] = [[], [], [], []]
    for topic, assignment in topics.items():
        waves[0].append((paths.topic_config_path(topic), codec.encode_topic_config({})))
        waves[0].append((paths.topic_path(topic),
                         codec.encode_topic_assignment(assignment, codec.new_topic_id(rng))))
        waves[1].append((paths.topic_partitions_path(topic), b""))
        for p, replicas in assignment.items():
            waves[2].append((paths.partition_path(topic, p), b""))
            waves[3].append((paths.partition_state_path(topic, p), preferred_state(replicas, controller_epoch)))
    for wave in waves:  # parents before children
        pipelined(lambda path=path, data=data: client.create_async(path, data) for path, data in wave)
    return sum(len(w) for w in waves) + 1


def delete_tree(client: KazooClient, root: str) -> int:
    """Delete ``root`` and everything below it: list level by level, delete deepest first,
    all pipelined. Returns the number of znodes deleted (0 if ``root`` does not exist)."""
    if client.exists(root) is None:
        return 0
    levels = [[root]]
    while levels[-1]:
        parents = levels[-1]
        children = pipelined((lambda p=p: client.get_children_async(p)) for p in parents)
        levels.append([f"{p.rstrip('/')}/{c}" for p, kids in zip(parents, children) for c in kids])
    for level in reversed(levels):
        pipelined(((lambda p=p: client.delete_async(p)) for p in level), ignore=(NoNodeError,))
    return sum(len(level) for level in levels)


BENCH_ROOT = "/kclab-bench"
"""Where the benches' clusters live (one chroot each below it), apart from any app's clusters."""


def remove_bench_chroot(zk_hosts: str, chroot: str) -> None:
    """Delete a bench cluster's chroot, and ``BENCH_ROOT`` too once no other bench uses it."""
    root = started_client(zk_hosts)
    try:
        delete_tree(root, chroot)
        if root.exists(BENCH_ROOT) and not root.get_children(BENCH_ROOT):
            root.delete(BENCH_ROOT)
    finally:
        close(root)


# -- floors -------------------------------------------------------------------------------------
def make_scratch_znodes(client: KazooClient, root: str, count: int, data: bytes) -> list[str]:
    client.ensure_path(root)
    nodes = [f"{root}/{i}" for i in range(count)]
    pipelined(lambda p=p: client.create_async(p, data) for p in nodes)
    return nodes


def floor_writes(client: KazooClient, nodes: Sequence[str], data: bytes, version: int,
                 mode: str = "async", fence_path: str | None = None, fence_version: int = 0) -> float:
    """Seconds to write ``data`` to every node conditionally at ``version``.

    ``mode``: ``async`` submits every setData first and then collects them all (the
    controller's pattern); ``sync`` waits for each before the next. With ``fence_path`` each
    write is a transaction ``check(fence_path, fence_version) + setData`` — exactly the
    controller's fenced write — instead of a plain conditional setData.
    """
    def submit(path):
        if fence_path is None:
            return client.set_async(path, data, version=version)
        tx = client.transaction()
        tx.check(fence_path, fence_version)
        tx.set_data(path, data, version=version)
        return tx.commit_async()

    start = time.perf_counter()
    if mode == "async":
        handles = [submit(p) for p in nodes]
        results = [h.get(timeout=TIMEOUT_S) for h in handles]
    else:
        results = [submit(p).get(timeout=TIMEOUT_S) for p in nodes]
    elapsed = time.perf_counter() - start
    failed = [r for r in results if isinstance(r, list) and any(isinstance(x, Exception) for x in r)]
    if failed:
        raise RuntimeError(f"floor writes failed: {failed[0]}")
    return elapsed


def floor_reads(client: KazooClient, nodes: Sequence[str]) -> float:
    """Seconds to read every node, all submitted first, then collected."""
    start = time.perf_counter()
    handles = [client.get_async(p) for p in nodes]
    for h in handles:
        h.get(timeout=TIMEOUT_S)
    return time.perf_counter() - start


def floor_failover_reads(client: KazooClient) -> tuple[float, int]:
    """What a new controller must read, read raw (no decoding): the broker registrations, the
    topic znodes and every partition state znode, each group pipelined, in the order failover
    reads them. Returns (seconds, znodes read)."""
    start = time.perf_counter()
    brokers = client.get_children(paths.BROKER_IDS)
    pipelined(lambda b=b: client.get_async(f"{paths.BROKER_IDS}/{b}") for b in brokers)
    topics = client.get_children(paths.BROKER_TOPICS)
    raw = pipelined(lambda t=t: client.get_async(paths.topic_path(t)) for t in topics)
    states = []
    for topic, (data, _) in zip(topics, raw):
        # The partition ids come from the topic znode, as Kafka's controller gets them; only
        # the JSON parse is needed to list the state paths.
        states += [paths.partition_state_path(topic, int(p)) for p in json.loads(data)["partitions"]]
    pipelined(lambda p=p: client.get_async(p) for p in states)
    pipelined(((lambda t=t: client.get_async(paths.topic_config_path(t))) for t in topics), ignore=(NoNodeError,))
    return time.perf_counter() - start, len(brokers) + 2 * len(topics) + len(states)
