"""The process's one thread for every ZooKeeper session (``backend/zk/session_loop.py``), against
the suite's real ZooKeeper: what kazoo's own connection thread does, the loop does — answers,
watches, pings, a dropped connection, an expired session, a close — from one thread."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import ConnectionClosedError, NoNodeError

from backend.zk.handler import deferred_wakeups
from backend.zk.io_loop import SessionLoop
from backend.zk.cable import Cable
from backend.zk.session_loop import LoopConnection, use_session_loop
from tests.support import close_client, wait_until


def connection_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if "zk_loop" in t.name]


def test_many_sessions_are_served_by_one_thread_not_one_each(make, zk_hosts, chroot):
    plain = KazooClient(hosts=zk_hosts + chroot)
    plain.start(timeout=15)
    try:
        assert len(connection_threads()) >= 1, "kazoo's own client has its connection thread"
        before = len(connection_threads())
        clients = [make().start() for _ in range(12)]
        assert len(connection_threads()) == before
        assert [t.name for t in threading.enumerate()].count("zk-sessions") == 1
        assert all(c.client._connection.loop is SessionLoop.shared() for c in clients)
        ids = {c.client.client_id[0] for c in clients}
        assert len(ids) == 12, "each client has a session of its own"
        assert all(c.client.exists("/") is not None for c in clients)
    finally:
        close_client(plain)


def test_answers_watches_and_transactions_are_kazoos(make):
    zk = make().start().client
    other = make().start().client
    zk.ensure_path("/a")
    children, data = threading.Event(), threading.Event()
    seen: list = []
    zk.get_children("/a", watch=lambda e: (seen.append(e), children.set()))
    zk.exists("/a/x", watch=lambda e: (seen.append(e), data.set()))
    other.create("/a/x", b"1")
    assert children.wait(10) and data.wait(10)
    assert sorted((e.type, e.path) for e in seen) == [("CHILD", "/a"), ("CREATED", "/a/x")]  # the chroot stripped

    tx = zk.transaction()
    tx.create("/a/y", b"2")
    tx.set_data("/a/x", b"3", version=0)
    assert tx.commit()[0] == "/a/y"
    assert zk.get("/a/x")[0] == b"3"
    assert zk.exists("/a/none") is None
    with pytest.raises(NoNodeError):
        zk.get("/a/none")

    big = bytes(range(256)) * 3500  # 896 KB: an answer that arrives in many reads
    zk.create("/a/big", big)
    assert other.get("/a/big")[0] == big

    with deferred_wakeups(zk):  # 2,000 requests queued, then sent in one wake-up, answered in order
        made = [zk.create_async("/a/seq-", b"", sequence=True) for _ in range(2000)]
    names = [m.get(timeout=30) for m in made]
    assert names == sorted(names) and len(set(names)) == 2000


def test_a_deferred_request_waits_for_its_flush(make):
    zk = make().start().client
    with deferred_wakeups(zk) as flush:
        held = zk.create_async("/held", b"")
        assert not held.wait(0.3), "a held-back request must not reach ZooKeeper before the flush"
        flush()
        assert held.get(timeout=10) == "/held"


def test_a_stopped_session_ends_at_once_and_its_ephemerals_with_it(make):
    owner, watcher = make().start(), make().start()
    owner.client.create("/e", b"", ephemeral=True)
    owner.client.stop()
    assert watcher.client.exists("/e") is None, "a closed session's ephemeral znode is gone when stop() returns"
    assert owner.client._connection.connection_stopped.is_set()
    assert owner.heard(KazooState.LOST) == 1
    with pytest.raises(ConnectionClosedError):
        owner.client.get("/")
    owner.client.close()
    owner.client.start(timeout=15)  # and a stopped client starts again, with a new session
    assert owner.client.exists("/") is not None


def test_an_idle_session_lives_on_its_pings(make):
    """A 1 s session (ZooKeeper's floor at the suite's 500 ms tick) idle for 3 s: without the
    pings, ZooKeeper would expire it after 1 s."""
    listened = make(timeout=1.0).start()
    session = listened.client.client_id
    sent: list[float] = []
    connection = listened.client._connection
    real = connection._send_ping
    connection._send_ping = lambda timeout: (sent.append(timeout), real(timeout))
    threading.Event().wait(3.0)  # nothing to wait for: idling is the test
    assert len(sent) >= 3, "a ping every third of a second or so (half of 2/3 of 1 s, less jitter)"
    assert listened.client.client_id == session and listened.client.connected
    assert listened.heard(KazooState.SUSPENDED) == 0


def test_a_connection_lives_on_what_it_hears_and_drops_after_its_read_timeout_of_silence(make, zk_client):
    """The Java client's rule, not kazoo's. A 4 s session whose pings are lost for 2.8 s while
    ZooKeeper sends it a watch's event every 0.28 s: kazoo would drop the connection at its next
    ping (0.9–1.3 s after the lost one) because the lost one is still unanswered; the Java client
    has heard from ZooKeeper within its read time-out (2.7 s) and keeps it. Left silent (its
    cable paused), it drops no sooner than the read time-out after the last answer."""
    cable = Cable()
    listened = make(cable=cable, timeout=4.0).start()
    client, connection = listened.client, listened.client._connection
    events: list[str] = []
    for n in range(10):
        zk_client.create(f"/n{n}", b"0")
        client.exists(f"/n{n}", watch=lambda event: events.append(event.path))
    real, lost = connection._send_ping, []

    def lose(timeout) -> None:  # a ping lost on the way: sent, as far as the client knows
        connection.ping_outstanding.set()
        lost.append(timeout)
    connection._send_ping = lose
    try:
        for n in range(10):
            threading.Event().wait(0.28)  # the pacing of ZooKeeper's events is the test
            zk_client.set(f"/n{n}", b"1")
        wait_until(lambda: len(events) == 10, 5, "every watch's event")
        assert lost, "no ping was due in 2.8 s of sending nothing"
    finally:
        connection._send_ping = real
    assert listened.heard(KazooState.SUSPENDED) == 0, "dropped for an unanswered ping"

    asked = time.monotonic()  # its answer, the last thing heard, comes after this
    assert client.exists("/") is not None
    cable.pause()
    wait_until(lambda: listened.heard(KazooState.SUSPENDED), 15, "the silent connection to drop")
    assert time.monotonic() - asked >= 4.0 * 2 / 3, "dropped before its read time-out"
    cable.resume()
    wait_until(lambda: client.connected, 15, "reconnected")


def test_an_expired_session_is_replaced_by_a_new_one(make, zk_hosts, chroot):
    """... and the loop counts the dropped connection and the expiry (``/healthz`` reports them)."""
    listened = make().start()
    loop = SessionLoop.shared()  # every session of the process, this one's too
    before = {"dropped": loop.dropped, "expired": loop.expired}
    old = listened.client.client_id
    hijacker = KazooClient(hosts=zk_hosts + chroot, client_id=old)  # ZooKeeper expires the session
    hijacker.start(timeout=10)
    close_client(hijacker)
    wait_until(lambda: listened.heard(KazooState.LOST), timeout=15, message="the expiry heard")
    wait_until(lambda: listened.client.connected, timeout=15, message="a new session")
    assert listened.client.client_id[0] != old[0]
    assert listened.client.exists("/") is not None
    after = {"dropped": loop.dropped, "expired": loop.expired}
    assert after["expired"] == before["expired"] + 1, (before, after)
    assert after["dropped"] >= before["dropped"] + 1, (before, after)  # the hijacker took its connection


def test_stop_while_no_server_answers_returns_and_frees_the_loop(make):
    """No server at the address: kazoo's back-off retries for ever; ``stop()`` ends it, and
    the loop goes on serving others."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        port = holder.getsockname()[1]  # bound, not listening: every connection is refused
        listened = make(f"127.0.0.1:{port}", connection_retry={"max_tries": -1, "delay": 0.05, "max_delay": 0.2})
        listened.client.start_async()
        connection: LoopConnection = listened.client._connection
        wait_until(lambda: connection._retry is not None and connection._retry._attempts >= 3, timeout=10,
                   message="three rounds refused")
        listened.client.stop()
        assert connection.connection_stopped.is_set() and connection.phase == "stopped"
        assert listened.client.state == KazooState.LOST and listened.heard(KazooState.CONNECTED) == 0
    other = make().start()
    assert other.client.exists("/") is not None


