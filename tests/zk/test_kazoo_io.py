"""Our two additions under kazoo, against the suite's real ZooKeeper: ``multiRead`` (many
znodes in one request, with a fallback for servers without it) and the handler's ``poll``
wait and deferred wake-ups."""

from __future__ import annotations

import gc
import random
import socket
import threading
import weakref

import pytest
from kazoo.exceptions import NodeExistsError, NoNodeError
from kazoo.handlers.threading import KazooTimeoutError

from backend.runtime.cluster import ensemble_answers_multi_read
from backend.zkserver.four_letter import server_version
from backend.zk.handler import PollingThreadingHandler, deferred_wakeups, poll_select
from backend.zk.multi_read import ZnodeReader, supports_multi_read
from tests.support import close_client, requests_sent, started_client


@pytest.fixture
def client(zk_hosts, chroot):
    """A client in this test's chroot with our handler, as every broker has."""
    zk = started_client(zk_hosts + chroot, handler=PollingThreadingHandler())
    yield zk
    close_client(zk)


def make_znodes(zk, count: int) -> list[str]:
    zk.ensure_path("/s")
    paths = [f"/s/{i}" for i in range(count)]
    for i, path in enumerate(paths):
        zk.create(path, b'{"n":%d}' % i)
        for _ in range(i % 3):  # different data versions, so a stat mix-up shows
            zk.set(path, b'{"n":%d}' % i)
    return paths


# -- multiRead ---------------------------------------------------------------------------------
def test_multi_read_answers_what_a_get_of_each_znode_answers_in_order(client):
    paths = make_znodes(client, 45)
    wanted = paths[::-1] + ["/s/absent"] + paths[:3]
    reader = ZnodeReader(client, timeout_s=10, multi_read=True, chunk=7)
    calls = requests_sent(client)

    results = reader.get_many(wanted)

    assert calls == ["MultiRead"] * 7  # 49 reads, 7 per request
    assert len(results) == len(wanted)
    for path, result in zip(wanted, results):
        if path == "/s/absent":
            assert isinstance(result, NoNodeError)
            continue
        data, stat = client.get(path)
        assert result == (data, stat), path  # the chroot is applied: same znode, same version


def test_multi_read_of_nothing_sends_nothing(client):
    assert ZnodeReader(client, timeout_s=10).get_many([]) == []


def test_without_multi_read_the_same_answers_come_one_read_per_znode(client):
    paths = make_znodes(client, 5)
    reader = ZnodeReader(client, timeout_s=10, multi_read=False)
    calls = requests_sent(client)
    results = reader.get_many(paths + ["/s/absent"])
    assert calls == ["GetData"] * 6
    assert results[:5] == [client.get(p) for p in paths]
    assert isinstance(results[5], NoNodeError)


def test_the_server_version_decides_multi_read(zk_hosts):
    """A 3.5 server answers multiRead with UNIMPLEMENTED and then closes the connection, so the
    cluster must know before it reads — from ``srvr``."""
    host, _, port = zk_hosts.split(",")[0].rpartition(":")
    version = server_version(host, int(port))
    assert version is not None and version >= (3, 6), "the suite runs ZooKeeper 3.8 or 3.9"
    assert ensemble_answers_multi_read(zk_hosts)
    assert supports_multi_read((3, 6, 0)) and supports_multi_read((4, 0, 1))
    assert not supports_multi_read((3, 5, 9)) and not supports_multi_read(None)
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        silent = f"127.0.0.1:{unused.getsockname()[1]}"  # bound, not listening: refused
        assert server_version("127.0.0.1", unused.getsockname()[1]) is None
        assert not ensemble_answers_multi_read(f"{zk_hosts},{silent}")


def test_a_lost_session_is_raised_not_returned_per_znode(zk_hosts, chroot):
    zk = started_client(zk_hosts + chroot, handler=PollingThreadingHandler())
    make_znodes(zk, 2)
    reader = ZnodeReader(zk, timeout_s=10, multi_read=True)
    close_client(zk)
    with pytest.raises(Exception) as raised:
        reader.get_many(["/s/0", "/s/1"])
    assert not isinstance(raised.value, NoNodeError)


