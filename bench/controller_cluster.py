"""The controller bench's cluster: a real ``Cluster`` of the lab on the bench's own ZooKeeper,
seeded straight into ZooKeeper at 10,000+ partitions, the records it emits (``Seen``), and an
optional profile of the controller's event thread (``EventProfiler``)."""

from __future__ import annotations

import cProfile
import io
import math
import pstats
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable

from backend.core.assignment import assign_replicas_to_brokers
from backend.core.records import Record
from backend.faultscript.cluster_spec import ClusterSpec
from backend.runtime.cluster import Cluster
from backend.runtime.polling import poll_until
from backend.runtime.record_bus import RecordBus
from backend.zk import codec, paths
from bench.zk_tools import BENCH_ROOT, close, remove_bench_chroot, seed_cluster, started_client

PLACEHOLDER_CONTROLLER = 999
"""A ``/controller`` held by the bench while the brokers start, so that all of them are
registered before anyone can win: the first real controller then fails over a whole cluster."""
CONFIG = {
    # Follower threads would otherwise fetch (and leaders check their ISR) every 200 ms over
    # tens of thousands of partitions, competing for the 2 cores: once a minute (the most the
    # lab's settings allow, backend/core/config.py) hardly ever lands in a run.
    "replica.fetch.wait.max.ms": 60_000,
    "replica.lag.time.max.ms": 3_600_000,
    # Kafka's default session timeout: heartbeats of 6 sessions must survive a busy GIL.
    "zookeeper.session.timeout.ms": 18_000,
    # No preferred-replica election check may land in the middle of a measurement.
    "auto.leader.rebalance.enable": False,
}


@dataclass
class Seen:
    """The records a bench needs, caught by a bus sink (the bus keeps only the last 20,000)."""

    marks: list[Record] = field(default_factory=list)
    elections: list[tuple[int, int, str]] = field(default_factory=list)  # (seq, ts_ms, outcome)
    isr_changes: list[tuple[int, int]] = field(default_factory=list)  # (seq, ts_ms)
    counts: dict[str, int] = field(default_factory=dict)

    def __call__(self, records: list[Record]) -> None:
        for r in records:
            self.counts[r.kind] = self.counts.get(r.kind, 0) + 1
            if r.kind in ("controller", "broker", "controller_event"):
                self.marks.append(r)
            elif r.kind == "election":
                self.elections.append((r.seq, r.ts_ms, r.outcome))
            elif r.kind == "isr":
                self.isr_changes.append((r.seq, r.ts_ms))

    def first(self, after_seq: int = -1, **match) -> Record | None:
        return next((r for r in self.marks if r.seq > after_seq
                     and all(getattr(r, k) == v for k, v in match.items())), None)


