"""A sandbox that fails to start leaves nothing behind: its chroot and its claim go with it
(the sweep would find an unclaimed chroot later; this is sooner)."""

from __future__ import annotations

import pytest

from backend.runtime.broker import SimulatedBroker
from backend.scripts.cluster_spec import ClusterSpec
from backend.zk.app_session import AppSession, owner_path
from tests.support import wait_until
from web.sandboxes import SandboxManager


def test_a_failed_creation_removes_its_chroot_and_its_claim(zk_hosts, zk_root_client, tmp_path, monkeypatch):
    owner = AppSession(zk_hosts)
    owner.start()
    wait_until(lambda: owner.client.connected, 15, "the app's session to connect")
    manager = SandboxManager(zk_hosts, tmp_path, owner=owner, chroot_root="/kclab-test/leaks")

    def broken_start(self):
        raise RuntimeError("the broker could not start")

    monkeypatch.setattr(SimulatedBroker, "start", broken_start)
    try:
        with pytest.raises(RuntimeError, match="could not start"):
            manager.create(ClusterSpec(brokers=(0,)))
        assert manager.all() == [] and owner.claimed == set()
        assert zk_root_client.get_children("/kclab-test/leaks") == [], "the chroot it made is gone"
        assert not zk_root_client.exists(owner_path("/kclab-test/leaks")) or \
            zk_root_client.get_children(owner_path("/kclab-test/leaks")) == []
    finally:
        manager.close_all()
        owner.stop()
        zk_root_client.delete("/kclab-test/leaks", recursive=True)
