"""Fixtures for tests of the live runtime: clusters of simulated brokers on the real ZooKeeper."""

from __future__ import annotations

import uuid

import pytest

from backend.runtime.cluster import Cluster
from backend.runtime.record_bus import RecordBus
from backend.faultscript.cluster_spec import ClusterSpec, TopicSpec


class Recorder:
    """Every record a cluster emits, in seq order."""

    def __init__(self, bus: RecordBus) -> None:
        self.records = []
        bus.subscribe(self.records.extend)

    def of(self, kind: str | None = None, **fields):
        return [r for r in list(self.records)
                if (kind is None or r.kind == kind) and all(getattr(r, k) == v for k, v in fields.items())]


@pytest.fixture
def start_cluster(zk_hosts, chroot):
    """``start_cluster(brokers=(0, 1, 2), topics={"t": {"assignment": {0: [1, 0]}}}, config={})``
    starts a cluster in this test's chroot; returns ``(cluster, recorder)``. Closed after."""
    started = []

    def start(brokers=(0, 1, 2), topics=None, config=None, zk_control=None, observe=True):
        topic_specs = {}
        for name, spec in (topics or {}).items():
            assignment = spec.get("assignment")
            topic_specs[name] = TopicSpec(
                spec.get("partitions", len(assignment) if assignment else 1),
                spec.get("replication_factor", len(next(iter(assignment.values()))) if assignment else 1),
                {int(p): tuple(r) for p, r in assignment.items()} if assignment else None,
                spec.get("config", {}))
        session = f"test-{uuid.uuid4().hex[:8]}"
        bus = RecordBus(session)
        recorder = Recorder(bus)
        cluster = Cluster(zk_hosts, chroot, ClusterSpec(tuple(brokers), topic_specs, dict(config or {})),
                          session, bus, zk_control=zk_control, observe=observe)
        started.append(cluster)
        cluster.start()
        return cluster, recorder

    yield start
    for cluster in started:
        cluster.close()
