"""The ZooKeeper observer against the suite's real ZooKeeper: every change to the watched tree
becomes exactly one ``zk`` record, whichever read a watch event asked for.

The observer answers a data event with a ``get`` and a child event with a ``get_children``
(``backend/zk/observer.py``): these tests hold what that must not lose — a data change after
many child changes and the other way round (each kind of watch must stay set), a node deleted
and created again between two looks (told by its czxid, its children watched again), a
deletion's two events recorded once. Each test runs with both kinds of watch: the one-shot ones
every ZooKeeper has, and the persistent recursive watch of ZooKeeper 3.6+
(``backend/zk/persistent_watch.py``), under which a creation or change is one read (the looks
queued together in one ``multiRead``) and a deletion no read at all.
"""

from __future__ import annotations

import threading

import pytest
from kazoo.client import KazooClient, KazooState
from kazoo.handlers.threading import KazooTimeoutError

from backend.zk.cable import Cable
from backend.zk.handler import PollingThreadingHandler
from backend.zk.observer import ZkObserver
from tests.support import close_client, started_client, wait_until


class Seen:
    """The observer's records, as (path, to_state) pairs, in order."""

    def __init__(self) -> None:
        self.records: list = []
        self._lock = threading.Lock()
        self.then = None
        """Called with each emit's records after they are kept, on the observer's thread."""
        self.observer: ZkObserver | None = None

    def __call__(self, records) -> None:
        with self._lock:
            self.records.extend(records)
        if self.then is not None:
            self.then(records)

    def pairs(self) -> list[tuple[str, str]]:
        with self._lock:
            return [(r.detail["path"], r.to_state) for r in self.records]

    def of(self, path: str) -> list[str]:
        return [state for p, state in self.pairs() if p == path]


@pytest.fixture(params=[False, True], ids=["one-shot", "persistent"])
def persistent(request) -> bool:
    """Whether the observer uses ZooKeeper 3.6's persistent recursive watch."""
    return request.param


@pytest.fixture
def watched(persistent, zk_hosts, chroot):
    """(writer client, observer's records, observer's client) in this test's chroot."""
    writer = started_client(zk_hosts + chroot)
    reader = started_client(zk_hosts + chroot, handler=PollingThreadingHandler())
    seen = Seen()
    observer = ZkObserver(reader, seen, lambda session: None, persistent=persistent)
    observer.start()
    seen.observer = observer
    wait_until(lambda: seen.pairs() == [] and observer._known.get("/") is not None, 10, "the first look at /")
    yield writer, seen, reader
    observer.close()
    close_client(reader)
    close_client(writer)


def step(seen: Seen, write, path: str, states: list[str]) -> None:
    """Make one change and wait until the observer has recorded it (one look per change: the
    observer reads the tree as it is, so two changes between two looks are one record)."""
    write()
    wait_until(lambda: seen.of(path) == states, 10, f"{path}: {states} (seen: {seen.pairs()})")


def test_each_change_is_one_record_in_order(watched):
    writer, seen, _ = watched
    step(seen, lambda: writer.create("/a", b"1"), "/a", ["created"])
    step(seen, lambda: writer.set("/a", b"2"), "/a", ["created", "changed"])
    step(seen, lambda: writer.create("/a/b", b"x"), "/a/b", ["created"])
    step(seen, lambda: writer.set("/a/b", b"y"), "/a/b", ["created", "changed"])
    step(seen, lambda: writer.delete("/a/b"), "/a/b", ["created", "changed", "deleted"])
    step(seen, lambda: writer.delete("/a"), "/a", ["created", "changed", "deleted"])
    assert seen.pairs() == [("/a", "created"), ("/a", "changed"), ("/a/b", "created"), ("/a/b", "changed"),
                            ("/a/b", "deleted"), ("/a", "deleted")]


