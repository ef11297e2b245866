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
"""

from __future__ import annotations

import gc


def settle() -> None:
    """A cluster has started: later full collections skip everything alive now."""
    gc.freeze()


def release() -> None:
    """A cluster has closed: everything frozen is collectable again, its dead cycles included."""
    gc.unfreeze()
