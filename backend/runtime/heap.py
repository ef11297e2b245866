"""Keep Python's full garbage collections off a started cluster's state.

A simulated cluster is mostly long-lived objects: at 10,000 partitions its brokers' logs,
replica managers, metadata caches and the controller's context come to half a million objects
the cyclic garbage collector tracks. A full (generation-2) collection visits every one of them
and holds the GIL meanwhile — 0.13–0.25 s on our machine, with every broker, the controller and
the web app's broadcasts stopped. During a broker failure at that size the process ran two or
three of them, 0.45–0.75 s in all, one often in the middle of the leader election
(docs/performance.md §1).

``gc.freeze()`` moves every object alive now out of the collector's generations: later full
collections only visit what was allocated since. The objects still die by reference counting as
usual; only garbage *cycles* among frozen objects wait until ``gc.unfreeze()``. So a cluster
freezes the heap once it has started (the biggest allocation of its life) and unfreezes it when
it closes, which returns its own dead cycles — kazoo clients, threads — to the collector. Both
calls are process-wide and cheap (two list splices), but what follows an unfreeze is not: the
next full collection visits every sandbox's state, ~0.14 s for 50 idle sandboxes (issue 14, tenth
round), and a start that comes first freezes the closed cluster's dead cycles again. So with
other clusters running, ``release`` waits until what the clusters closed since the last unfreeze
had frozen is a quarter of everything frozen (CPython spaces its own full collections by the same
rule), then unfreezes, collects and freezes what is left — all of it alive, so nothing dead stays
frozen: a class's hand-out, which closes each of 200 old copies before starting the new one, pays
about four such collections instead of one unfreeze per copy, and at most a quarter of the frozen
heap is dead state waiting. Measured in objects, not clusters: in a script's, a lesson's or a
test's process, the process's own objects are most of what is frozen, so its few clusters' closes
rarely force a collection that would mostly visit the process. With no cluster left running,
nothing needs to be frozen, and the close just unfreezes.

Counting what is frozen must not visit it either. ``gc.get_freeze_count()`` walks the whole frozen
list holding the interpreter, ~0.12 µs an object: 48 ms with 100 default sandboxes running, twice
a start and once a close, while every other sandbox of the worker waited (issue 14, twenty-sixth
round). So this module counts for itself: a settle counts the objects it is about to freeze (the
generations' lists, which hold only what was allocated since the last freeze) and adds them to
``_frozen``. Only the first cluster of a quiet process reads ``gc.get_freeze_count()``, once, for
what the process froze on its own, when no other sandbox is there to wait. Frozen objects that
die by reference counting leave the frozen list and not ``_frozen``, so the quarter rule reads
the frozen heap as it was when frozen, a little larger than it is.

With the heap frozen, the rule that spaces full collections (a quarter of the long-lived heap
must be new) no longer holds them back, and a failover, which allocates a few hundred thousand
objects, ran four of them. ``settle`` therefore also raises the youngest generation's threshold
from 700 to 7,000 allocations: every collection happens ten times less often, young ones visit
ten times more objects each (the same work in total), and garbage cycles wait a few thousand
allocations longer. Measured in the same failure: no full collection at all, and the
``BrokerChange`` done in 1.8 s instead of 2.1 s (docs/performance.md §1).

The middle generation is collected after ``MIDDLE_THRESHOLD`` young collections instead of
CPython's 10. Each of its collections visits what survived the young ones since its last, and
holds every thread of the worker meanwhile: with 200 sandboxes whose students restart brokers
(each start allocating a broker's threads, sessions and state anew) they held the worker for
125–370 ms, three or four times a minute, and the class's slowest faults were the ones they
caught. Collected three times as often, each held it for 79–108 ms, for no more of the time in
all (docs/performance.md, issue 14, thirty-fifth round). Full collections come after
``OLDEST_THRESHOLD`` middle ones instead of 10, so that they stay as far apart as CPython's
defaults put them (every 99 young collections rather than 100): each one visits everything not
frozen, however often it runs. (Since the thirty-eighth round survivors are frozen after young
collections too, below, so middle collections find next to nothing while clusters run; the two
thresholds now mostly space the full ones.)

A cluster's state does not stay what its settle froze: every broker restart allocates a new
process's state, and in a class brokers restart all the time. So while clusters run, what
survives each young collection is frozen too (:func:`_freeze_survivors`), and middle and full
collections find next to nothing: a ten-minute class of 200 students ran a full one of 4.5 s
before survivors were frozen (thirty-sixth round), and middle ones of 160–250 ms while only a
middle collection's survivors were (thirty-eighth round; docs/performance.md, issue 14).
"""

