"""The controller's AlterIsr decision (``processAlterIsr``, inter.broker.protocol.version ≥ 2.7),
and the protocol version's switches (Kafka's ``ApiVersion``)."""

import pytest

from backend.core import ibp
from backend.core.config import ConfigError, KafkaConfig
from backend.core.controller import alter_isr, reassignment
from backend.core.controller.plan import UpdatePartitionState, WriteResult
from backend.core.model import LeaderAndIsr

from .support import Run, cluster, state_of, tp


def _alter(ctx, proposed, **kwargs):
    return Run(alter_isr.process_alter_isr, ctx, 1, {tp(n): lai for n, lai in proposed.items()}, **kwargs)


def test_a_shrink_is_written_by_the_controller_with_its_epoch_at_the_leaders_version():
    ctx = cluster(partitions={"t-0": ([1, 2], 1, [1, 2], 4)}, epoch=7)
    run = _alter(ctx, {"t-0": LeaderAndIsr(1, 4, (1,), 0)})
    [write] = run.writes
    assert isinstance(write, UpdatePartitionState)
    assert write.state.controller_epoch == 7 and write.state.leader_and_isr == LeaderAndIsr(1, 4, (1,), 0)
    assert run.value.value[tp("t-0")] == ("NONE", LeaderAndIsr(1, 4, (1,), 1))
    assert state_of(run.ctx, "t-0") == (1, [1], 4)  # the leader epoch stays
    assert {r.broker_id for r in run.requests_of("UpdateMetadata")} == {0, 1, 2}
    [record] = run.records_of("isr")
    assert record.to_state == "shrunk" and record.detail["written_by"] == "controller" and record.controller_epoch == 7


def test_each_partition_gets_kafkas_answer():
    ctx = cluster(partitions={"t-0": ([1, 2], 1, [1, 2], 4), "t-1": ([1, 2], 1, [1, 2], 4),
                              "t-2": ([1, 2], 1, [1], 4), "t-3": ([1, 2], 1, [1, 2], 4)})
    run = _alter(ctx, {"t-0": LeaderAndIsr(1, 3, (1,), 0),  # an older leader epoch: the leader was replaced
                       "t-1": LeaderAndIsr(1, 4, (1,), 9),  # a znode version that is not the znode's
                       "t-2": LeaderAndIsr(1, 4, (1,), 0),  # already so: nothing to write
                       "u-0": LeaderAndIsr(1, 0, (1,), 0),  # no such partition
                       "t-3": LeaderAndIsr(1, 5, (1,), 0)})  # a newer epoch than the controller's is written
    answers = {str(k): v for k, v in run.value.value.items()}
    assert answers["t-0"] == ("FENCED_LEADER_EPOCH", None)
    assert answers["t-1"] == ("INVALID_UPDATE_VERSION", None)
    assert answers["t-2"] == ("NONE", LeaderAndIsr(1, 4, (1,), 0))
    assert answers["u-0"] == ("UNKNOWN_TOPIC_OR_PARTITION", None)
    assert answers["t-3"][0] == "NONE"
    assert sorted(str(w.topic_partition) for w in run.writes) == ["t-1", "t-3"]
    assert state_of(run.ctx, "t-1") == (1, [1, 2], 4)  # a refused write leaves the cache alone


def test_the_request_is_refused_for_a_stale_or_unknown_broker_epoch():
    ctx = cluster(partitions={"t-0": ([1, 2], 1, [1, 2])})
    assert alter_isr.check_request(ctx, 1, 101) is None
    assert alter_isr.check_request(ctx, 1, 100) == "STALE_BROKER_EPOCH"
    assert alter_isr.check_request(ctx, 5, 105) == "STALE_BROKER_EPOCH"


def test_a_fenced_write_ends_the_program():
    ctx = cluster(partitions={"t-0": ([1, 2], 1, [1, 2])})
    run = _alter(ctx, {"t-0": LeaderAndIsr(1, 0, (1,), 0)},
                 answer=lambda write: WriteResult("rejected_stale_epoch"))
    assert run.controller_moved and run.value is None


def test_an_expansion_completes_a_reassignment_waiting_for_it():
    ctx = cluster(live=(0, 1), partitions={"t-0": ([0], 0, [0], 0)})
    started = Run(reassignment.process_zk_partition_reassignment, ctx, {tp("t-0"): (1,)})
    lai = started.ctx.partition_leadership_info[tp("t-0")].leader_and_isr
    run = Run(alter_isr.process_alter_isr, started.ctx, 0, {tp("t-0"): LeaderAndIsr(0, lai.leader_epoch, (0, 1),
                                                                                   lai.zk_version)},
              znodes=started.znodes)
    assert run.value.value[tp("t-0")][0] == "NONE"
    done = Run(alter_isr.complete_reassignments, run.ctx, run.value.value, znodes=run.znodes)
    assert tp("t-0") not in done.ctx.partitions_being_reassigned
    assert state_of(done.ctx, "t-0")[0] == 1


@pytest.mark.parametrize("version, alter_isr_on, registration, topic_ids", [
    ("2.4", False, 4, False), ("2.6", False, 4, False), ("2.6-IV0", False, 4, False), ("2.7-IV0", False, 5, False),
    ("2.7-IV1", False, 5, False), ("2.7", True, 5, False), ("2.8-IV0", True, 5, True), ("2.8", True, 5, True)])
def test_the_protocol_versions_switches_are_kafkas(version, alter_isr_on, registration, topic_ids):
    assert ibp.is_alter_isr_supported(version) is alter_isr_on
    assert ibp.broker_registration_version(version) == registration
    assert ibp.uses_topic_id(version) is topic_ids


def test_the_setting_takes_kafkas_names_and_yaml_numbers_and_refuses_the_rest():
    assert KafkaConfig()["inter.broker.protocol.version"] == "2.8"
    assert KafkaConfig({"inter.broker.protocol.version": 2.6})["inter.broker.protocol.version"] == "2.6"
    assert KafkaConfig({"inter.broker.protocol.version": "2.7-IV1"})["inter.broker.protocol.version"] == "2.7-IV1"
    for bad in ("3.0", "2.9", 2.10, "", True, "2.8-IV2"):
        with pytest.raises(ConfigError, match="inter.broker.protocol.version must be one of"):
            KafkaConfig({"inter.broker.protocol.version": bad})