# -- deferred wake-ups ----------------------------------------------------------------------
def test_deferred_requests_go_out_at_each_flush_and_at_the_end(client):
    client.ensure_path("/w")
    with deferred_wakeups(client) as flush:
        first = client.create_async("/w/a", b"1")
        assert not first.wait(0.3), "a held-back request must not reach ZooKeeper before the flush"
        flush()
        assert first.get(timeout=10) == "/w/a"
        second = [client.create_async(f"/w/b{i}", b"2") for i in range(50)]
        assert not second[-1].wait(0.2)
    assert [r.get(timeout=10) for r in second] == [f"/w/b{i}" for i in range(50)]
    assert client.get("/w/a")[0] == b"1"


def test_another_threads_request_during_a_deferred_block_is_not_lost(client):
    """A wake-up sends the queue's head. Another thread's wake-up during the block therefore
    sends our held request, and its own waits for our flush: one byte per request either way,
    so both arrive and nothing is left queued."""
    client.ensure_path("/w")
    other: list = []
    worker = threading.Thread(target=lambda: other.append(client.create("/w/other", b"")))
    with deferred_wakeups(client):
        held = client.create_async("/w/held", b"")
        worker.start()
        assert held.get(timeout=10) == "/w/held"  # sent on the other thread's wake-up
    worker.join(10)
    assert other == ["/w/other"]
    assert sorted(client.get_children("/w")) == ["held", "other"]


def test_a_nested_block_leaves_flushing_to_the_outer_one(client):
    client.ensure_path("/w")
    with deferred_wakeups(client):
        with deferred_wakeups(client) as inner_flush:
            request = client.create_async("/w/n", b"")
            inner_flush()
        assert not request.wait(0.3)
    assert request.get(timeout=10) == "/w/n"


# -- poll_select ---------------------------------------------------------------------------------
def test_poll_select_reports_the_ready_objects_as_select_does():
    a, b = socket.socketpair()
    c, d = socket.socketpair()
    try:
        assert poll_select([a, c], [], [], 0) == ([], [], [])
        b.send(b"x")
        assert poll_select([a, c], [], [], 0) == ([a], [], [])
        assert poll_select([a, c], [d], [], 0.05) == ([a], [d], [])
        assert poll_select([c.fileno()], [], [], 0) == ([], [], [])  # plain fds too
        d.close()
        assert poll_select([c], [], [], 0) == ([c], [], [])  # hang-up: readable, recv gives b""
        with pytest.raises(ValueError):
            poll_select([a], [], [], -1)
        a.close()
        with pytest.raises(TypeError):
            poll_select([a], [], [], 0)  # fileno -1: refused as kazoo's selector_select does
    finally:
        for s in (a, b, c, d):
            s.close()


# -- answers ----------------------------------------------------------------------------------
def test_a_refused_request_leaves_no_cycle_for_the_collector(client):
    """kazoo's ``AsyncResult.get`` raised from a frame holding the result, which holds the
    exception: a cycle holding every frame up to the catcher (a broker's old client, its
    controller) until a full collection. Ours raises the same exception and leaves none, also
    when the caller's own frame holds the result and the exception outlives it."""
    gone = []

    def refused():
        result = client.get_async("/missing")
        gone.append(weakref.ref(result))
        try:
            result.get()
        except NoNodeError as exc:
            return exc  # its traceback holds this frame, which holds the result

    gc.collect()
    gc.disable()
    try:
        caught = refused()
        assert isinstance(caught, NoNodeError) and gone[0]() is not None
        del caught
        assert gone[0]() is None, "the refused request's result is kept by a reference cycle"
    finally:
        gc.enable()


def test_create_recursive_makes_parents_first_and_stops_at_a_missing_chroot(zk_hosts, chroot):
    from backend.zk.client import create_recursive

    root = started_client(zk_hosts, handler=PollingThreadingHandler())
    with pytest.warns(UserWarning, match="No chroot path exists"):  # kazoo says so at start, rightly
        lost = started_client(zk_hosts + chroot + "/not-made/either", handler=PollingThreadingHandler())
    try:
        assert create_recursive(root, chroot + "/a/b/c") == chroot + "/a/b/c"
        assert create_recursive(root, chroot + "/a/b/c") is None  # there already: nothing to do, no error
        with pytest.raises(NodeExistsError):  # unless asked (the admin's creates)
            create_recursive(root, chroot + "/a/b/c", throw_if_path_exists=True)
        made = [root.exists(chroot + p).czxid for p in ("/a", "/a/b", "/a/b/c")]
        assert made == sorted(made) and root.get(chroot + "/a/b/c")[0] == b""
        with pytest.raises(NoNodeError):  # "/" is the chroot, whose parent is missing too: no loop
            create_recursive(lost, "/x/y")
    finally:
        close_client(lost)
        close_client(root)


