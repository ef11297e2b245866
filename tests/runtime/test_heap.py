"""``backend/runtime/heap.py``: a started cluster kept out of full collections, the rule that
gives closed clusters' dead cycles back, and the log of the collector's pauses.

``gc.freeze`` and ``heap``'s counters are process-wide, so the scenarios that read them run in a
fresh interpreter (``_in_own_process``): the suite's processes may still hold, or be closing, an
earlier test's clusters."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import threading
import time
import weakref
from pathlib import Path

from backend.runtime import heap
from backend.runtime.record_bus import RecordBus
from tests.support import wait_until


def _in_own_process(scenario: str, *args: str) -> None:
    """Run this module's ``scenario(*args)`` in a fresh interpreter: ``gc.freeze`` and ``heap``'s
    counters are process-wide, and the suite's processes may still hold an earlier test's clusters."""
    run = subprocess.run([sys.executable, "-c", f"from {__name__} import {scenario} as s; s(*{args!r})"],
                         cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr


def test_a_started_cluster_is_frozen_out_of_full_collections_until_it_closes(zk_hosts, chroot):
    """Full collections must not rescan a started cluster's state (backend/runtime/heap.py),
    and a closed cluster's dead cycles must become collectable again. In a process of its own, as
    the next test's scenario: in the suite's processes a cluster an earlier test left closing
    (a lesson's thread) releases meanwhile and changes what is frozen."""
    _in_own_process("frozen_cluster_scenario", zk_hosts, chroot)


def frozen_cluster_scenario(zk_hosts: str, chroot: str) -> None:
    from backend.faultscript.cluster_spec import ClusterSpec, TopicSpec
    from backend.runtime.cluster import Cluster

    gc.unfreeze()
    cluster = Cluster(zk_hosts, chroot, ClusterSpec((0, 1), {"t": TopicSpec(2, 2, {0: (0, 1), 1: (1, 0)}, {})}, {}),
                      "frozen", RecordBus("frozen"))
    try:
        cluster.start()
        controller = wait_until(lambda: cluster.brokers[0].controller, timeout=10)
        assert gc.get_freeze_count() > 0
        young, middle, oldest = gc.get_threshold()
        assert young >= 7_000  # collections ten times rarer: a failover runs no full one
        assert middle <= 3 and middle * oldest >= 99  # shorter middle collections; full ones no closer
        assert not any(o is controller for generation in (0, 1, 2) for o in gc.get_objects(generation=generation))
    finally:
        cluster.close()
    assert gc.get_freeze_count() == 0


def test_closed_clusters_dead_cycles_are_collected_once_they_are_a_quarter_of_the_frozen_heap():
    """Each close used to unfreeze every sandbox's state, for the next full collection to visit
    and the next start to freeze again, dead cycles and all. Now the closed ones' dead cycles wait,
    frozen, until what their starts froze is a quarter of the frozen heap (the process's own
    objects count too); then one collection frees them and what is left, all alive, is frozen
    again. When the last cluster closes, nothing stays frozen."""
    _in_own_process("quarter_rule_scenario")


def quarter_rule_scenario():
    """The scenario of the test above, in a process of its own: freezing is process-wide, and in
    the suite's processes another test's lesson thread may still be starting or closing a cluster
    (a settle or release meanwhile changes what this one counts: CI, stop 30)."""
    gc.collect()
    gc.freeze()  # the process's own objects, frozen by an earlier start as in a server
    parts = max(1_000, gc.get_freeze_count() // 24)  # 16 states: 2/3 of the process, whatever its size

    class State:  # a cluster's state: a cycle, and many objects the collector tracks
        def __init__(self):
            self.me = self
            self.parts = [[] for _ in range(parts)]
    states, sizes = [], []
    try:
        for _ in range(16):
            states.append(State())
            sizes.append(heap.settle())
        assert all(size > parts for size in sizes)  # each start counts what it froze
        # ... without walking the frozen heap, and its count is the collector's own, to ~10 objects
        # a settle (the count's own temporaries and the settle's, alive when counted, gone when frozen)
        assert abs(heap._frozen - gc.get_freeze_count()) < 16 * 20
        dead = [weakref.ref(state) for state in states[:12]]
        alive = states[12:]
        states.clear()  # the first twelve clusters' states are now garbage, frozen
        closed, frozen = 0, gc.get_freeze_count()
        for n in range(12):
            heap.release(sizes[n])
            closed += sizes[n]
            gc.collect()
            if closed * 4 < frozen:
                assert dead[n]() is not None, n  # frozen: the collection could not free it
                continue
            assert n >= 2  # the closes waited
            assert not any(ref() for ref in dead[: n + 1])
            assert not any(o is alive[0] for o in gc.get_objects())  # what is left is frozen again
            assert heap._closed_frozen == 0 and heap._running == 16 - (n + 1)
            break
        else:
            raise AssertionError("the closed clusters' dead cycles were never collected")
        for size in sizes[n + 1:]:
            heap.release(size)
        assert gc.get_freeze_count() == 0 and heap._running == 0  # the last close unfreezes
    finally:
        gc.unfreeze()


class _SlowFreezeGc:
    """The ``gc`` calls ``heap`` makes, over a counter of frozen objects; each ``freeze`` waits
    half-way until ``held`` is set, so another thread's release can try to run in the middle of
    it. The real ``gc`` runs in the two tests above."""

    def __init__(self):
        self.count, self.held, self.inside, self.calls = 0, threading.Event(), threading.Event(), []
        self.young = 500  # objects in the generations, waiting for a freeze
        self.callbacks = []  # heap's own (``_freeze_survivors``) goes here; this stand-in never collects

    def get_freeze_count(self):
        self.calls.append("get_freeze_count")
        return self.count

    def get_objects(self, generation):
        return [None] * self.young if generation == 0 else []

    def freeze(self):
        self.calls.append("freeze")
        self.inside.set()
        self.held.wait(10)
        self.count, self.young = self.count + self.young, 0

    def unfreeze(self):
        self.calls.append("unfreeze")
        self.count, self.young = 0, self.young + self.count

    def collect(self, generation=2):
        self.calls.append("collect" if generation == 2 else f"collect({generation})")

    def get_threshold(self):
        return gc.get_threshold()

    def set_threshold(self, *threshold):
        pass


def test_a_settle_counts_only_what_it_froze_while_another_cluster_closes():
    """Sandboxes start and close at the same time in a class (a hand-out closes each old copy and
    starts the new one). A close that unfroze the heap between a settle's two reads of the freeze
    count made that settle count nothing, or everything; the lock keeps them apart. In a process
    of its own, as the two above: a cluster left closing in the suite's process would call the
    stand-in too."""
    _in_own_process("settle_during_close_scenario")


def settle_during_close_scenario() -> None:
    fake = _SlowFreezeGc()
    heap.gc = fake
    heap._running = 1  # another cluster, about to close
    heap._frozen = fake.count = 2_000
    counted = []
    starting = threading.Thread(target=lambda: counted.append(heap.settle()))
    closing = threading.Thread(target=heap.release, args=(2_000,))
    starting.start()
    try:
        assert fake.inside.wait(10)
        closing.start()  # its share is all of the frozen heap: it unfreezes, collects and freezes again
        closing.join(0.3)
        assert closing.is_alive() and fake.calls == ["collect(1)", "freeze"]  # it waits for the settle to finish
    finally:
        fake.held.set()
        starting.join(10)
        closing.join(10)
    assert counted == [500]  # what this settle froze, whatever the close did meanwhile
    # and neither walked the frozen heap to count it (get_freeze_count), with a cluster running
    assert fake.calls == ["collect(1)", "freeze", "unfreeze", "collect", "freeze"]


def test_a_start_among_running_clusters_does_not_walk_the_frozen_heap_but_the_first_counts_it():
    """``gc.get_freeze_count()`` visits every frozen object holding the interpreter: 48 ms with
    100 sandboxes, twice a start, while the worker's other sandboxes waited (issue 14, twenty-sixth
    round). Only a quiet process's first start may read it, for what the process froze itself."""
    _in_own_process("first_start_counts_scenario")


def first_start_counts_scenario() -> None:
    fake = _SlowFreezeGc()
    fake.held.set()
    heap.gc = fake
    fake.count = 7_000  # the process's own objects, frozen by itself
    assert heap.settle() == 500
    assert fake.calls == ["get_freeze_count", "collect(1)", "freeze"] and heap._frozen == 7_500
    fake.young = 300
    assert heap.settle() == 300
    assert fake.calls[3:] == ["collect(1)", "freeze"] and heap._frozen == 7_800  # counted as frozen, not walked
    heap.release(300)
    assert fake.calls[5:] == []  # a twenty-sixth of the frozen heap closed: it waits, frozen
    heap.release(500)
    assert fake.calls[5:] == ["unfreeze"] and heap._frozen == 0  # the last close unfreezes


def test_a_start_frees_the_garbage_cycles_alive_at_it_instead_of_freezing_them():
    """A settle froze whatever was alive, garbage cycles included: one holding a stopped
    controller's ZooKeeper client stayed until the quarter rule's next unfreeze (a flaking test,
    issue 14, thirty-seventh round). The generations are collected before the freeze."""
    _in_own_process("garbage_at_settle_scenario")


def garbage_at_settle_scenario() -> None:
    gc.collect()
    heap.settle()  # a cluster runs
    try:
        class Client:  # a stopped broker's client, in a cycle with what closed over it
            pass
        client = Client()
        client.me = client
        gone = weakref.ref(client)
        del client
        young = [[] for _ in range(10)]  # alive: frozen by the next start
        heap.settle()  # the next cluster's start
        assert gone() is None  # freed at the start, not frozen with it
        assert not any(o is young for o in gc.get_objects())
    finally:
        heap.release(0)
        heap.release(0)
    assert gc.get_freeze_count() == 0


def test_the_pause_log_has_a_line_per_collection_with_its_generation_and_length(tmp_path):
    """The classroom bench tells a collection's wait from the code's by this log
    (``KCLAB_GC_PAUSES``): each collection once, its generation, a length that covers the work."""
    path = tmp_path / "gc-pauses"
    garbage_cycles = []
    stop = heap.log_pauses(path)
    try:
        gc.collect(0)
        for _ in range(200_000):  # cycles for the full collection to find
            a: list = []
            a.append(a)
            garbage_cycles.append(a)
        del a
        garbage_cycles.clear()
        started = time.time()
        gc.collect(2)
    finally:
        stop()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    gc.collect(2)  # stopped: not logged
    assert len(path.read_text().splitlines()) == len(lines)
    assert lines[0]["gen"] == 0 and {line["gen"] for line in lines} <= {0, 1, 2}
    full = lines[-1]
    assert full["gen"] == 2 and full["collected"] >= 200_000
    assert started - 1 <= full["at"] <= time.time() and full["ms"] > 1
    assert 0.5 < full["cpu_ms"] <= full["ms"] + 1  # the collector's own work: no more than the pause


def test_what_survives_a_young_collection_while_clusters_run_is_frozen_too():
    """Brokers restart all through a class, each start allocating state after its cluster's settle;
    a ten-minute class of 200 students ended with most of the live heap unfrozen and a full
    collection of 4.5 s (issue 14, thirty-sixth round), and middle collections visiting three young
    collections' survivors held the worker for 160–250 ms (thirty-eighth round). What survives a
    young (or middle) collection while a cluster runs is frozen as well, counted as it is frozen;
    with no cluster running, the collector is left alone."""
    _in_own_process("survivors_scenario")


def survivors_scenario() -> None:
    gc.collect()
    heap.settle()  # a cluster runs
    try:
        for collect in (0, 1):  # a young collection, then a middle one
            restarted = [[] for _ in range(5_000)]  # a broker's state, allocated after the settle
            frozen_before, counted_before = gc.get_freeze_count(), heap._frozen
            gc.collect(collect)  # it survives
            assert not any(o is restarted for o in gc.get_objects())  # frozen: no later collection visits it
            grew = gc.get_freeze_count() - frozen_before
            assert grew >= 5_000 and abs(heap._frozen - counted_before - grew) < 50  # counted as frozen, not walked
    finally:
        heap.release(0)  # the last cluster closes: everything is unfrozen
    assert gc.get_freeze_count() == 0
    later = [[] for _ in range(100)]
    gc.collect(1)  # no cluster runs: the collector's own business
    assert any(o is later for o in gc.get_objects()) and gc.get_freeze_count() == 0


def test_counting_the_generations_never_shares_a_tuple_another_thread_is_still_filling():
    """``gc.get_objects`` lists every object the collector tracks, a tuple that ``tuple(generator)``
    is still growing in place among them, and growing it fails (``SystemError``) while anyone else
    holds it: a student's preferred election answered 500 so (docs/performance.md, issue 14,
    forty-third round). Heap counts the generations on every young collection while clusters run;
    counted as ``len(gc.get_objects(...))`` in Python, the list could outlive a switch to the
    filling thread, and this scenario failed within 3–176 of its 400 tuples (eight runs). In a
    process of its own: a small heap keeps each count short."""
    _in_own_process("tuple_filled_while_counting_scenario")


def tuple_filled_while_counting_scenario() -> None:
    stop = threading.Event()

    def count() -> None:
        while not stop.is_set():
            heap._unfrozen()

    def slowly():
        for i in range(12):
            time.sleep(0)  # hands the interpreter's lock to the counting thread, often
            yield i

    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    counting = threading.Thread(target=count)
    counting.start()
    try:
        for _ in range(400):
            assert tuple(slowly()) == tuple(range(12))
    finally:
        stop.set()
        counting.join(10)
        sys.setswitchinterval(interval)
