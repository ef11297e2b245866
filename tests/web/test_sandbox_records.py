"""A sandbox's records reach its replay log and its pages alike: since each record is made a dict
once for both (``Sandbox.take_and_log``), neither may miss one, reorder them or see the other's."""

from __future__ import annotations

import json

from backend.faultscript.cluster_spec import ClusterSpec
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