from __future__ import annotations

import gc
import os
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator


YOUNG_THRESHOLD = 7_000  # CPython's default is 700
MIDDLE_THRESHOLD = 3  # young collections between middle ones; CPython's default is 10 (above)
OLDEST_THRESHOLD = 33  # middle collections between full ones (CPython's 10): 3 × 33 ≈ 10 × 10 young

_lock = threading.RLock()
"""Held by every freeze, unfreeze and collection of ``settle`` and ``release``, so what a settle
counts as its own is exactly what it froze, even while other sandboxes start and close. Reentrant:
a collection runs finalizers in the thread that holds it."""
_running = 0
"""Clusters settled and not yet released."""
_closed_frozen = 0
"""Objects frozen by the settles of the clusters released since the last unfreeze: an estimate of
the dead state still frozen."""
_frozen = 0
"""Objects frozen since the last unfreeze, counted as they were frozen (the module docstring says
why not ``gc.get_freeze_count()``)."""
_counting = False
"""A settle or release is counting and freezing: :func:`_freeze_survivors` leaves it alone."""


def _freeze_survivors(phase: str, info: dict) -> None:
    """A ``gc.callbacks`` entry: after each young or middle collection while clusters run, what
    survived it (the middle and oldest generations: the last freeze took the rest) is frozen too.

    Brokers restart all through a class, and every start allocates a broker's state after its
    cluster's settle: by the end of a ten-minute class of 200 students that was most of the live
    heap, and the one full collection every five to nine minutes visited all of it for 4.5 s
    (docs/performance.md, issue 14, thirty-sixth round) — past the lab's 4 s session timeout, so
    hundreds of sessions expired under the students. Frozen once it survived a middle collection,
    it was visited twice first: by a young collection and by a middle one, which then held the
    worker for 160–250 ms three or four times a minute (thirty-eighth round: the survivors of
    three young collections, 90,000–115,000 objects). Frozen once it survives a young collection,
    it is visited once, and middle and full collections find next to nothing.

    What was frozen here and later dies as a cycle waits, frozen, for the next unfreeze
    (``release``): a stopped broker's session and controller die by reference counting
    (``teardown.unlink``), and the cycles a class makes die within the request or fault that
    made them, long before the next young collection, so that is little. Another thread may run
    between the count and the freeze (no collection can start until this callback returns), and
    what it allocates meanwhile is frozen uncounted: a few objects, for a rule of quarters. A
    settle or release in the middle of its own counting is left alone."""
    global _frozen
    if phase != "stop" or info["generation"] == 2 or not _running or _counting:
        return
    promoted = _tracked(1, 2)
    gc.freeze()
    _frozen += promoted


@contextmanager
def _counted() -> Iterator[None]:
    """``_lock`` held, and :func:`_freeze_survivors` kept out of the counting meanwhile."""
    global _counting
    with _lock:
        _counting = True
        try:
            yield
        finally:
            _counting = False


def _unfrozen() -> int:
    """How many objects the collector's three generations hold: what a ``gc.freeze()`` now would
    move. Proportional to what was allocated since the last freeze, not to the frozen heap."""
    return _tracked(0, 1, 2)


