"""A Hypothesis rule-based machine that drives the pure controller through random histories.

Broker crashes, restarts and bounces, controlled shutdowns, topic creations, reassignments,
preferred elections, leader-made ISR changes (some not yet announced, so the controller's
writes hit BADVERSION), controller failovers — and the zombie: the previous controller keeps
acting with its old epoch. After every step the invariants of the issue must hold.

The test keeps one small oracle: the partition state znodes as the writes left them, with
their versions, so a conditional write can be answered truthfully. It stands for ZooKeeper's
data only in this pure test; everything that really talks to ZooKeeper is tested against a
real server.
"""

from __future__ import annotations

import random

from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from backend.core.controller import broker_change, controlled_shutdown, failover, isr_change, leader_balance, reassignment, topic_change
from backend.core.assignment import assign_replicas_to_brokers
from backend.core.config import KafkaConfig
from backend.core.controller.context import ControllerContext
from backend.core.errors import KafkaException
from backend.core.model import NO_LEADER, BrokerInfo, LeaderAndIsr, LeaderIsrAndControllerEpoch, TopicPartition
from backend.core.controller.plan import CreatePartitionState, UpdatePartitionState, WriteResult
from backend.core.controller.program import run_program
from backend.core.controller.states import PartitionState, state_by_name, is_valid_transition

BROKERS = range(5)


