"""The operator's session (``backend/zk/operator.py``) as ZooKeeper sees it (real ZooKeeper)."""

from __future__ import annotations

import re

import pytest

from backend.zk.operator import OperatorSession
from backend.zk.paths import zk_servers
from backend.zkserver.four_letter import four_letter_word
from tests.support import wait_until


def test_the_operator_session_has_the_timeout_of_kafkas_tools(zk_hosts, chroot):
    """``kafka-topics.sh`` and the other tools of Kafka 2.8 open their ZooKeeper session with
    30 s, and so does the operator's, whatever kazoo's default: ZooKeeper's ``cons`` shows each
    connection's negotiated timeout (``to=``) next to its session id (``sid=``)."""
    operator = OperatorSession(zk_hosts, chroot)
    operator.start()
    try:
        host, port = zk_servers(zk_hosts)[0]
        connections = four_letter_word(host, port, "cons")
        if "not in the whitelist" in connections:
            pytest.skip("this ensemble does not allow 'cons' (4lw.commands.whitelist)")
        session = f"sid={operator.session_id:#x}"
        mine = [line for line in connections.splitlines() if session in line]
        assert mine, f"no connection of {session} in:\n{connections}"
        assert re.search(r"\bto=(\d+)", mine[0]).group(1) == "30000", mine[0]
    finally:
        operator.close(delete_chroot=False)


def test_the_operators_observer_on_the_session_loop_answers_a_creation_with_one_request(zk_hosts, chroot, zk_client):
    """The observer as a cluster runs it: on the operator's session, served by the shared session
    loop, with the persistent watch a 3.6+ ensemble allows — a creation by anyone is one record
    and one read of its data, no read of the parent's children and no re-arming."""
    records: list = []
    operator = OperatorSession(zk_hosts, chroot)
    operator.start()
    try:
        operator.observe(records.extend, lambda session: None, persistent_watch=True)
        zk_client.create("/first", b"")
        wait_until(lambda: [r.detail["path"] for r in records] == ["/first"], 10, "the first creation")
        client = operator._client
        calls: list = []
        client._call = lambda request, handle, real=client._call: calls.append(type(request).__name__) or real(request, handle)
        zk_client.create("/controller", b'{"brokerid":1}')
        wait_until(lambda: [r.detail["path"] for r in records] == ["/first", "/controller"], 10, "the creation")
        assert calls == ["MultiRead"]
    finally:
        operator.stop_observing()
        operator.close(delete_chroot=False)
