"""The operator's session (``backend/zk/operator.py``) as ZooKeeper sees it (real ZooKeeper)."""

from __future__ import annotations

import re
import threading

import pytest

from backend.zk import operator as operator_module
from backend.zk.app_session import ZK_ERRORS
from backend.zk.operator import OperatorSession
from backend.zk.paths import zk_servers
from backend.zkserver.four_letter import four_letter_word
from tests.support import close_client, requests_sent, started_client, wait_until


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
        calls = requests_sent(client)
        zk_client.create("/controller", b'{"brokerid":1}')
        wait_until(lambda: [r.detail["path"] for r in records] == ["/first", "/controller"], 10, "the creation")
        assert calls == ["MultiRead"]
    finally:
        operator.stop_observing()
        operator.close(delete_chroot=False)


def test_a_check_that_hears_nothing_gives_up_at_its_deadline_and_reads_again_after(zk_hosts, chroot, zk_client,
                                                                                     monkeypatch):
    """A read of the lab's checks (here: who is controller, as a fault or a lesson asks) on a
    session that hears nothing — as after ZooKeeper 3.8.0 restarted and left its handshake
    unanswered — ends with one of kazoo's "ZooKeeper did not answer" errors at its deadline (the
    student's request then gets a 503 and tries again), instead of waiting as long as the session
    stays suspended. Once the connection carries traffic again, the same session reads again."""
    monkeypatch.setattr(operator_module, "READ_DEADLINE_S", 1)
    zk_client.create("/controller", b'{"version":1,"brokerid":2,"timestamp":"1"}')
    operator = OperatorSession(zk_hosts, chroot)
    operator.start()
    cable = operator._client._connection.cable
    try:
        assert operator.controller_id() == 2
        cable.pause()  # from the next byte on, nothing goes through and nothing comes back
        outcome: list = []

        def ask() -> None:
            try:
                outcome.append(operator.controller_id())
            except Exception as error:  # noqa: BLE001 - what it raised is what the test looks at
                outcome.append(error)
        asking = threading.Thread(target=ask, daemon=True)
        asking.start()
        asking.join(10)  # the session's own ping time-out (20 s) would drop the connection later
        assert outcome, "the read still waits, past its deadline of 1 s"
        assert isinstance(outcome[0], ZK_ERRORS), outcome
        cable.resume()
        assert wait_until(operator.controller_id, 30, "the session to read again", retry_on=ZK_ERRORS) == 2
    finally:
        cable.resume()
        operator.close(delete_chroot=False)


def test_watching_a_crashed_broker_s_znode_waits_for_nothing_and_tells_its_deletion_once(zk_hosts, chroot,
                                                                                        zk_client):
    """``watch_ephemeral`` (a crash's watch on the broker's registration) returns at once even
    while the operator's session hears nothing — the crash has happened, the student's request
    must not wait for ZooKeeper — and its question, lost with that connection, is asked again on
    the next one: the deletion is told once. A znode of another session is never told."""
    zk_client.create("/brokers/ids/1", b"{}", ephemeral=True, makepath=True)
    owner = hex(zk_client.client_id[0])
    other = started_client(zk_hosts + chroot)
    other.create("/brokers/ids/2", b"{}", ephemeral=True, makepath=True)
    operator = OperatorSession(zk_hosts, chroot)
    operator.start()
    cable = operator._client._connection.cable
    told: list = []
    try:
        cable.pause()
        watching = threading.Thread(target=lambda: [
            operator.watch_ephemeral("/brokers/ids/1", owner, lambda: told.append(1)),
            operator.watch_ephemeral("/brokers/ids/2", owner, lambda: told.append(2))], daemon=True)
        watching.start()
        watching.join(5)  # the old, waiting one took the read deadline (15 s) and then failed
        assert not watching.is_alive(), "watch_ephemeral waited for a session that hears nothing"
        cable.resume()
        wait_until(lambda: operator.topic_exists("t") is False, 30, "the session to read again", retry_on=ZK_ERRORS)
        other.stop()  # /brokers/ids/2 goes with its session: not the watched owner's, so not told
        wait_until(lambda: zk_client.exists("/brokers/ids/2") is None, 10, "the other session's znode to go")
        zk_client.delete("/brokers/ids/1")
        wait_until(lambda: told, 10, "the deletion to be told")
        assert told == [1]  # and not /brokers/ids/2, whose deletion came first on the same thread
    finally:
        cable.resume()
        close_client(other)
        operator.close(delete_chroot=False)
