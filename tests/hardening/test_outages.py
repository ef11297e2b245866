"""ZooKeeper outages are said, waited out and recovered; a worker killed like an out-of-memory
kill leaves no chroot behind — against the real server (gunicorn and its embedded ZooKeeper)."""

from __future__ import annotations

import os
import signal
import time

import pytest

from backend.zk.app_session import owner_path
from tests.hardening.server import serve
from tests.support import close_client, started_client, wait_until


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    server = serve(tmp_path_factory.mktemp("outages"), SWEEP_EVERY_S="1", SWEEP_GRACE_S="0")
    yield server
    server.stop()


def view(served, box):
    status, snapshot, _ = served.call("GET", f"/api/sandboxes/{box['id']}/snapshot",
                                      headers={"X-Sandbox-Token": box["token"]})
    assert status == 200, snapshot
    return snapshot["view"]


def alive_with_a_controller(served, box, brokers=("0", "1", "2")):
    current = view(served, box)
    registered = all(current["brokers"][b]["registered"] for b in brokers)
    return registered and current["controller"] is not None and not current["controller"].get("resigned")


def records(served, box):
    status, page, _ = served.call("GET", f"/api/sandboxes/{box['id']}/records?since=0&limit=5000",
                                  headers={"X-Sandbox-Token": box["token"]})
    return page["records"]


def test_a_killed_zookeeper_is_restarted_on_its_port_and_the_sandbox_lives_on(served):
    status, box, _ = served.call("POST", "/api/sandboxes", {})
    assert status == 201, box
    [jvm] = served.zk_pids()
    os.kill(jvm, signal.SIGKILL)
    wait_until(lambda: served.zk_pids() and served.zk_pids() != [jvm], 30, "a new ZooKeeper JVM")
    # The new JVM can be up before the app's own session (kazoo's thread) has read the end of its
    # connection, and /healthz says ok until it has: wait for the outage to be counted too.
    health = wait_until(lambda: (lambda h: h[1] if h[0] == 200 and h[1]["zookeeper"]["outages"] >= 1 else None)(
        served.call("GET", "/healthz")), 30, "/healthz to count the outage and be ok again")
    assert health["zookeeper"]["hosts"] == served.zk_hosts
    wait_until(lambda: alive_with_a_controller(served, box), 30, "the sandbox's brokers and controller after restart")
    def back():  # back within the session timeout (zk_reconnected), or after it (session_lost)
        states = [r["to_state"] for r in records(served, box) if r["kind"] == "broker"]
        return ("zk_reconnected" in states or "session_lost" in states) and states
    states = wait_until(back, 30, "the brokers to say they reached ZooKeeper again")
    assert "zk_disconnected" in states, "the outage is in the sandbox's records"
    # Tried again after a 503 as a student is told to: a session may still be on its way back —
    # for up to its connect time-out when it dialled the restarted 3.8.0 while it loaded
    # (ZOOKEEPER-5051). The crash itself waits for no ZooKeeper answer (its watch is asynchronous).
    status, answer, _ = served.call_as_student("POST", f"/api/sandboxes/{box['id']}/faults",
                                               {"op": "crash_broker", "broker": 2},
                                               headers={"X-Sandbox-Token": box["token"]}, attempts=3)
    assert status == 200, answer


def test_a_long_outage_is_said_refused_fast_and_recovered(served):
    status, box, _ = served.call("POST", "/api/sandboxes", {"cluster": {"brokers": [0, 1]}})
    assert status == 201, box
    [jvm] = wait_until(lambda: served.zk_pids(), 30, "the embedded ZooKeeper's JVM")
    os.kill(jvm, signal.SIGSTOP)  # a hung server: connections stay open, nothing answers
    stopped = time.monotonic()
    try:
        health = wait_until(lambda: (lambda h: h[1] if h[0] == 503 else None)(served.call("GET", "/healthz")), 20,
                            "/healthz to say ZooKeeper is unreachable")
        assert health["zookeeper"]["state"] in ("suspended", "lost")
        status, answer, _ = served.call("POST", f"/api/sandboxes/{box['id']}/faults",
                                        {"op": "crash_broker", "broker": 1}, headers={"X-Sandbox-Token": box["token"]},
                                        timeout=5)
        assert status == 503 and "ZooKeeper unreachable since" in answer["error"], answer
        # Longer than the brokers' session timeout (4 s): ZooKeeper expires their sessions on waking.
        wait_until(lambda: time.monotonic() - stopped > 6, 10, "the outage to outlast the session timeout")
    finally:
        os.kill(jvm, signal.SIGCONT)
    wait_until(lambda: served.call("GET", "/healthz")[0] == 200, 30, "/healthz to be ok again")
    # Woken, ZooKeeper expires the brokers' sessions unless a client's reconnect (queued while it
    # was frozen) touches its session first: a race inside ZooKeeper, so either record may come.
    # What must hold: the outage is in the sandbox's records, and the sandbox recovers.
    states = wait_until(lambda: (lambda s: s if {"session_lost", "zk_reconnected"} & set(s) else None)(
        [r["to_state"] for r in records(served, box) if r["kind"] == "broker"]), 60,
        "a session_lost or zk_reconnected record: the outage is in the sandbox's records")
    assert "zk_disconnected" in states or "session_lost" in states, states
    wait_until(lambda: alive_with_a_controller(served, box, ("0", "1")), 40,
               "brokers 0 and 1 re-registered and a controller re-elected")


def test_a_killed_worker_s_chroots_are_swept_and_live_ones_are_not(served):
    status, box, _ = served.call("POST", "/api/sandboxes", {"cluster": {"brokers": [0]}})
    assert status == 201, box
    chroot = box["cluster"]["chroot"]
    root = started_client(served.zk_hosts)
    try:
        assert root.exists(owner_path(chroot)), "a live sandbox's chroot is claimed"
        old = served.worker_pid()
        os.kill(old, signal.SIGKILL)  # as the kernel's out-of-memory killer would
        wait_until(lambda: served.worker_pid() != old, 30, "gunicorn to start a new worker")
        wait_until(lambda: served.call("GET", "/healthz")[0] == 200, 60, "the new worker to serve")
        status, fresh, _ = served.call("POST", "/api/sandboxes", {"cluster": {"brokers": [0]}})
        assert status == 201, fresh
        wait_until(lambda: root.exists(chroot) is None, 60, f"the dead worker's chroot {chroot} to be swept")
        assert root.exists(fresh["cluster"]["chroot"]), "the live sandbox's chroot is still there"
        assert root.exists(owner_path(fresh["cluster"]["chroot"]))
    finally:
        close_client(root)
