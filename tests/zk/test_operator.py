"""The operator's session (``backend/zk/operator.py``) as ZooKeeper sees it (real ZooKeeper)."""

from __future__ import annotations

import re

import pytest

from backend.zk.operator import OperatorSession
from backend.zk.paths import zk_servers
from backend.zkserver.four_letter import four_letter_word


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
