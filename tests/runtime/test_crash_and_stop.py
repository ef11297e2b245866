"""A crash is ``kill -9``: the session is left for ZooKeeper to expire (issue 13, item 1).

On the real ZooKeeper: a crashed broker's registration (and ``/controller``) outlive it by the
session timeout, and nobody — the controller included — acts before; a clean ``stop_broker``
removes them at once; a restart before the old session expired fails as Kafka 2.8's
``KafkaServer`` does (``NodeExistsException``), and succeeds after.
"""

from __future__ import annotations

import threading
import time

from backend.runtime.faults import apply_fault
from backend.runtime.polling import poll_until as wait_until
from backend.zk import client as zk_client_module
from backend.zk import paths
from backend.zk.client import KafkaZkClient

TIMEOUT_MS = 2000  # long enough to look before the expiry on a loaded machine, short for the suite


def test_a_crashed_controller_keeps_its_znodes_until_the_session_expires(start_cluster, zk_client):
    cluster, recorder = start_cluster(brokers=(0, 1), topics={"t": {"assignment": {0: [0, 1]}}},
                                      config={"zookeeper.session.timeout.ms": TIMEOUT_MS})
    _, registration = zk_client.get(paths.broker_path(0))
    crashed_at = time.monotonic()
    assert apply_fault(cluster, "crash_broker", {"broker": 0}).ok
    [crash] = recorder.of("broker", broker_id=0, to_state="crashed")
    assert crash.detail["session_timeout_ms"] == TIMEOUT_MS
    assert crash.detail["session_id"] == hex(registration.ephemeralOwner)
    assert crash.detail["session_expires_ms"] >= crash.ts_ms + TIMEOUT_MS - 50
    # Before the timeout: ZooKeeper still holds both ephemerals, so nobody has noticed anything.
    still = zk_client.exists(paths.broker_path(0))
    controller = cluster.controller_id()
    if time.monotonic() - crashed_at < TIMEOUT_MS / 1000 * 0.8:  # a loaded machine may have slept past it
        assert still is not None and still.ephemeralOwner == registration.ephemeralOwner
        assert controller == 0
        assert not recorder.of("controller", to_state="elected", broker_id=1)
    # After it: the znodes go, the expiry is recorded, broker 1 is elected and leads t-0.
    wait_until(lambda: zk_client.exists(paths.broker_path(0)) is None, 15, "the session of broker 0 to expire")
    expired = wait_until(lambda: recorder.of("broker", broker_id=0, to_state="session_expired"), 10,
                         "the expiry record")
    assert "watch" in expired[0].note and expired[0].detail["session_id"] == crash.detail["session_id"]
    wait_until(lambda: cluster.controller_id() == 1, 15, "broker 1 to become controller")
    wait_until(lambda: cluster.inspect()["partitions"]["t-0"]["leader"] == 1, 15, "broker 1 to lead t-0")


def test_stop_broker_closes_the_session_at_once(start_cluster, zk_client):
    # A session timeout far beyond the waits below: only a closed session can explain the deletion.
    cluster, recorder = start_cluster(brokers=(0, 1), topics={"t": {"assignment": {0: [1, 0]}}},
                                      config={"zookeeper.session.timeout.ms": 30000})
    assert apply_fault(cluster, "stop_broker", {"broker": 1}).ok
    assert zk_client.exists(paths.broker_path(1)) is None
    wait_until(lambda: cluster.inspect()["partitions"]["t-0"]["leader"] == 0, 10, "broker 0 to lead t-0")
    assert "closed its ZooKeeper session" in recorder.of("broker", broker_id=1, to_state="stopped")[0].note
    assert apply_fault(cluster, "start_broker", {"broker": 1}).ok  # nothing left to expire


def test_a_restart_before_the_expiry_fails_as_kafka_does_and_succeeds_after(start_cluster, zk_client):
    cluster, recorder = start_cluster(brokers=(0, 1), config={"zookeeper.session.timeout.ms": TIMEOUT_MS})
    _, registration = zk_client.get(paths.broker_path(1))
    assert apply_fault(cluster, "crash_broker", {"broker": 1}).ok
    result = apply_fault(cluster, "start_broker", {"broker": 1})
    if result.ok:  # only when the machine was so slow that the session had expired before the restart
        assert recorder.of("broker", broker_id=1, to_state="session_expired")
        return
    assert "NodeExistsException" in result.message, result.message
    [failed] = recorder.of("broker", broker_id=1, to_state="start_failed")
    assert failed.outcome == "error" and failed.detail["error"] == "NodeExistsException"
    assert recorder.of("fault", op="start_broker", to_state="failed")
    assert cluster.brokers[1].status == "crashed"
    _, still = zk_client.get(paths.broker_path(1))
    assert still.ephemeralOwner == registration.ephemeralOwner  # the old session's, untouched
    wait_until(lambda: recorder.of("broker", broker_id=1, to_state="session_expired"), 15, "the old session to expire")
    assert apply_fault(cluster, "start_broker", {"broker": 1}).ok
    _, fresh = zk_client.get(paths.broker_path(1))
    assert fresh.ephemeralOwner != registration.ephemeralOwner
    wait_until(lambda: cluster.inspect()["brokers"][1] == "alive", 10, "broker 1 to be alive again")


def test_a_start_that_zookeeper_does_not_answer_gives_up_and_leaves_the_broker_down(start_cluster, zk_client,
                                                                                      monkeypatch):
    """kazoo keeps a request made while it re-establishes its connection until it has; a start
    (a student's request, a forwarded one's thread) must not wait for ever on it. Here the new
    session's cable goes silent right after it connected."""
    cluster, recorder = start_cluster(brokers=(0, 1), config={"zookeeper.session.timeout.ms": TIMEOUT_MS})
    assert apply_fault(cluster, "stop_broker", {"broker": 1}).ok
    broker = cluster.brokers[1]
    monkeypatch.setattr(zk_client_module, "TIMEOUT_S", 1.0)
    create = KafkaZkClient.create_top_level_paths

    def silenced_then_create(self):
        broker.cable.pause()  # ZooKeeper hears nothing more from this session
        wait_until(lambda: self.zk.state != "CONNECTED", 10, "kazoo to notice its connection is gone")
        return create(self)  # kazoo keeps these requests until it is connected again, which it never is

    monkeypatch.setattr(KafkaZkClient, "create_top_level_paths", silenced_then_create)
    outcome = {}

    def start():
        try:
            broker.start()
        except Exception as exc:  # noqa: BLE001 - what the start raised is the test's subject
            outcome["error"] = exc

    starting = threading.Thread(target=start, daemon=True)
    starting.start()
    starting.join(30)
    assert not starting.is_alive(), "the start still waits for ZooKeeper"
    assert type(outcome.get("error")).__name__ == "KazooTimeoutError"
    assert broker.status == "stopped"
    [failed] = recorder.of("broker", broker_id=1, to_state="start_failed")
    assert failed.outcome == "error" and failed.detail["error"] == "KazooTimeoutError"
    assert "ZooKeeper did not answer" in failed.note
    assert zk_client.exists(paths.broker_path(1)) is None
    monkeypatch.undo()
    assert apply_fault(cluster, "start_broker", {"broker": 1}).ok  # the next start, with ZooKeeper answering, works
    assert zk_client.exists(paths.broker_path(1)) is not None
