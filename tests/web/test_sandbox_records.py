"""A sandbox's records reach its replay log and its pages alike: since each record is made a dict
once for both (``Sandbox.take_and_log``), neither may miss one, reorder them or see the other's."""

from __future__ import annotations

import json

from backend.faultscript.cluster_spec import ClusterSpec
from backend.runtime.faults import apply_fault
from backend.runtime.replay import read_replay
from web.sandboxes import SandboxManager


def test_a_sandbox_s_log_holds_every_record_its_pages_are_sent_in_order(zk_hosts, tmp_path):
    manager = SandboxManager(zk_hosts, tmp_path, max_sandboxes=1)
    try:
        sandbox = manager.create(ClusterSpec(brokers=(0, 1)))
        sent = sandbox.drain(limit=100_000)
        # The log is written first, under the bus's lock, so it holds at least what was drained.
        logged = [r.to_dict() for r in read_replay(sandbox.replay.path).records]
        assert len(sent) > 10 and [d["seq"] for d in sent] == list(range(len(sent)))
        assert json.loads(json.dumps(logged[:len(sent)])) == json.loads(json.dumps(sent))
        assert sandbox.view["seq"] >= sent[-1]["seq"]  # folded into the page's view as well
        assert all(d["session_id"] == sandbox.id for d in sent)
        assert all(type(d["isr"]) is list for d in sent if "isr" in d)  # JSON-safe, as the page needs
    finally:
        manager.close_all()


def test_a_fault_s_own_record_wakes_the_broadcaster_though_earlier_records_wait(zk_hosts, tmp_path):
    """The broadcaster holds a watched sandbox's records for its spacing; a fault's own record
    must wake it anyway (``Sandbox.acted``), once, or the click waits behind the spacing."""
    manager = SandboxManager(zk_hosts, tmp_path, max_sandboxes=1)
    try:
        sandbox = manager.create(ClusterSpec(brokers=(0, 1)))
        wakes = []
        sandbox.on_pending = lambda: wakes.append(sandbox.acted)
        assert sandbox.has_pending() and not sandbox.acted  # the start's records, none sent yet
        assert apply_fault(sandbox.cluster, "crash_broker", {"broker": 1}).ok
        assert sandbox.acted and wakes == [True]  # the crash's later records do not wake it again
        # A backlog longer than a batch: the batch before the fault's record leaves it waiting,
        # still marked, so the next round sends it early too.
        fault_at = next(i for i, d in enumerate(sandbox.pending) if d["kind"] == "fault")
        assert fault_at > 0 and sandbox.drain(limit=fault_at)
        assert sandbox.acted and sandbox.pending[0]["kind"] == "fault"
        sandbox.drain(limit=100_000)
        assert not sandbox.acted
    finally:
        manager.close_all()