def test_a_data_change_after_child_changes_and_a_child_after_data_changes_are_both_seen(watched):
    writer, seen, _ = watched
    writer.create("/p", b"0")
    wait_until(lambda: seen.of("/p") == ["created"], 10, "/p created")
    for i in range(5):  # child events only: the data watch must stay set
        writer.create(f"/p/c{i}", b"")
        wait_until(lambda i=i: seen.of(f"/p/c{i}") == ["created"], 10, f"/p/c{i} created")
    writer.set("/p", b"1")
    wait_until(lambda: seen.of("/p") == ["created", "changed"], 10, "the data change after child changes")
    for i in range(5):  # data events only: the child watch must stay set
        writer.set("/p", b"%d" % (i + 2))
        wait_until(lambda i=i: seen.of("/p").count("changed") == i + 2, 10, "each data change")
    writer.create("/p/late", b"")
    wait_until(lambda: seen.of("/p/late") == ["created"], 10, "the child created after data changes")
    records = {(r.detail["path"], r.to_state, r.zk_version) for r in seen.records}
    assert ("/p", "changed", 6) in records  # every version, each read with its data


def test_a_node_deleted_and_created_again_between_two_looks_is_both_and_its_children_are_watched(watched):
    writer, seen, _ = watched
    writer.create("/controller", b'{"brokerid":1}')
    writer.create("/controller/k", b"")
    wait_until(lambda: seen.of("/controller/k") == ["created"], 10, "the first node")
    # One transaction: no look can fall between the deletion and the creation.
    tx = writer.transaction()
    tx.delete("/controller/k")
    tx.delete("/controller")
    tx.create("/controller", b'{"brokerid":2}')
    tx.commit()
    wait_until(lambda: seen.of("/controller") == ["created", "deleted", "created"], 10,
               "the deletion and the creation told apart by the czxid")
    assert seen.of("/controller/k") == ["created", "deleted"]
    writer.create("/controller/new", b"")  # the new node's child watch was set when it was read
    wait_until(lambda: seen.of("/controller/new") == ["created"], 10, "a child of the new node")
    writer.set("/controller", b'{"brokerid":3}')  # and its data watch
    wait_until(lambda: seen.of("/controller")[-1:] == ["changed"], 10, "a data change of the new node")


def test_a_child_read_does_not_hide_a_data_change_it_saw(watched, zk_hosts, chroot):
    """A child event read after the data changed too: the data change is still recorded once."""
    writer, seen, reader = watched
    writer.create("/q", b"0")
    wait_until(lambda: seen.of("/q") == ["created"], 10, "/q created")
    tx = writer.transaction()  # both at once: the child event's read sees the new data version
    tx.create("/q/c", b"")
    tx.set_data("/q", b"1")
    tx.commit()
    wait_until(lambda: seen.of("/q") == ["created", "changed"] and seen.of("/q/c") == ["created"], 10,
               "the data change and the child")
    writer.set("/q", b"2")
    wait_until(lambda: seen.of("/q") == ["created", "changed", "changed"], 10, "the next data change")


def test_an_ephemeral_gone_with_its_session_is_recorded_once(watched, zk_hosts, chroot):
    writer, seen, _ = watched
    writer.create("/brokers/ids", b"", makepath=True)
    owner = KazooClient(hosts=zk_hosts + chroot)
    owner.start(timeout=10)
    owner.create("/brokers/ids/1", b"{}", ephemeral=True)
    wait_until(lambda: seen.of("/brokers/ids/1") == ["created"], 10, "the registration")
    owner.stop()  # the session closes: ZooKeeper deletes the znode, firing its data and child watches
    owner.close()
    wait_until(lambda: seen.of("/brokers/ids/1") == ["created", "deleted"], 10, "the deletion")
    writer.create("/brokers/ids/2", b"{}")  # the parent is still watched
    wait_until(lambda: seen.of("/brokers/ids/2") == ["created"], 10, "the next registration")
    assert seen.of("/brokers/ids/1") == ["created", "deleted"]


def _count_requests(reader) -> list:
    """The observer's client's requests from now on, as (type, path without chroot); a
    ``multiRead``'s paths as a tuple."""
    calls: list = []

    def unchrooted(path: str) -> str:
        return path.removeprefix(reader.chroot) or "/"

    def call(request, handle, real=reader._call):
        paths = getattr(request, "paths", None)
        calls.append((type(request).__name__,
                      tuple(map(unchrooted, paths)) if paths is not None else unchrooted(request.path)))
        return real(request, handle)
    reader._call = call
    return calls