def _tracked(*generations: int) -> int:
    """How many objects the collector's ``generations`` hold, counted where no other thread can
    run while their lists live.

    ``gc.get_objects`` hands out a reference to every object it lists, among them a tuple that
    another thread is still filling: ``tuple(generator)`` grows its tuple in place
    (``_PyTuple_Resize``), which refuses a tuple that anyone else holds with ``SystemError: bad
    argument to internal function``. Written as ``len(gc.get_objects(...))`` in Python, the
    interpreter could hand its lock over between the two calls, with the list alive — and a
    student's preferred election (``tuple(... for t in topics ...)`` over ZooKeeper reads) failed
    so, a 500 in one of 1,000–2,000 faults of a busy class (docs/performance.md, issue 14,
    forty-third round; ``tests/runtime/test_heap.py`` fails within a few hundred tuples that way).
    Here ``map`` calls ``gc.get_objects`` and then ``len`` and drops each list inside C, where the
    lock is never let go (no object in the list dies with it: each was alive when listed), so
    the lists are gone before any other thread runs. Through the module's ``gc`` at call time,
    so the tests' stand-in answers."""
    return sum(map(len, map(gc.get_objects, generations)))


def settle() -> int:
    """A cluster has started: later full collections skip everything alive now, young
    collections come ten times less often, middle ones after three young, full ones as far apart
    as before. Returns how many objects this froze, for ``release``.

    The young and middle generations are collected first, so that garbage cycles alive at this
    moment — the start's own, or another thread's — are freed rather than frozen with the
    cluster until the quarter rule's next unfreeze. One such cycle (kazoo's closures holding a
    stopped controller's client) was frozen by a settle and flaked a test (issue 14, thirty-seventh
    round). Both generations hold ~2,600 objects at a start among 30 busy clusters: 0.5 ms
    (thirty-eighth round)."""
    global _running, _frozen
    with _counted():
        if not _running:
            _frozen = gc.get_freeze_count()  # what the process froze itself; no sandbox waits now
        _running += 1
        gc.collect(1)  # garbage cycles of this start or of other threads: freed now, not frozen (below)
        frozen = _unfrozen()
        gc.freeze()
        _frozen += frozen
        if _freeze_survivors not in gc.callbacks:
            gc.callbacks.append(_freeze_survivors)
    young, middle, oldest = gc.get_threshold()
    gc.set_threshold(max(YOUNG_THRESHOLD, young), min(MIDDLE_THRESHOLD, middle), max(OLDEST_THRESHOLD, oldest))
    return frozen


def release(frozen: int) -> None:
    """A cluster whose ``settle`` froze ``frozen`` objects has closed: its dead cycles are given
    back to the collector once the closed clusters' share is a quarter of the frozen heap, or at
    once when it was the last cluster running (above)."""
    global _running, _closed_frozen, _frozen
    with _counted():
        _running, _closed_frozen = max(0, _running - 1), _closed_frozen + frozen
        if _running and _closed_frozen * 4 < _frozen:
            return
        _closed_frozen = _frozen = 0
        gc.unfreeze()
        if _running:
            gc.collect()
            _frozen = _unfrozen()  # all of it alive: the collection just visited every object anyway
            gc.freeze()


def log_pauses(path: str | Path) -> Callable[[], None]:
    """Append a JSON line for every collection of this process from now on: when it began (wall
    clock, s), its generation, how long it held the interpreter (ms), the collecting thread's CPU
    meanwhile (``cpu_ms``: on a VM whose host steals time, the part that was the collector's own
    work; issue 14, thirty-eighth round) and what it freed.

    A collection stops every thread of the worker at once, so its length is a wait that every
    request and broadcast in flight shares. The classroom bench turns this on
    (``KCLAB_GC_PAUSES``, read by ``web/gunicorn_app.py``) to tell those waits from the code's own.
    One ``write`` of one line to an ``O_APPEND`` file per collection, with no buffer that another
    thread could be filling meanwhile (the write may let one run; none can start a collection
    until this one's callbacks have returned). Returns what stops the log."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    began = [0.0, 0.0, 0.0]

    def note(phase: str, info: dict) -> None:
        if phase == "start":
            began[:] = time.time(), time.perf_counter(), time.thread_time()
            return
        os.write(fd, (f'{{"at": {began[0]:.4f}, "gen": {info["generation"]}, '
                      f'"ms": {(time.perf_counter() - began[1]) * 1000:.2f}, '
                      f'"cpu_ms": {(time.thread_time() - began[2]) * 1000:.2f}, '
                      f'"collected": {info["collected"]}}}\n').encode())
    gc.callbacks.append(note)

    def stop() -> None:
        gc.callbacks.remove(note)
        os.close(fd)
    return stop