def test_a_client_that_asks_for_what_the_loop_does_not_do_is_refused(zk_hosts):
    with pytest.raises(ValueError, match="TLS, auth or read-only"):
        use_session_loop(KazooClient(hosts=zk_hosts, auth_data=[("digest", "a:b")]))


def test_a_host_given_by_name_is_resolved_off_the_loop(make, zk_hosts, chroot):
    port = zk_hosts.split(",")[0].rpartition(":")[2]
    resolved_on: list[str] = []
    listened = make(f"localhost:{port}{chroot}")
    connection = listened.client._connection
    real = connection._expand_client_hosts
    connection._expand_client_hosts = lambda: (resolved_on.append(threading.current_thread().name), real())[1]
    listened.start()
    assert listened.client.exists("/") is not None
    assert resolved_on and all(name.startswith("zk-resolve") for name in resolved_on)


def test_a_listener_that_waits_at_a_sessions_end_holds_up_that_session_alone(make, zk_hosts, chroot):
    """A broker's listener waits at an expiry until its controller has taken ``Expire``. Its own
    session gets no new one meanwhile (as when kazoo's thread was blocked); every other session
    goes on."""
    waiting = make().start()
    other = make().start()
    release, entered = threading.Event(), threading.Event()

    def wait_at_the_end(state) -> None:
        if state == KazooState.LOST and not release.is_set():
            entered.set()
            release.wait(30)
    waiting.client.add_listener(wait_at_the_end)
    old = waiting.client.client_id
    hijacker = KazooClient(hosts=zk_hosts + chroot, client_id=old)
    hijacker.start(timeout=10)
    close_client(hijacker)
    try:
        assert entered.wait(15), "the expiry reached the listener"
        for i in range(5):  # answered while the listener waits (its 30 s would fail the wait)
            assert other.client.create_async(f"/meanwhile-{i}", b"").get(timeout=10) == f"/meanwhile-{i}"
        assert not waiting.client.connected, "no new session before its listeners are done"
    finally:
        release.set()
    wait_until(lambda: waiting.client.connected, timeout=15, message="a new session after the listener")
    assert waiting.client.client_id[0] != old[0]