def test_a_change_is_answered_by_reading_that_znode_only(watched, persistent):
    """The reads a change costs do not grow with the tree: a data change is one ``get``, a child
    created under ``/`` (``/controller``) two reads for it and one of the root's children (one
    ``get`` of it with the persistent watch) — not a walk of the whole tree again, which every
    controller change used to cost."""
    writer, seen, reader = watched
    writer.create("/brokers/topics/t/partitions/0/state", b"{}", makepath=True)
    for i in range(1, 20):
        writer.create(f"/brokers/topics/t/partitions/{i}/state", b"{}", makepath=True)
    wait_until(lambda: len(seen.of("/brokers/topics/t/partitions/19/state")) == 1, 10, "the tree seen")
    calls = _count_requests(reader)

    state = "/brokers/topics/t/partitions/3/state"
    step(seen, lambda: writer.set(state, b'{"leader":1}'), state, ["created", "changed"])
    assert calls == ([("MultiRead", (state,))] if persistent else [("GetData", state)])
    calls.clear()
    step(seen, lambda: writer.create("/controller", b'{"brokerid":1}', ephemeral=True), "/controller", ["created"])
    if persistent:
        assert calls == [("MultiRead", ("/controller",))]
    else:
        assert sorted(calls) == [("GetChildren", "/controller"), ("GetChildren2", "/"), ("GetData", "/controller")]


def test_a_node_found_gone_and_made_again_before_its_parent_is_read_is_recorded(watched):
    """The failover's race: ``/controller`` is deleted (its data event's ``get`` finds it gone, which
    sets no watch), and the next controller makes it before the observer reads the root's children.
    That child read must take ``controller`` for new, or the creation is never recorded."""
    writer, seen, _ = watched
    writer.create("/controller", b'{"brokerid":0}')
    wait_until(lambda: seen.of("/controller") == ["created"], 10, "the first controller")
    held, go = threading.Event(), threading.Event()

    def hold_the_deletion(records) -> None:  # on the observer's thread, between its two reads
        if any(r.detail["path"] == "/controller" and r.to_state == "deleted" for r in records):
            held.set()
            go.wait(10)
    seen.then = hold_the_deletion
    writer.delete("/controller")
    wait_until(held.is_set, 10, "the deletion recorded")
    writer.create("/controller", b'{"brokerid":1}')
    go.set()
    wait_until(lambda: seen.of("/controller") == ["created", "deleted", "created"], 10,
               "the new controller's /controller recorded")


def hold_the_observer(writer, seen: Seen) -> threading.Event:
    """Create ``/held`` and keep the observer's thread once it has recorded it, so that the changes
    made next queue up as looks; setting the returned event lets it go on."""
    held, go = threading.Event(), threading.Event()

    def hold(records) -> None:
        if any(r.detail["path"] == "/held" for r in records):
            held.set()
            go.wait(10)
    seen.then = hold
    writer.create("/held", b"")
    wait_until(held.is_set, 10, "the observer held")
    return go


@pytest.mark.parametrize("persistent", [True], ids=["persistent"])
def test_with_the_persistent_watch_a_deletion_costs_no_read_and_a_quick_one_is_still_told(watched):
    """Under the persistent watch the deletion's event is trusted: no request. A node deleted and
    created again before its look is read once and told as both (its czxid), and a node created
    and deleted before its look costs one read that finds it gone and tells nothing; the looks
    queued together are read in one ``multiRead``."""
    writer, seen, reader = watched
    step(seen, lambda: writer.create("/brokers/ids/1", b"{}", makepath=True), "/brokers/ids/1", ["created"])
    calls = _count_requests(reader)
    step(seen, lambda: writer.delete("/brokers/ids/1"), "/brokers/ids/1", ["created", "deleted"])
    assert calls == []
    go = hold_the_observer(writer, seen)
    tx = writer.transaction()
    tx.delete("/brokers/ids")
    tx.create("/brokers/ids", b"again")
    tx.commit()
    writer.create("/brief", b"")
    writer.delete("/brief")
    writer.create("/after", b"")
    wait_until(lambda: {"/brokers/ids", "/brief", "/after"} <= set(seen.observer._looks), 10, "the looks queued")
    calls.clear()
    go.set()
    wait_until(lambda: seen.of("/after") == ["created"], 10, "the looks after the hold")
    assert seen.of("/brokers/ids") == ["created", "deleted", "created"]
    assert seen.of("/brief") == []
    assert calls == [("MultiRead", ("/brokers/ids", "/brief", "/after"))]


