"""A broker's cable (``backend/zk/cable.py``) against the suite's real ZooKeeper: paused, the
traffic is blackholed as a frozen process's would be; resumed, the client learns whether its
session survived; cut, no ``closeSession`` reaches ZooKeeper and the session is left to expire."""

from __future__ import annotations

import threading

from kazoo.client import KazooState

from backend.zk.cable import Cable
from tests.support import wait_until

RETRY = {"max_tries": -1, "delay": 0.05, "max_delay": 0.5}


def test_a_short_pause_drops_the_connection_and_the_same_session_comes_back(make):
    """A paused cable answers nothing: the ping goes unanswered, the client suspends and keeps
    dialling into the blackhole, and on the resume ZooKeeper gives the same session back."""
    cable = Cable()
    listened = make(cable=cable, timeout=8.0, connection_retry=RETRY).start()
    session = listened.client.client_id
    cable.pause()
    wait_until(lambda: listened.heard(KazooState.SUSPENDED), timeout=15, message="suspended by the unanswered ping")
    cable.resume()
    wait_until(lambda: listened.client.connected, timeout=15, message="reconnected")
    assert listened.client.client_id == session
    assert listened.heard(KazooState.LOST) == 0
    assert listened.client.exists("/") is not None


def test_a_long_pause_hides_what_zookeeper_says_and_the_resume_tells_the_expiry(make, zk_client):
    """What ZooKeeper sends a paused client (here a watch's event) never reaches it, nor what it
    sends ZooKeeper (a create, its pings); ZooKeeper expires the silent session and deletes its ephemeral znode; on the resume the client hears
    that its session is gone and gets a new one."""
    cable = Cable()
    listened = make(cable=cable, timeout=1.0, connection_retry=RETRY).start()
    paused = listened.client
    paused.create("/eph", b"x", ephemeral=True)
    zk_client.create("/w", b"0")
    fired = threading.Event()
    paused.get("/w", watch=lambda event: event.type == "CHANGED" and fired.set())  # not kazoo's NONE on a drop
    session = paused.client_id
    cable.pause()
    zk_client.set("/w", b"1")
    paused.create_async("/sent-while-paused", b"")  # a request into the blackhole: ZooKeeper never sees it
    wait_until(lambda: zk_client.exists("/eph") is None, 15, "ZooKeeper to expire the frozen client's session")
    assert not fired.is_set(), "a watch's event went through a paused cable"
    assert zk_client.exists("/sent-while-paused") is None, "a request went through a paused cable"
    assert listened.heard(KazooState.LOST) == 0, "the expiry is heard only on waking"
    cable.resume()
    wait_until(lambda: listened.heard(KazooState.LOST), 15, "the expiry heard on the resume")
    wait_until(lambda: paused.connected, 15, "a new session")
    assert paused.client_id[0] != session[0]


def test_a_cut_cable_sends_no_close_and_the_session_is_left_to_expire(make, zk_client):
    """A crash: the connection is closed under the client and every new one refused, so the
    client's stop says nothing to ZooKeeper, which keeps the session (and its ephemeral znode)
    for the client to come back until the session timeout."""
    cable = Cable()
    listened = make(cable=cable, timeout=4.0, connection_retry=RETRY).start()
    crashed = listened.client
    crashed.create("/eph", b"x", ephemeral=True)
    cable.close()
    assert crashed.state != KazooState.CONNECTED, "the connection is closed when the cut returns"
    retry = crashed._connection._retry
    wait_until(lambda: retry._attempts >= 2, 10, "two rounds of dialling, refused")
    assert crashed.state != KazooState.CONNECTED and zk_client.exists("/eph") is not None
    crashed.stop()  # a stop after a cut: its closeSession goes nowhere, and it does not hang
    assert zk_client.exists("/eph") is not None, "ZooKeeper heard a closeSession through a cut cable"
    wait_until(lambda: zk_client.exists("/eph") is None, 20, "ZooKeeper to expire the session")


def test_a_paused_cable_freezes_its_own_client_and_no_other(make):
    cables = [Cable(), Cable()]
    clients = [make(cable=cable, timeout=2.0, connection_retry=RETRY).start() for cable in cables]
    clients[0].client.create("/a", b"x", ephemeral=True)
    cables[1].pause()
    wait_until(lambda: clients[1].heard(KazooState.SUSPENDED), 10, "the paused cable's client to give up")
    assert clients[0].client.get("/a")[0] == b"x", "the other cable still carries its requests"
    assert clients[0].heard(KazooState.SUSPENDED) == 0
    names = [t.name for t in threading.enumerate()]
    assert names.count("zk-sessions") == 1 and not [n for n in names if n.startswith(("zk-proxy", "zk-cables"))]


def test_a_cable_is_not_a_proxy_the_client_dials_zookeeper_itself(make, zk_hosts):
    """No loopback listener in between: the client's peer is the ZooKeeper server it was given."""
    listened = make(cable=Cable()).start()
    ports = {int(hostport.rsplit(":", 1)[1]) for hostport in zk_hosts.split(",")}
    assert listened.client._connection._socket.getpeername()[1] in ports
