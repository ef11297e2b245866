"""``KafkaZkClient.register_broker`` against the real ZooKeeper: Kafka 2.8's checked ephemeral
create (``KafkaZkClient.CheckedEphemeral``), including the race a student's start can hit, when
the crashed process's registration vanishes between the create that found it and the read of its
owner ("went away while reading it, attempting create() again")."""

from __future__ import annotations

import pytest
from kazoo.client import KazooClient

from backend.core.errors import NodeExistsException
from backend.zk import paths
from backend.zk.client import KafkaZkClient


def _other_session(zk_hosts: str, chroot: str) -> KazooClient:
    other = KazooClient(hosts=zk_hosts + chroot)
    other.start(timeout=15)
    other.ensure_path(paths.BROKER_IDS)
    return other


def test_a_registration_held_by_another_session_is_refused(zk_hosts, chroot, zk_client):
    other = _other_session(zk_hosts, chroot)
    try:
        other.create(paths.broker_path(1), b"{}", ephemeral=True)
        with pytest.raises(NodeExistsException, match="owned by session"):
            KafkaZkClient(zk_client).register_broker(1)
    finally:
        other.stop()
        other.close()


def test_a_registration_that_vanishes_before_it_is_read_is_created_again(zk_hosts, chroot, zk_client):
    other = _other_session(zk_hosts, chroot)
    other.create(paths.broker_path(1), b"{}", ephemeral=True)
    real_get = zk_client.get_async
    read = []

    def the_session_ends_first(path, *args, **kwargs):
        """The create has just found the znode; the other session ends before it is read."""
        if path == paths.broker_path(1) and not read:
            read.append(path)
            other.stop()  # closes the session: ZooKeeper deletes its ephemeral znode
            other.close()
        return real_get(path, *args, **kwargs)
    zk_client.get_async = the_session_ends_first
    try:
        czxid = KafkaZkClient(zk_client).register_broker(1)
    finally:
        del zk_client.get_async
    _, stat = zk_client.get(paths.broker_path(1))
    assert read and stat.czxid == czxid and stat.ephemeralOwner == zk_client.client_id[0]