@pytest.mark.parametrize("persistent", [True], ids=["persistent"])
def test_with_the_persistent_watch_a_node_made_again_leaves_its_children_to_their_own_events(watched):
    """A node and its child deleted and made again at once, while the child's look was already
    queued (a data change): the child's look reads the new child first; the parent's look then
    tells the parent deleted and created — and must not take the new child with it."""
    writer, seen, _ = watched
    writer.create("/x/c", b"0", makepath=True)
    wait_until(lambda: seen.of("/x/c") == ["created"], 10, "the child")
    go = hold_the_observer(writer, seen)
    tx = writer.transaction()
    tx.set_data("/x/c", b"1")  # queues the child's look before the parent's
    tx.delete("/x/c")
    tx.delete("/x")
    tx.create("/x", b"")
    tx.create("/x/c", b"2")
    tx.commit()
    writer.create("/after", b"")
    wait_until(lambda: {"/x/c", "/x", "/after"} <= set(seen.observer._looks), 10, "the looks queued")
    go.set()
    wait_until(lambda: seen.of("/after") == ["created"], 10, "the looks after the hold")
    assert seen.of("/x") == ["created", "deleted", "created"]
    assert seen.of("/x/c") == ["created", "deleted", "created"]


def test_the_persistent_watch_is_added_again_after_the_connection_comes_back(make, zk_client):
    """kazoo re-sends only one-shot watches when it reconnects: the observer's resync adds the
    persistent one again, then reads what changed while it was away."""
    cable = Cable()
    listened = make(cable=cable, timeout=8.0, connection_retry={"max_tries": -1, "delay": 0.05, "max_delay": 0.5})
    reader = listened.start().client
    seen = Seen()
    observer = ZkObserver(reader, seen, lambda session: None, persistent=True)
    observer.start()
    try:
        writer = zk_client
        step(seen, lambda: writer.create("/a", b"0"), "/a", ["created"])
        cable.pause()
        wait_until(lambda: listened.heard(KazooState.SUSPENDED), 15, "suspended by the unanswered ping")
        writer.set("/a", b"1")  # its event goes into the blackhole
        cable.resume()
        wait_until(lambda: seen.of("/a") == ["created", "changed"], 15, "the change made while away, read on the resync")
        step(seen, lambda: writer.create("/b", b""), "/b", ["created"])
        step(seen, lambda: writer.set("/a", b"2"), "/a", ["created", "changed", "changed"])
    finally:
        observer.close()


def test_a_step_that_fails_on_a_bug_is_logged_and_the_next_change_is_still_told(persistent, zk_hosts, chroot, caplog):
    """Only ZooKeeper's own failures are left to the resync; anything else is a bug, which must
    not end the page's ZooKeeper view in silence."""
    writer = started_client(zk_hosts + chroot)
    reader = started_client(zk_hosts + chroot, handler=PollingThreadingHandler())
    seen = Seen()

    def broken_owner(session: str):
        raise RuntimeError("a bug in the lookup of the ephemeral's broker")
    observer = ZkObserver(reader, seen, broken_owner, persistent=persistent)
    observer.start()
    try:
        wait_until(lambda: observer._known.get("/") is not None, 10, "the first look at /")
        writer.create("/eph", b"", ephemeral=True)
        wait_until(lambda: "the ZooKeeper observer failed a step" in caplog.text, 10, "the bug logged")
        step(seen, lambda: writer.create("/next", b""), "/next", ["created"])
    finally:
        observer.close()
        close_client(reader)
        close_client(writer)


@pytest.mark.parametrize("persistent", [True], ids=["persistent"])
def test_looks_whose_read_timed_out_are_looked_at_again(watched):
    """A multiRead that gets no answer in time while the connection holds (a busy server) ends in
    no resync; the looks it carried are queued again, so the change still reaches the page."""
    writer, seen, _ = watched
    observer = seen.observer
    real, failed = observer._reader.get_many, []

    def first_times_out(paths):
        if not failed:
            failed.append(list(paths))
            raise KazooTimeoutError("no answer in time")
        return real(paths)
    observer._reader.get_many = first_times_out
    step(seen, lambda: writer.create("/late", b"1"), "/late", ["created"])
    assert failed == [["/late"]]