def test_stop_returns_after_the_listeners_heard_the_end(make):
    listened = make().start()
    heard_lost = threading.Event()

    def slow(state) -> None:
        if state == KazooState.LOST:
            threading.Event().wait(0.3)  # a listener that takes a while
            heard_lost.set()
    listened.client.add_listener(slow)
    listened.client.stop()
    assert heard_lost.is_set(), "kazoo's stop() joins the thread that tells the listeners"


class Timed:
    """An owner of a loop timer that notes when it fired, and in which of the loop's turns."""

    timer_token = None

    def __init__(self, turns: list[int]) -> None:
        self.fired = threading.Event()
        self.turns = turns
        self.at = 0.0
        self.turn = -1

    def on_wake(self) -> None:
        pass

    def on_timer(self) -> None:
        self.at, self.turn = time.monotonic(), self.turns[0]
        self.fired.set()


@pytest.fixture
def counted_loop():
    """A loop of its own, counting its turns (one wake-up each), closed after the test. Not the
    process's shared loop: that one may wake for a session's ping inside a timer's margin, which
    would send the timer early for a reason of its own."""
    loop, turns = SessionLoop(), [0]
    one_turn = loop._turn

    def turn() -> None:
        turns[0] += 1
        one_turn()
    loop._turn = turn  # from the next turn on: the loop's thread looks the method up each time
    yield loop, turns
    loop.close()
    assert not loop.thread.is_alive(), "a closed loop's thread ends (tests count the process's loops)"


def test_a_timer_that_may_go_early_goes_with_one_that_is_due_and_none_goes_late(counted_loop):
    """The pings' margin: a timer due within another's wake-up goes with it, and no timer fires
    before its margin or after its moment."""
    loop, turns = counted_loop
    due, rider, strict, alone = (Timed(turns) for _ in range(4))
    start = time.monotonic()
    plan = {due: (0.3, 0.0), rider: (0.34, 0.2), strict: (0.36, 0.0), alone: (1.0, 0.05)}

    def arm() -> None:
        for owner, (after, early) in plan.items():
            loop.set_timer(owner, start + after, early=early)
    loop.call(arm)
    assert all(owner.fired.wait(5) for owner in plan)
    assert due.at >= start + 0.3
    assert rider.turn == due.turn, "the rider went with the due timer's wake-up"
    assert strict.at >= start + 0.36 and strict.turn > due.turn, "a timer without a margin never goes early"
    assert alone.at >= start + 1.0 - 0.05


def test_a_busy_loop_sends_no_timer_early(counted_loop):
    """A wake-up for a socket (here a call from another thread) fires only the timers that are
    due: pings go early only on a wake-up of an otherwise idle loop."""
    loop, turns = counted_loop
    rider = Timed(turns)
    called = threading.Event()
    start = time.monotonic()
    # Its margin has begun already: both calls' wake-ups fall inside it.
    loop.call(lambda: loop.set_timer(rider, start + 0.5, early=0.6))
    loop.call(called.set)
    assert called.wait(5) and rider.fired.wait(5)
    assert rider.at >= start + 0.5, "the rider went early, with the wake-up for a call"


def test_a_held_up_loop_says_how_overdue_its_timers_are(counted_loop):
    """What the load guard reads (``web/load_guard.py``): nothing overdue while the loop keeps up;
    while one step holds the loop's thread, the next timer's lateness grows; none once it ran."""
    loop, turns = counted_loop
    assert loop.behind_s() == 0.0
    release = threading.Event()
    holder, waiting = Timed(turns), Timed(turns)
    holder.on_timer = lambda: release.wait(10)  # a step that keeps the loop's thread
    start = time.monotonic()
    loop.call(lambda: (loop.set_timer(holder, start + 0.05), loop.set_timer(waiting, start + 0.1)))
    try:
        wait_until(lambda: loop.behind_s() > 0.5, 10, "the waiting timer to be overdue by half a second")
        assert not waiting.fired.is_set()
    finally:
        release.set()
    assert waiting.fired.wait(5)
    wait_until(lambda: loop.behind_s() == 0.0, 5, "the loop to be on time again")