def wait_for(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    return poll_until(predicate, timeout, what, interval=0.01)


# -- profiling the controller thread ------------------------------------------------------------
class EventProfiler:
    """Wraps every broker's controller event processing in its own ``cProfile.Profile``
    while armed, and keeps the profile of the longest event (the measured one)."""

    def __init__(self) -> None:
        self.armed = False
        self.longest: tuple[float, str, cProfile.Profile] | None = None
        self._lock = threading.Lock()

    def install(self, cluster: Cluster) -> None:
        for broker in cluster.brokers.values():
            manager = broker.controller.events
            manager._process = self._wrap(manager._process)

    def _wrap(self, process):
        def profiled(queued):
            if not self.armed:
                return process(queued)
            profile, start = cProfile.Profile(), time.perf_counter()
            profile.enable()
            try:
                return process(queued)
            finally:
                profile.disable()
                elapsed = time.perf_counter() - start
                with self._lock:
                    if self.longest is None or elapsed > self.longest[0]:
                        self.longest = (elapsed, queued.event.name, profile)
        return profiled

    def report(self, limit: int = 40) -> str:
        if self.longest is None:
            return "(nothing profiled)\n"
        elapsed, name, profile = self.longest
        out = io.StringIO()
        out.write(f"# cProfile of the controller thread handling {name} ({elapsed:.2f} s under the profiler)\n")
        for key in ("cumulative", "tottime"):
            out.write(f"\n## sorted by {key}\n")
            pstats.Stats(profile, stream=out).strip_dirs().sort_stats(key).print_stats(limit)
        return out.getvalue()


# -- one cluster ----------------------------------------------------------------------------------
class BenchCluster:
    """A ``Cluster`` whose znodes were written before its brokers started, in its own chroot."""

    def __init__(self, zk_hosts: str, brokers: int, partitions: int, topics: int, sync_writes: bool,
                 multi_read: bool = True) -> None:
        self.zk_hosts = zk_hosts
        self.broker_ids = tuple(range(1, brokers + 1))
        self.session_id = f"bench-{uuid.uuid4().hex[:8]}"
        self.chroot = f"{BENCH_ROOT}/{self.session_id}"
        self.sync_writes = sync_writes
        self.multi_read = multi_read
        per_topic = math.ceil(partitions / topics)
        self.topics: dict[str, dict[int, list[int]]] = {}
        left = partitions
        for i in range(topics):
            n = min(per_topic, left)
            left -= n
            # Kafka's assignment with a fixed start index: broker b leads every n-th partition.
            self.topics[f"bench-{i}"] = assign_replicas_to_brokers(n, 3, self.broker_ids, fixed_start_index=0)
        self.bus = RecordBus(self.session_id)
        self.seen = Seen()
        self.bus.subscribe(self.seen)
        config = {**CONFIG, "kclab.zk.pipelined.writes": not sync_writes}  # --sync-writes: Kafka before 1.1
        self.cluster = Cluster(zk_hosts, self.chroot, ClusterSpec(brokers=self.broker_ids, config=config),
                               self.session_id, self.bus, observe=False)
        self.client = None  # a plain kazoo client in the chroot: seeding, floors, checks
        self._placeholder = None
        self.seed_s = 0.0
        self.seeded = 0

    def preferred_leaders(self) -> dict[int, list[tuple[str, int]]]:
        led: dict[int, list[tuple[str, int]]] = {b: [] for b in self.broker_ids}
        for topic, assignment in self.topics.items():
            for p, replicas in assignment.items():
                led[replicas[0]].append((topic, p))
        return led

    def prepare(self, timeout: float) -> None:
        """Seed the znodes and start every broker behind a placeholder ``/controller``, so all
        of them are registered before anyone can win it."""
        root = started_client(self.zk_hosts)
        try:
            root.ensure_path(self.chroot)
        finally:
            close(root)
        self.client = started_client(self.zk_hosts + self.chroot)
        start = time.perf_counter()
        self.seeded = seed_cluster(self.client, self.topics)
        self.seed_s = time.perf_counter() - start
        self._placeholder = started_client(self.zk_hosts + self.chroot)
        self._placeholder.create(paths.CONTROLLER, codec.encode_controller(PLACEHOLDER_CONTROLLER), ephemeral=True)
        # What Cluster.start does, minus its wait for the first broker to win /controller.
        cluster = self.cluster
        cluster.open()
        cluster.zk_since_3_6 = self.multi_read and cluster.zk_since_3_6
        for broker_id in self.broker_ids:
            cluster.brokers[broker_id].start()
        wait_for(lambda: len(self.client.get_children(paths.BROKER_IDS)) == len(self.broker_ids), timeout,
                 "every broker to register")
        wait_for(lambda: all(b.controller.events.is_idle() for b in cluster.brokers.values()), timeout,
                 "the brokers' controller threads to settle")

    def release(self) -> int:
        """Close the placeholder's session: ``/controller`` vanishes and every broker races for
        it; the winner fails over the whole cluster. Returns the bus's seq at that moment."""
        mark = self.bus.next_seq
        close(self._placeholder)
        self._placeholder = None
        return mark

    def wait_active(self, after_seq: int, timeout: float) -> tuple[Record, Record]:
        elected = wait_for(lambda: self.seen.first(after_seq, kind="controller", to_state="elected"), timeout,
                           "a controller to be elected")
        active = wait_for(lambda: self.seen.first(elected.seq, kind="controller", to_state="active",
                                                  controller_id=elected.controller_id), timeout,
                          f"broker {elected.controller_id} to become the active controller")
        if not self.cluster.wait_stable(timeout, quiet_s=0.3):
            raise TimeoutError("the cluster did not settle")
        return elected, active

    def close(self) -> None:
        try:
            close(self._placeholder)
            self.cluster.close(keep=True)
        finally:
            close(self.client)
            remove_bench_chroot(self.zk_hosts, self.chroot)
