"""Which workers are dead: a late heartbeat is a death only when the process is gone too.

Measured with 200 active students on two workers of a 2-core machine, a worker starved of the
CPU missed its heartbeat for ``DEAD_AFTER_S`` and the other buried it: 225 faults were refused
with "the process holding this sandbox stopped" while that process still ran their clusters.
Its own module, so that no running worker of another test buries the made-up workers first.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from web.capacity import fixed_capacity
from web.scaleout.workers import PLACES, WORKERS, Workers


def test_a_late_heartbeat_of_a_process_that_still_runs_is_not_a_death(redis_server, shared):
    told = []
    me = Workers(redis_server.url, fixed_capacity(10), None, on_gone=lambda worker, sandboxes: told.append(worker))
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()
    here = socket.gethostname()
    slow = f"{here}-{os.getpid()}-late"  # this very process: it runs, its heartbeat is just late
    killed = f"{here}-{finished.pid}-dead"
    elsewhere = f"another-machine-{os.getpid()}-away"  # another machine's worker: only its heartbeat counts
    for worker in (slow, killed, elsewhere):
        shared.sadd(WORKERS, worker)  # registered, and no heartbeat key: expired
        shared.hset(PLACES, f"sandbox-of-{worker}", f"{worker}|10.0.0.1")

    assert sorted(me.bury_dead()) == sorted([killed, elsewhere])
    assert sorted(told) == sorted([killed, elsewhere])
    places = shared.hgetall(PLACES)
    assert f"sandbox-of-{slow}" in places, "a slow worker's sandboxes keep their places"
    assert f"sandbox-of-{killed}" not in places and f"sandbox-of-{elsewhere}" not in places
    assert slow in shared.smembers(WORKERS)
    assert me.bury_dead() == [], "nothing is buried twice"
