"""A sandbox that fails to start leaves nothing behind. When ZooKeeper itself is why it failed,
its chroot cannot be deleted at once; its claim is released all the same, so the next sweep —
of this process or of any other sharing the ensemble — removes it."""

from __future__ import annotations

import pytest
from kazoo.exceptions import ConnectionLoss

from backend.runtime.broker.broker import SimulatedBroker
from backend.faultscript.cluster_spec import ClusterSpec
from backend.zk.app_session import AppSession
from backend.zk.operator import OperatorSession
from web.sandboxes import SandboxManager

ROOT = "/kclab-test/leaks"


def test_a_failed_creation_s_chroot_is_unclaimed_and_swept(zk_hosts, zk_root_client, tmp_path, monkeypatch):
    owner = AppSession(zk_hosts)
    assert owner.start(wait_s=15), "the app's session connects"
    manager = SandboxManager(zk_hosts, tmp_path, owner=owner, chroot_root=ROOT)

    def broken_start(self):
        raise ConnectionLoss("ZooKeeper went away while the broker started")

    def no_delete(self):
        raise ConnectionLoss("and it is still away")

    monkeypatch.setattr(SimulatedBroker, "start", broken_start)
    monkeypatch.setattr(OperatorSession, "_delete_chroot", no_delete)
    try:
        with pytest.raises(ConnectionLoss):
            manager.create(ClusterSpec(brokers=(0,)))
        [left] = zk_root_client.get_children(ROOT)
        assert manager.all() == [] and owner.claimed == set(), "nothing is held for the failed sandbox"
        assert manager.sweep(grace_s=0) == [f"{ROOT}/{left}"]
        assert zk_root_client.get_children(ROOT) == []
    finally:
        manager.close_all()
        owner.stop()
        zk_root_client.delete(ROOT, recursive=True)
