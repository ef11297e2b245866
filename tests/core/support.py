"""Helpers for the pure-core tests: build small literal contexts and run programs.

``Run`` answers a program's reads and writes of partition state znodes from a small table
seeded with the context's own leadership cache — what a single, healthy controller would find
in ZooKeeper. A conditional write succeeds when its expected version matches (the version then
goes up by one) and fails with ``bad_version`` otherwise. Tests that need a concurrent writer
change ``znodes`` in ``before_write``; tests that need a zombie pass their own ``answer``.
This table stands for ZooKeeper's data only in these pure tests.
"""

from __future__ import annotations

from backend.core.config import KafkaConfig
from backend.core.controller.context import ControllerContext
from backend.core.model import (
    BrokerInfo, LeaderAndIsr, LeaderIsrAndControllerEpoch, PartitionAndReplica, ReplicaAssignment, TopicPartition,
)
from backend.core.controller.plan import CreatePartitionState, UpdatePartitionState, WriteResult
from backend.core.controller.program import run_program
from backend.core.controller.states import PartitionState, ReplicaState


def tp(name: str) -> TopicPartition:
    topic, _, partition = name.rpartition("-")
    return TopicPartition(topic, int(partition))


class StateZnodes(dict):
    """TopicPartition -> LeaderIsrAndControllerEpoch with the znode's version."""

    def answer(self, write) -> WriteResult:
        if isinstance(write, CreatePartitionState):
            if write.topic_partition in self:
                return WriteResult("error", reason="NodeExists")
            return self._store(write.topic_partition, write.state, 0)
        if isinstance(write, UpdatePartitionState):
            current = self.get(write.topic_partition)
            if current is None or current.leader_and_isr.zk_version != write.state.leader_and_isr.zk_version:
                return WriteResult("bad_version")
            return self._store(write.topic_partition, write.state, current.leader_and_isr.zk_version + 1)
        return WriteResult("ok")

    def _store(self, tp, state, version):
        self[tp] = LeaderIsrAndControllerEpoch(state.leader_and_isr.with_zk_version(version), state.controller_epoch)
        return WriteResult("ok", zk_version=version)


class Run:
    """Run ``fn(ctx, *args)``: its value, and everything it read, wrote, sent and recorded."""

    def __init__(self, fn, ctx, *args, answer=None, before_write=None, znodes=None):
        """``znodes`` overrides what ZooKeeper holds for some partitions (a cache gone stale)."""
        self.writes, self.requests, self.records, self.reads = [], [], [], []
        self.znodes = StateZnodes({**ctx.partition_leadership_info, **(znodes or {})})
        answer = answer or self.znodes.answer

        def execute(plan):
            self.records += plan.records
            if plan.reads:
                self.reads += plan.reads
                return {tp: self.znodes.get(tp) for tp in plan.reads}
            outcomes = []
            for write in plan.writes:
                if before_write:
                    before_write(self, write)
                outcomes.append(answer(write))
            self.writes += plan.writes
            self.requests += plan.requests
            return outcomes

        finished = run_program(fn(ctx, *args), execute)
        self.value, self.controller_moved = finished.value, finished.controller_moved

    @property
    def ctx(self) -> ControllerContext:
        return self.value.ctx

    def requests_of(self, name: str, broker_id: int | None = None):
        return [r for r in self.requests if r.name == name and (broker_id is None or r.broker_id == broker_id)]

    def records_of(self, kind: str):
        return [r for r in self.records if r.kind == kind]


def cluster(
    live=(0, 1, 2), partitions=None, epoch=1, controller_id=0, config=None, shutting_down=(),
) -> ControllerContext:
    """A context for an active controller. ``partitions`` maps "t-0" to
    (assignment, leader, isr[, leader_epoch]); every replica is Online when its broker is live."""
    partitions = partitions or {}
    assignments, leadership, pstates, rstates = {}, {}, {}, {}
    for name, spec in partitions.items():
        assignment, leader, isr, *rest = spec
        leader_epoch = rest[0] if rest else 0
        t = tp(name)
        assignments[t] = ReplicaAssignment(tuple(assignment))
        if leader is not None:
            leadership[t] = LeaderIsrAndControllerEpoch(LeaderAndIsr(leader, leader_epoch, tuple(isr), 0), epoch)
            pstates[t] = PartitionState.OnlinePartition if leader in live else PartitionState.OfflinePartition
        else:
            pstates[t] = PartitionState.NewPartition
        for r in assignment:
            rstates[PartitionAndReplica(t, r)] = (
                ReplicaState.OnlineReplica if r in live else ReplicaState.OfflineReplica)
    return ControllerContext(
        controller_id=controller_id, epoch=epoch, epoch_zk_version=epoch, config=KafkaConfig(config or {}),
        live_brokers={b: BrokerInfo(b, epoch=100 + b) for b in live},
        shutting_down_broker_ids=frozenset(shutting_down),
        all_topics=frozenset(t.topic for t in assignments),
        partition_assignments=assignments, partition_leadership_info=leadership,
        partition_states=pstates, replica_states=rstates,
    )


def state_of(ctx: ControllerContext, name: str):
    info = ctx.partition_leadership_info[tp(name)]
    return info.leader, list(info.isr), info.leader_and_isr.leader_epoch
