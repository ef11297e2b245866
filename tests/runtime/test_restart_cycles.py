"""A broker's restart leaves nothing of its old session and controller for the cyclic collector.

A stopped broker's kazoo client, connection, cable and controller pointed at each other; by the
time a restart dropped them they were in the oldest generation, and a class's worth made full
collections of 4-5 s that expired hundreds of sessions (docs/performance.md, issue 14,
thirty-sixth round). ``backend.zk.teardown.unlink`` and the controller's weak back-references
let reference counting free them; so do a timer that has fired (``LabTimer``), a shut-down
controller's watches, a refused request's answer (``QuietAsyncResult``) and a create
(``backend.zk.client.create_async``), which were cycles too (thirty-seventh round). With the
collector off, they must still die: after a follower's and the controller's stop, crash and a
start refused. In a fresh interpreter: the collector's switches are process-wide."""

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
    cluster.wait_stable(10)

    def act(broker, op: str) -> None:
        assert apply_fault(cluster, op, {"broker": broker.id}).ok, op
        cluster.wait_stable(10)

    def expired(broker) -> None:
        gone = broker.abandoned_session
        wait_until(lambda: any(r.to_state == "session_expired" and (r.detail or {}).get("session_id") == gone
                               for r in cluster.bus.since(0)), 30, "the crashed session's expiry")

    def old_state(broker) -> dict:
        client = broker.session._client
        return {"the kazoo client": client, "its connection": client._connection, "the cable": broker.cable,
                "the controller": broker.controller, "its event manager": broker.controller.events,
                "its watches": broker.controller.watches}

    def follower():
        return next(b for b in cluster.brokers.values() if not b.controller.is_active)

    def active():
        return next(b for b in cluster.brokers.values() if b.controller.is_active)

    def refused_then_started(broker) -> dict:
        """Started before ZooKeeper expired the crashed process's session: refused (its new
        client's create answered ``NodeExists``), then started once it expired."""
        assert not apply_fault(cluster, "start_broker", {"broker": broker.id}).ok
        refused = {"the refused start's client": broker.session._client}
        expired(broker)
        act(broker, "start_broker")
        return refused

    paths = [  # what the brokers of a class go through
        ("a follower's controlled shutdown", follower, "shutdown_broker", lambda broker: act(broker, "start_broker")),
        ("a follower's crash", follower, "crash_broker",
         lambda broker: (expired(broker), act(broker, "start_broker"), {})[-1]),
        ("the controller's exit", active, "stop_broker", lambda broker: act(broker, "start_broker")),
        ("the controller's crash and a start too early", active, "crash_broker", refused_then_started),
    ]
    try:
        for what, which, stop, restart in paths:
            # Start from a collected heap: what is left is what the path itself leaves. (Garbage
            # the cluster's settle froze is not collected here: kazoo's ensure_path and create
            # closures from the first start held the first controller's client so, until they
            # went, backend.zk.client.create_recursive.)
            gc.collect()
            gc.disable()
            broker = which()
            old = old_state(broker)
            refs = {name: weakref.ref(o) for name, o in old.items()}
            del old
            act(broker, stop)
            later = restart(broker) or {}  # drops the stopped process's session and controller
            refs.update({name: weakref.ref(o) for name, o in later.items()})
            del later, broker
            alive = lambda: [name for name, ref in refs.items() if ref() is not None]  # noqa: E731
            try:
                wait_until(lambda: not alive(), 10, "")
            except AssertionError:
                raise AssertionError(f"after {what}, still alive with the collector off: {alive()}") from None
            gc.enable()
    finally:
        gc.enable()
        cluster.close()
