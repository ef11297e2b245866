"""A broker's restart leaves nothing of its old session and controller for the cyclic collector.

A stopped broker's kazoo client, connection, cable and controller pointed at each other; by the
time a restart dropped them they were in the oldest generation, and a class's worth made full
collections of 4-5 s that expired hundreds of sessions (docs/performance.md, issue 14,
thirty-sixth round). ``backend.zk.teardown.unlink`` and the controller's weak back-references
let reference counting free them. With the collector off, they must still die. In a fresh
interpreter: the collector's switches are process-wide."""

from __future__ import annotations

import subprocess
import sys
import weakref
from pathlib import Path


def test_a_restarted_brokers_old_session_and_controller_die_without_the_collector(zk_hosts, chroot):
    run = subprocess.run([sys.executable, "-c", f"from {__name__} import scenario; scenario({zk_hosts!r}, {chroot!r})"],
                         cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=180)
    assert run.returncode == 0, run.stderr[-3000:]


def scenario(zk_hosts: str, chroot: str) -> None:
    import gc

    from backend.faultscript.cluster_spec import ClusterSpec, TopicSpec
    from backend.runtime.cluster import Cluster
    from backend.runtime.faults import apply_fault
    from backend.runtime.record_bus import RecordBus
    from tests.support import wait_until

    cluster = Cluster(zk_hosts, chroot, ClusterSpec((0, 1, 2), {"t": TopicSpec(3, 3, None, {})}, {}),
                      "cycles", RecordBus("cycles"))
    cluster.start()
    broker = cluster.brokers[1]

    def act(op: str) -> None:
        if op == "start_broker" and broker.status == "crashed":
            # Started before ZooKeeper expires the crashed process's session, the broker is refused.
            gone = broker.abandoned_session
            wait_until(lambda: any(r.to_state == "session_expired" and (r.detail or {}).get("session_id") == gone
                                   for r in cluster.bus.since(0)), 30, "the crashed session's expiry")
        assert apply_fault(cluster, op, {"broker": 1}).ok, op
        cluster.wait_stable(10)

    try:
        for stop in ("shutdown_broker", "crash_broker"):
            # kazoo's own ``create`` leaves a cycle of closures that holds its client until the
            # next young collection: gone now, while the client it holds still runs.
            gc.collect()
            gc.disable()
            client = broker.session._client
            old = {"the kazoo client": client, "its connection": client._connection, "the cable": broker.cable,
                   "the controller": broker.controller, "its event manager": broker.controller.events}
            refs = {what: weakref.ref(o) for what, o in old.items()}
            del client, old
            act(stop)
            act("start_broker")  # drops the stopped process's session and controller
            alive = lambda: [what for what, ref in refs.items() if ref() is not None]  # noqa: E731
            try:
                wait_until(lambda: not alive(), 10, "")
            except AssertionError:
                raise AssertionError(f"after a {stop}, still alive with the collector off: {alive()}") from None
    finally:
        gc.enable()
        cluster.close()
