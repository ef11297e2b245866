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


def test_a_closing_sandbox_holds_its_place_until_its_cluster_is_closed(zk_hosts, tmp_path):
    """Closing a sandbox stops its brokers and sessions, which takes a while; until that is done
    its threads and memory are still the machine's, so its place is not free yet — else another
    student's new sandbox could start beside it, one cluster past the cap."""
    manager = SandboxManager(zk_hosts, tmp_path, max_sandboxes=1)
    spec = ClusterSpec(brokers=(0,))
    sandbox = manager.create(spec)
    held_during_close: list[int] = []
    close_cluster = sandbox.cluster.close

    def close_and_look() -> None:
        held_during_close.append(manager.places.running())
        close_cluster()
    sandbox.cluster.close = close_and_look
    try:
        manager.close(sandbox.id)
        assert held_during_close == [1]
        assert manager.places.running() == 0
        manager.create(spec)  # and the place is free once it is closed
    finally:
        manager.close_all()
