"""kazoo's jitter drawn from a generator of its own, not from the process's ``random``.

kazoo's connection thread calls ``random.randint`` on every turn of its loop (the ping's
jitter), ``random.shuffle`` on each connect (the host order) and its retries call
``random.uniform``: all on the module-level generator that every module of the process shares.
So each live client moves the global random state from its own thread, at moments no one chose.
Anyone who seeds ``random`` to get the same run twice stops getting it, and Hypothesis, which
compares the global state before and after each draw, warns "Do not use the `random` module
inside strategies" whenever a client's ping lands inside one (tests/stats run as a whole: the
session's root client stays connected). Jitter needs randomness, not that generator: kazoo's two
modules get a ``random.Random`` of their own, set once when ``backend.zk`` is imported, before
any client of the app exists.
"""

from __future__ import annotations

import random

from kazoo import retry
from kazoo.protocol import connection

KAZOO_RANDOM = random.Random()


def install() -> None:
    """Point kazoo's ``connection`` and ``retry`` modules at :data:`KAZOO_RANDOM` (idempotent)."""
    connection.random = retry.random = KAZOO_RANDOM