def test_a_result_answers_as_kazoos_does():
    handler = PollingThreadingHandler()
    answered = handler.async_result()
    answered.set({"a": 1})
    assert answered.get() == {"a": 1} and answered.get(block=False) == {"a": 1}
    refused = handler.async_result()
    refused.set_exception(NoNodeError("/x"))
    for _ in range(2):  # asked again, the same exception again
        with pytest.raises(NoNodeError, match="/x"):
            refused.get()
    pending = handler.async_result()
    with pytest.raises(KazooTimeoutError):
        pending.get(block=False)
    with pytest.raises(KazooTimeoutError):
        pending.get(timeout=0.01)
    later = handler.async_result()
    threading.Timer(0.05, later.set, ("late",)).start()
    assert later.get(timeout=30) == "late"


# -- jitter ------------------------------------------------------------------------------------
def test_a_busy_client_leaves_the_process_random_state_alone(client):
    """kazoo draws its ping jitter on every turn of its connection loop, on its own thread
    (``backend/zk/jitter.py``): with the global generator, a seeded ``random`` and Hypothesis's
    draws would move under a test's feet."""
    before = random.getstate()
    for i in range(20):  # each request wakes the connection thread: a turn of its loop
        client.exists(f"/absent-{i}")
    assert random.getstate() == before


# -- createTopLevelPaths -----------------------------------------------------------------------
@pytest.mark.parametrize("multi_read", [False, True])
def test_top_level_paths_are_made_in_kafkas_order_parents_first_and_asked_for_in_one_burst(client, multi_read):
    """The existence checks go out together (one wake-up of the connection thread: one
    ``multiRead`` where the ensemble has it, else a burst of gets); the missing znodes are then
    made one by one, so a new cluster's czxids follow Kafka's order."""
    from backend.zk import paths
    from backend.zk.client import KafkaZkClient

    client.create("/config", b"kept")  # one parent there already: left alone
    wakeups: list = []

    class Counted:  # the wake-up socket's write end, each write's bytes counted
        def __init__(self, sock):
            self.sock = sock

        def send(self, data):
            wakeups.append(len(data))
            return self.sock.send(data)

        def sendall(self, data):
            wakeups.append(len(data))
            return self.sock.sendall(data)

        def __getattr__(self, name):
            return getattr(self.sock, name)

    client.handler._wake._sock = Counted(client.handler._wake._sock)

    looks = 1 if multi_read else len(paths.PERSISTENT_PATHS)  # requests, each one wake-up byte
    KafkaZkClient(client, multi_read=multi_read).create_top_level_paths()

    assert wakeups[0] == looks, "every existence check in one wake-up"
    def parents_first(path):  # "/a/b" -> "/a", "/a/b"
        parts = path.split("/")[1:]
        return ["/" + "/".join(parts[:i]) for i in range(1, len(parts) + 1)]

    expected = []
    for path in paths.PERSISTENT_PATHS:  # Kafka's createRecursive, path by path
        expected += [prefix for prefix in parents_first(path) if prefix not in expected]
    order = sorted(expected, key=lambda path: client.exists(path).czxid)
    assert order == ["/config"] + [p for p in expected if p != "/config"]
    assert client.get("/config")[0] == b"kept"

    wakeups.clear()
    KafkaZkClient(client, multi_read=multi_read).create_top_level_paths()  # all there: nothing made
    assert wakeups == [looks]


# -- /controller, as Kafka reads it ------------------------------------------------------------
def test_the_controller_is_read_with_one_get_and_watched_with_an_exists(client):
    """Kafka's ``getControllerId`` is one ``getData``; its watch is armed by an ``exists``
    (``registerZNodeChangeHandlerAndCheckExistence``), which works while the znode is absent —
    a ``getData`` of an absent znode arms nothing, and a broker waiting for a controller would
    never hear of one."""
    from backend.zk import codec
    from backend.zk.client import KafkaZkClient

    sent = requests_sent(client)
    kafka_zk = KafkaZkClient(client)

    assert kafka_zk.get_controller_id() is None and sent == ["GetData"]
    sent.clear()
    told = threading.Event()
    assert kafka_zk.get_controller_id(watch=lambda event: told.set()) is None and sent == ["Exists"]
    client.create("/controller", codec.encode_controller(2), ephemeral=True)
    assert told.wait(10), "the exists watch on the absent /controller fired at its creation"
    sent.clear()
    assert kafka_zk.get_controller_id() == 2 and sent == ["GetData"]
