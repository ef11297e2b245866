"""The data plane on the real ZooKeeper: what the ISR protects, and what it does not."""

from __future__ import annotations

from pathlib import Path

from backend.view import cluster_view
from backend.runtime.runner import ScriptRunner
from backend.faultscript.loader import load_script, parse_script

SCRIPTS = Path(__file__).resolve().parents[2] / "lessons" / "scripts"


def play(name, zk_hosts, chroot, tmp_path):
    records = []
    result = ScriptRunner(load_script(SCRIPTS / f"{name}.yaml"), zk_hosts, chroot, replay_dir=tmp_path,
                          on_record=records.append).run()
    assert result.ok, result.message
    return records


def leader_and_isr_waits(records, broker):
    return [r.detail["queue_wait_ms"] for r in records if r.kind == "request" and r.op == "LeaderAndIsr"
            and r.broker_id == broker and r.to_state == "applied"]


def test_controller_requests_wait_behind_produce_requests_unless_they_have_their_own_queue(zk_hosts, chroot, tmp_path):
    shared = leader_and_isr_waits(play("control_plane_queue", zk_hosts, chroot + "/a", tmp_path), 1)
    separate = leader_and_isr_waits(play("control_plane_listener", zk_hosts, chroot + "/b", tmp_path), 1)
    assert max(shared) > 1000, shared      # the ISR change queued behind seconds of produce requests
    assert max(separate) < 200, separate   # KIP-291: the control plane goes first


def test_an_unclean_election_reports_every_lost_message_and_the_old_leader_truncates(zk_hosts, chroot, tmp_path):
    records = play("unclean_election_loses_acks1", zk_hosts, chroot, tmp_path)
    [loss] = [r for r in records if r.outcome == "data_loss"]
    assert (loss.acks, loss.offset, loss.count, loss.leader) == ("1", 2, 5, 1)
    assert loss.detail["offsets"] == [2, 3, 4, 5, 6]
    [truncated] = [r for r in records if r.kind == "log" and r.to_state == "truncated"]
    assert (truncated.broker_id, truncated.offset, truncated.count) == (0, 2, 5)
    election = [r for r in records if r.kind == "election" and r.outcome == "ok"][-1]
    assert election.election == "offline_unclean" and election.leader == 1

    # What the page shows right after the election: the partition's log is now broker 1's,
    # 2 messages, not the 7 the old leader had (the log record a new leader emits).
    wire = [r.to_dict() for r in records]
    became = next(r for r in wire if r["kind"] == "log" and r["to_state"] == "leader_log" and r["broker_id"] == 1
                  and r["seq"] > election.seq)
    before = cluster_view.fold([r for r in wire if r["seq"] < became["seq"]])
    after = cluster_view.fold([r for r in wire if r["seq"] <= became["seq"]])
    assert before["partitions"]["t-0"]["leo"] == 7
    assert (after["partitions"]["t-0"]["leo"], after["partitions"]["t-0"]["hw"]) == (2, 2)
    # The switch was a dynamic broker config, in ZooKeeper where kafka-configs.sh puts it. (Its
    # znode record comes from the ZooKeeper watch, which may land after the election's records:
    # look at the whole session, not at the election.)
    assert cluster_view.fold(wire)["config"]["brokers"]["<default>"] == {"unclean.leader.election.enable": "true"}


def test_a_clean_election_loses_nothing_and_acks_zero_is_never_acknowledged(zk_hosts, chroot, tmp_path):
    records = play("clean_election_loses_nothing", zk_hosts, chroot, tmp_path)
    assert not [r for r in records if r.outcome == "data_loss"]
    [read] = [r for r in records if r.kind == "log" and r.op == "consume"]
    assert read.count == 15 and read.detail["payloads"][:3] == ["m0", "m1", "m2"]
    refused = [r for r in records if r.kind == "log" and r.op == "produce" and r.outcome == "error"]
    assert not refused


STALLED_FOLLOWER = """
name: a stalled follower leaves the ISR once and stays out
cluster:
  brokers: [0, 1, 2]
  config: {replica.lag.time.max.ms: 1000}
  topics:
    t: {assignment: {0: [0, 1, 2]}}
steps:
  - {op: produce, topic: t, partition: 0, count: 3, acks: all}
  - {op: stall_follower, broker: 2, topic: t}
  - {op: expect, within_ms: 10000, partitions: {t-0: {isr: [0, 1]}}}
  - {op: wait_ms, ms: 2500}
  - {op: expect, partitions: {t-0: {isr: [0, 1]}}}
  - {op: resume_follower, broker: 2, topic: t}
  - {op: expect, within_ms: 10000, partitions: {t-0: {isr: [0, 1, 2]}}}
"""


def test_a_stalled_follower_is_not_added_back_until_it_fetches_again(zk_hosts, chroot, tmp_path):
    """Kafka adds a follower back to the ISR only when one of its fetches reaches the high
    watermark; a check on the leader's side alone must not (it made the ISR flap every tick)."""
    records = []
    result = ScriptRunner(parse_script(STALLED_FOLLOWER, "stalled.yaml"), zk_hosts, chroot, replay_dir=tmp_path,
                          on_record=records.append).run()
    assert result.ok, result.message
    changes = [(r.to_state, r.isr) for r in records if r.kind == "isr" and r.outcome == "ok"
               and r.to_state in ("shrunk", "expanded")]
    assert changes == [("shrunk", (0, 1)), ("expanded", (0, 1, 2))], changes


WAITING_PRODUCE = """
name: an acks=all produce that the ISR cannot complete times out
cluster:
  brokers: [0, 1, 2]
  config: {replica.lag.time.max.ms: 60000, replica.fetch.wait.max.ms: 30000, request.timeout.ms: 500}
  topics:
    t: {assignment: {0: [0, 1, 2]}}
steps:
  - {op: produce, topic: t, partition: 0, count: 1, acks: all}
  - {op: stall_follower, broker: 2, topic: t}
  - {op: produce, topic: t, partition: 0, count: 1, acks: all}
"""


def test_an_acks_all_produce_the_isr_cannot_complete_times_out_after_request_timeout_ms(zk_hosts, chroot, tmp_path):
    """The stalled follower stays in the ISR (replica.lag.time.max.ms is a minute), so the second
    produce waits for it — until request.timeout.ms. The leader's replica thread must wake for that
    deadline (the purgatory's ``next_deadline``): its other reasons to run come only every
    replica.fetch.wait.max.ms (30 s here) and replica.lag.time.max.ms / 2."""
    records = []
    result = ScriptRunner(parse_script(WAITING_PRODUCE, "waiting.yaml"), zk_hosts, chroot, replay_dir=tmp_path,
                          on_record=records.append).run()
    assert not result.ok and "REQUEST_TIMED_OUT" in result.message, result.message
    sent = [r for r in records if r.kind == "fault" and r.op == "produce" and r.to_state == "applied"][-1]
    [failed] = [r for r in records if r.kind == "fault" and r.op == "produce" and r.to_state == "failed"]
    [refused] = [r for r in records if r.kind == "log" and r.op == "produce" and r.outcome == "error"]
    assert refused.detail["error"] == "REQUEST_TIMED_OUT"
    # The leader answered, before the step failed: not the producer giving up a second later
    # (request.timeout.ms + 1 s) and the broker's stop at the end answering what still waited.
    assert refused.seq < failed.seq, (refused.seq, failed.seq)
    assert refused.ts_ms - sent.ts_ms >= 500
