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
calls are process-wide and cheap (two list splices): with several sandboxes, one closing merely
gives the others' start-up state back to ordinary collection until the next start freezes it
again.

With the heap frozen, the rule that spaces full collections (a quarter of the long-lived heap
must be new) no longer holds them back, and a failover, which allocates a few hundred thousand
objects, ran four of them. ``settle`` therefore also raises the youngest generation's threshold
from 700 to 7,000 allocations: every collection happens ten times less often, young ones visit
ten times more objects each (the same work in total), and garbage cycles wait a few thousand
allocations longer. Measured in the same failure: no full collection at all, and the
``BrokerChange`` done in 1.8 s instead of 2.1 s (docs/performance.md §1).
"""

from __future__ import annotations

import gc


YOUNG_THRESHOLD = 7_000  # CPython's default is 700


def settle() -> None:
    """A cluster has started: later full collections skip everything alive now, and
    collections come ten times less often."""
    gc.freeze()
    young, middle, oldest = gc.get_threshold()
    gc.set_threshold(max(YOUNG_THRESHOLD, young), middle, oldest)


def release() -> None:
    """A cluster has closed: everything frozen is collectable again, its dead cycles included."""
    gc.unfreeze()