class ControllerMachine(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.epoch, self.epoch_zk_version = 1, 1
        self.next_broker_epoch = 100
        self.live = {b: self._new_epoch() for b in (0, 1, 2)}
        self.znodes: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        self.highest_leader_epoch: dict[TopicPartition, int] = {}
        self.unclean: set[TopicPartition] = set()
        self.unannounced: set[TopicPartition] = set()
        self.topics = 0
        self.unclean_enabled = False
        self.ctx, _ = failover.become_controller(ControllerContext(controller_id=0), 1, 1)
        self.ctx = self._run(self.ctx, failover.on_controller_failover(self.ctx, self._metadata()))
        self.zombie: ControllerContext | None = None

    # -- the driver -----------------------------------------------------------------------
    def _new_epoch(self):
        self.next_broker_epoch += 1
        return self.next_broker_epoch

    def _answer(self, writer: ControllerContext, write) -> WriteResult:
        if writer.epoch_zk_version != self.epoch_zk_version:
            return WriteResult("rejected_stale_epoch")  # the check on /controller_epoch fails
        assert writer.epoch == self.epoch, "a write of an older controller epoch was about to be applied"
        if isinstance(write, CreatePartitionState):
            if write.topic_partition in self.znodes:
                return WriteResult("error", reason="NodeExists")
            return self._store(write.topic_partition, write.state, 0)
        if isinstance(write, UpdatePartitionState):
            current = self.znodes.get(write.topic_partition)
            if current is None or current.leader_and_isr.zk_version != write.state.leader_and_isr.zk_version:
                return WriteResult("bad_version")
            return self._store(write.topic_partition, write.state, current.leader_and_isr.zk_version + 1)
        return WriteResult("ok")

    def _store(self, tp, state, version) -> WriteResult:
        stored = LeaderIsrAndControllerEpoch(state.leader_and_isr.with_zk_version(version), state.controller_epoch)
        self.znodes[tp] = stored
        return WriteResult("ok", zk_version=version)

    def _run(self, writer, program):
        """Run ``program`` for ``writer``; ``None`` when it learned it was fenced. A program whose
        write ZooKeeper refused must stop there: nothing more is read, written or sent."""
        records, fenced = [], []

        def execute(plan):
            assert not fenced, f"the program went on after a fenced write: {plan}"
            records.extend(plan.records)
            if plan.reads:
                return {tp: self.znodes.get(tp) for tp in plan.reads}
            outcomes = [self._answer(writer, w) for w in plan.writes]
            fenced.extend(o for o in outcomes if o.outcome == "rejected_stale_epoch")
            return outcomes

        finished = run_program(program, execute)
        self._check_records(records)
        assert finished.controller_moved == bool(fenced), "a fenced write must end the program as a moved controller"
        if finished.controller_moved:
            return None
        return finished.value.ctx

    def _check_records(self, records):
        for r in records:
            if r.kind in ("partition", "replica") and r.outcome == "ok" and r.from_state is not None:
                assert is_valid_transition(state_by_name(r.from_state), state_by_name(r.to_state)), r
            if r.kind == "election" and r.election == "offline_unclean" and r.outcome == "ok":
                assert self.unclean_enabled, f"an unclean election while unclean.leader.election.enable is false: {r}"
                self.unclean.add(TopicPartition(r.topic, r.partition))

    def _brokers(self):
        return {b: BrokerInfo(b, e) for b, e in self.live.items()}

    def _metadata(self, ctx=None):
        ctx = ctx or ControllerContext(controller_id=0)
        assignments = {}
        for tp, a in ctx.partition_assignments.items():
            assignments.setdefault(tp.topic, {})[tp.partition] = a
        return failover.ClusterMetadata(brokers=self._brokers(), assignments=assignments,
                                        partition_states=dict(self.znodes))

    def _broker_change(self):
        self.ctx = self._run(self.ctx, broker_change.process_broker_change(self.ctx, self._brokers()))

    # -- rules ------------------------------------------------------------------------------
    @precondition(lambda self: len(self.live) > 0)
    @rule(data=st.data())
    def crash_broker(self, data):
        broker = data.draw(st.sampled_from(sorted(self.live)))
        del self.live[broker]
        self._broker_change()

    @precondition(lambda self: len(self.live) < len(BROKERS))
    @rule(data=st.data())
    def start_broker(self, data):
        broker = data.draw(st.sampled_from(sorted(set(BROKERS) - set(self.live))))
        self.live[broker] = self._new_epoch()
        self._broker_change()

    @precondition(lambda self: len(self.live) > 0)
    @rule(data=st.data())
    def bounce_broker(self, data):
        self.live[data.draw(st.sampled_from(sorted(self.live)))] = self._new_epoch()
        self._broker_change()

    @precondition(lambda self: len(self.live) > 0)
    @rule(data=st.data())
    def controlled_shutdown_then_stop(self, data):
        broker = data.draw(st.sampled_from(sorted(self.live)))
        result = self._run_value(controlled_shutdown.do_controlled_shutdown(self.ctx, broker, self.live[broker]))
        if result is not None:
            self.ctx = result[0]
        del self.live[broker]
        self._broker_change()

    def _run_value(self, program):
        holder = {}

        def capture():
            holder["value"] = yield from program
            return holder["value"]

        ctx = self._run(self.ctx, capture())
        return holder.get("value") if ctx is not None else None

    @precondition(lambda self: self.topics < 4 and len(self.live) > 0)
    @rule(partitions=st.integers(1, 3), rf=st.integers(1, 3), seed=st.integers(0, 99))
    def create_topic(self, partitions, rf, seed):
        try:
            assignment = assign_replicas_to_brokers(partitions, rf, self.live, rng=random.Random(seed))
        except KafkaException:
            return
        topic = f"t{self.topics}"
        self.topics += 1
        from backend.core.model import ReplicaAssignment
        parts = {p: ReplicaAssignment(tuple(r)) for p, r in assignment.items()}
        self.ctx = self._run(self.ctx, topic_change.process_topic_change(
            self.ctx, self.ctx.all_topics | {topic}, {topic: parts}))

    @precondition(lambda self: self.ctx.partition_assignments)
    @rule(data=st.data())
    def reassign(self, data):
        tp = data.draw(st.sampled_from(sorted(self.ctx.partition_assignments)))
        target = data.draw(st.lists(st.sampled_from(list(BROKERS)), min_size=1, max_size=3, unique=True))
        self.ctx = self._run(self.ctx, reassignment.process_zk_partition_reassignment(self.ctx, {tp: tuple(target)}))

    @precondition(lambda self: self.ctx.partition_assignments)
    @rule(data=st.data())
    def preferred_election(self, data):
        tps = data.draw(st.lists(st.sampled_from(sorted(self.ctx.partition_assignments)), min_size=1, unique=True))
        self.ctx = self._run(self.ctx, leader_balance.process_replica_leader_election(self.ctx, tps))

    @rule()
    def auto_leader_rebalance(self):
        self.ctx = self._run(self.ctx, leader_balance.check_and_trigger_auto_leader_rebalance(self.ctx))

    @rule()
    def enable_unclean_election(self):
        self.unclean_enabled = True
        self.ctx = self.ctx.evolve(config=KafkaConfig({"unclean.leader.election.enable": True}))
        from backend.core.controller.partition_state_machine import trigger_online_partition_state_change
        self.ctx = self._run(self.ctx, trigger_online_partition_state_change(self.ctx))

    @precondition(lambda self: self.znodes)
    @rule(data=st.data(), announce=st.booleans())
    def leader_changes_isr(self, data, announce):
        """The partition's leader shrinks or expands the ISR itself (no leader epoch bump)."""
        tp = data.draw(st.sampled_from(sorted(self.znodes)))
        state = self.znodes[tp]
        lai = state.leader_and_isr
        if lai.leader == NO_LEADER or lai.leader not in self.live or tp not in self.ctx.partition_assignments:
            return
        replicas = self.ctx.partition_replica_assignment(tp)
        joiners = [r for r in replicas if r in self.live and r not in lai.isr]
        leavers = [r for r in lai.isr if r != lai.leader]
        if joiners and (not leavers or data.draw(st.booleans())):
            isr = (*lai.isr, data.draw(st.sampled_from(joiners)))
        elif leavers:
            isr = tuple(r for r in lai.isr if r != data.draw(st.sampled_from(leavers)))
        else:
            return
        self.znodes[tp] = LeaderIsrAndControllerEpoch(
            LeaderAndIsr(lai.leader, lai.leader_epoch, isr, lai.zk_version + 1), state.controller_epoch)
        self.unannounced.add(tp)
        if announce:
            self.announce_isr_changes()

    @precondition(lambda self: self.unannounced)
    @rule()
    def announce_isr_changes(self):
        states = {tp: self.znodes[tp] for tp in self.unannounced if tp in self.znodes}
        self.unannounced.clear()
        self.ctx = self._run(self.ctx, isr_change.process_isr_change_notification(self.ctx, ("0",), states))

    @rule()
    def controller_failover(self):
        """A new controller wins; the old one lives on as a zombie with its stale epoch."""
        self.zombie = self.ctx
        self.epoch += 1
        self.epoch_zk_version += 1
        new, _ = failover.become_controller(ControllerContext(controller_id=0, config=self.ctx.config),
                                            self.epoch, self.epoch_zk_version)
        self.unannounced.clear()  # failover re-reads every state znode
        self.ctx = self._run(new, failover.on_controller_failover(new, self._metadata(self.ctx)))

    @precondition(lambda self: self.zombie is not None)
    @rule()
    def zombie_acts(self):
        before = dict(self.znodes)
        result = self._run(self.zombie, broker_change.process_broker_change(self.zombie, self._brokers()))
        assert self.znodes == before, "a zombie's write reached the partition state znodes"
        if result is None:
            self.zombie = None  # it learned that it moved and resigns

    @precondition(lambda self: self.zombie is not None and len(self.live) > 1)
    @rule(data=st.data())
    def zombie_acts_first_on_a_crash(self, data):
        """A broker dies and the zombie hears of it before the new controller does: it reads
        states its successor has not rewritten yet, so it really writes — and is fenced."""
        del self.live[data.draw(st.sampled_from(sorted(self.live)))]
        self.zombie_acts()
        self._broker_change()

    # -- invariants -------------------------------------------------------------------------
    @invariant()
    def leader_in_isr_within_assignment(self):
        for tp, info in self.znodes.items():
            if tp not in self.ctx.partition_assignments or tp in self.unclean:
                continue
            replicas = set(self.ctx.partition_replica_assignment(tp))
            if info.leader != NO_LEADER:
                assert info.leader in info.isr, (tp, info)
                assert set(info.isr) <= replicas, (tp, info, replicas)
            else:  # Kafka keeps a leaderless partition's last ISR member, even one a reassignment removed
                assert len(info.isr) == 1 or set(info.isr) <= replicas, (tp, info, replicas)
            assert info.isr, "ZooKeeper must never hold an empty ISR"

    @invariant()
    def epochs_never_decrease(self):
        for tp, info in self.znodes.items():
            assert info.leader_and_isr.leader_epoch >= self.highest_leader_epoch.get(tp, -1), tp
            self.highest_leader_epoch[tp] = info.leader_and_isr.leader_epoch
            assert info.controller_epoch <= self.epoch

    @invariant()
    def online_partitions_have_live_leaders(self):
        for tp, state in self.ctx.partition_states.items():
            if state is PartitionState.OnlinePartition:
                leader = self.ctx.partition_leadership_info[tp].leader
                assert leader in self.live, (tp, leader, sorted(self.live))

    @invariant()
    def controller_cache_matches_zookeeper(self):
        """Once every leader-made ISR change is announced, the cache is what ZooKeeper holds.
        (Only the leader and ISR: like Kafka, a state read but not rewritten is cached with
        this controller's epoch.)"""
        for tp, info in self.ctx.partition_leadership_info.items():
            if tp not in self.unannounced:
                assert self.znodes[tp].leader_and_isr == info.leader_and_isr, (tp, self.znodes[tp], info)


ControllerMachine.TestCase.settings = settings(
    max_examples=int(__import__("os").environ.get("KCLAB_HYPOTHESIS_EXAMPLES", 150)),
    stateful_step_count=30, deadline=None, suppress_health_check=[HealthCheck.too_slow],
)
TestController = ControllerMachine.TestCase
