"""Kafka's ControllerIntegrationTest scenarios, each a runnable script in lessons/scripts/,
played against the real ZooKeeper; the zombie scenario is also checked record by record and
against ZooKeeper's own data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from backend.runtime.replay import read_replay
from backend.runtime.runner import ScriptRunner, embedded_zookeeper
from backend.faultscript.loader import load_script
from backend.zk import paths

SCRIPTS = sorted(Path(__file__).resolve().parents[2].joinpath("lessons", "scripts").glob("*.yaml"))


def run(path, zk_hosts, chroot, tmp_path, **kwargs):
    records = []
    runner = ScriptRunner(load_script(path), zk_hosts, chroot, replay_dir=tmp_path, on_record=records.append,
                          **kwargs)
    return runner.run(), records


def test_the_examples_are_there():
    assert len(SCRIPTS) >= 13


@pytest.mark.parametrize("path", SCRIPTS, ids=lambda p: p.stem)
def test_scenario_script_passes(path, zk_hosts, chroot, tmp_path):
    if load_script(path).cluster.zookeeper_servers == 3:  # quorum faults need an ensemble of our own
        with embedded_zookeeper(3) as ensemble:
            result, records = run(path, ensemble.hosts, chroot, tmp_path, zk_control=ensemble)
    else:
        result, records = run(path, zk_hosts, chroot, tmp_path)
    assert result.ok, result.message
    replay = read_replay(result.replay_path)
    assert replay.problem is None
    assert replay.header.cluster["chroot"] == chroot
    assert [r.seq for r in replay.records] == list(range(len(replay.records)))
    assert [r.seq for r in records] == [r.seq for r in replay.records]


def test_a_failed_expectation_names_step_expected_and_found(zk_hosts, chroot, tmp_path):
    script = tmp_path / "wrong.yaml"
    script.write_text("cluster: {brokers: [0, 1]}\nsteps:\n  - op: stop_broker\n    broker: 0\n"
                      "  - op: expect\n    within_ms: 300\n    controller: 0\n")
    result, _ = run(script, zk_hosts, chroot, tmp_path)
    assert not result.ok
    assert "wrong.yaml:5: step 2 (line 5) failed" in result.message
    assert "controller: expected 0, found 1" in result.message


def test_zombie_is_fenced_by_zookeeper_and_by_the_brokers(zk_hosts, chroot, zk_client, tmp_path):
    path = next(p for p in SCRIPTS if p.stem == "zombie_controller_fenced")
    result, records = run(path, zk_hosts, chroot, tmp_path, keep=True)
    assert result.ok, result.message
    paused = next(r for r in records if r.kind == "broker" and r.to_state == "paused")
    resumed = next(r for r in records if r.kind == "broker" and r.to_state == "resumed")
    new_controller = next(r for r in records if r.kind == "controller" and r.to_state == "elected"
                          and r.controller_epoch == 2)
    assert paused.seq < new_controller.seq < resumed.seq
    # The brokers refuse the zombie's requests...
    bounced = [r for r in records if r.kind == "request" and r.outcome == "rejected_stale_epoch"]
    assert bounced and all(r.controller_id == 0 and r.controller_epoch == 1 for r in bounced)
    assert {r.op for r in bounced} >= {"LeaderAndIsr"} and all(r.seq > resumed.seq for r in bounced)
    # ...and its write meets its expired session: as in Kafka 2.8, Expire was put when the
    # session was found lost, and the new session waited until Expire was taken
    # (awaitProcessing), so the zombie's event finished against the expired session. Then it
    # resigns, and only then registers again on a new session.
    [refused] = [r for r in records if r.kind == "zk" and r.to_state == "write_refused"]
    assert refused.seq > resumed.seq and refused.outcome == "error" and "SESSIONEXPIRED" in refused.note
    expire = [r for r in records if r.kind == "controller_event" and r.op == "Expire" and r.broker_id == 0]
    queued, taken = (next(r for r in expire if r.to_state == s) for s in ("queued", "processing"))
    assert queued.seq < resumed.seq and refused.seq < taken.seq
    # Every record the zombie's action caused says who acted and the epoch it believed it had.
    assert (refused.controller_id, refused.controller_epoch) == (0, 1)
    acted = [r for r in records if r.kind in ("request", "election", "partition", "replica")
             or (r.kind == "zk" and r.to_state == "write_refused")]
    assert acted and all(r.controller_id is not None and r.controller_epoch is not None for r in acted)
    resigned = next(r for r in records if r.kind == "controller" and r.to_state == "resigned" and r.broker_id == 0)
    assert resigned.seq > refused.seq
    # ZooKeeper's own data (the cluster is stopped, its znodes kept): epoch 2 at version 2, and
    # nothing written by epoch 1 after the new controller's /controller was created.
    data, stat = zk_client.get(paths.CONTROLLER_EPOCH)
    assert data == b"2" and stat.version == 2
    # The new controller's /controller, told once by the observer. Found by its content, not by
    # falling between the pause and the resume: the observer is a session of its own, and on a
    # loaded machine its record of the creation may be stamped after the script's resume.
    [created] = [r for r in records if r.kind == "zk" and r.subject == "znode:/controller"
                 and r.to_state == "created" and r.seq > paused.seq
                 and r.detail["data"]["brokerid"] == new_controller.broker_id]
    assert new_controller.broker_id != 0
    elected_at = created.zxid
    for p in zk_client.get_children(paths.topic_partitions_path("t")):
        state, stat = zk_client.get(paths.partition_state_path("t", int(p)))
        if stat.mzxid > elected_at:
            assert json.loads(state)["controller_epoch"] == 2, (p, state)
    # The zombie came back as an ordinary broker with a new session and broker epoch.
    registrations = [r for r in records if r.kind == "broker" and r.broker_id == 0 and r.to_state == "registered"]
    assert len(registrations) == 2 and registrations[1].seq > taken.seq
    assert registrations[1].detail["broker_epoch"] > registrations[0].detail["broker_epoch"]
