"""The sandbox limit counts sandboxes still being built: requests arriving together (a lesson's
cluster takes seconds to build) cannot pass ``max_sandboxes``."""

from __future__ import annotations

import pytest

from backend.faultscript.cluster_spec import ClusterSpec
from web.sandboxes import SandboxLimit, SandboxManager


def test_a_sandbox_being_built_holds_its_place_under_the_limit(zk_hosts, tmp_path):
    manager = SandboxManager(zk_hosts, tmp_path, max_sandboxes=2)
    spec = ClusterSpec(brokers=(0,))
    try:
        first = manager.create(spec)
        reserved = manager._reserve("lesson")  # a lesson session half-built, as create_lesson_session leaves it
        with pytest.raises(SandboxLimit, match="runs 2 sandboxes, as many as it holds"):
            manager.create(spec)
        manager._register(reserved, None)  # building it failed: the place is free again
        second = manager.create(spec)
        assert {s.id for s in manager.all()} == {first.id, second.id}
    finally:
        manager.close_all()
