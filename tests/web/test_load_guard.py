"""A worker that has fallen behind refuses a student's new fault or sandbox with a 503 that says
why and when to try again, never the instructor's demo, and accepts again once it has caught up
(``web/load_guard.py``). The probe is checked against a worker really kept from running: a
thread that holds the interpreter."""

from __future__ import annotations

import threading
import time

import jsonschema
import pytest

from backend.zk.io_loop import SessionLoop
from tests.support import wait_until
from web.load_guard import DEFAULT_LIMIT_MS, DEFAULT_ZK_LIMIT_MS, RETRY_AFTER_S, LoadGuard
from web.service import ApiError

INSTRUCTOR = "load-guard-instructor-token"
IH = {"X-Instructor-Token": INSTRUCTOR}
SMALL = {"cluster": {"brokers": [0, 1]}}
APP_CONFIG = {"INSTRUCTOR_TOKEN": INSTRUCTOR, "FAULTS_PER_SECOND": 0,
              "SHED_AFTER_MS": DEFAULT_LIMIT_MS,  # on, as a served app has it (the tests' apps have it off)
              "SHED_ZK_AFTER_MS": DEFAULT_ZK_LIMIT_MS}


def _behind(guard: LoadGuard) -> None:
    """The worker as after a second and more of running behind: the probe stopped, so that only
    the test moves the lateness."""
    guard.stop()
    guard.observe(late_s=1.5, elapsed_s=1.55)
    assert guard.shedding


def _caught_up(guard: LoadGuard) -> None:
    while guard.shedding:
        guard.observe(late_s=0.0, elapsed_s=0.05)


def _health(client) -> dict:
    """``/healthz``'s body, checked against its schema in ``/api/openapi.json``: the load fields are
    an interface (the page's retry advice, the bench, the browser tests read them)."""
    document = client.get("/api/openapi.json").get_json()
    body = client.get("/healthz").get_json()
    jsonschema.validate(body, {"$ref": "#/components/schemas/Health", "components": document["components"]})
    return body


def _fault(client, sandbox, broker=1):
    return client.post(f"/api/sandboxes/{sandbox['id']}/faults", json={"op": "crash_broker", "broker": broker},
                       headers={"X-Sandbox-Token": sandbox["token"]})


def test_behind_a_worker_refuses_a_students_new_work_and_not_the_instructors(app):
    client, state = app.test_client(), app.extensions["kclab"]
    created = client.post("/api/sandboxes", json=SMALL)
    assert created.status_code == 201, created.get_json()
    student = created.get_json()
    room = client.post("/api/classes", json={}, headers=IH).get_json()
    assert client.post(f"/api/classes/{room['id']}/session", json=SMALL, headers=IH).status_code == 201
    bus = state.sandboxes.get(student["id"]).bus
    wait_until(lambda: state.sandboxes.get(student["id"]).cluster.controller_id() is not None, 30, "a controller")
    _behind(state.load_guard)
    sandboxes, seq = len(state.sandboxes.all()), bus.next_seq

    refused = _fault(client, student)
    assert refused.status_code == 503 and refused.headers["Retry-After"] == str(RETRY_AFTER_S)
    body = refused.get_json()
    assert body["overloaded"] is True and body["retry_after"] == RETRY_AFTER_S
    assert "overloaded" in body["error"] and "not carried out" in body["error"] and "try again" in body["error"]
    new = client.post("/api/sandboxes", json=SMALL)
    assert new.status_code == 503 and new.get_json()["overloaded"] is True
    lesson = client.post("/api/lessons/controller_failover/walkthrough", json={})
    assert lesson.status_code == 503 and lesson.get_json()["overloaded"] is True
    page = state.socketio.test_client(app, flask_test_client=app.test_client())
    by_socket = page.emit("fault", {"sandbox": student["id"], "token": student["token"], "op": "crash_broker",
                                    "broker": 1}, callback=True)
    assert by_socket["ok"] is False and by_socket["overloaded"] is True
    assert len(state.sandboxes.all()) == sandboxes  # nothing was built
    assert bus.next_seq == seq  # and nothing was started: not a single record
    assert state.sandboxes.get(student["id"]).cluster.brokers[1].status == "running"

    demo = client.post(f"/api/classes/{room['id']}/faults", json={"op": "crash_broker", "broker": 1}, headers=IH)
    assert demo.status_code == 200, demo.get_json()  # the class is watching the instructor's demo
    health = _health(client)["load"]
    assert health["shedding"] is True and health["refused"] == 4 and health["lag_ms"] > health["limit_ms"]
    # The instructor's page sees it too (``web/server_load.py``), and only the instructor.
    load = client.get(f"/api/classes/{room['id']}/load", headers=IH)
    assert load.status_code == 200, load.get_json()
    seen = load.get_json()
    assert seen["shedding"] is True and seen["refused"] == 4 and [w["shedding"] for w in seen["workers"]] == [True]
    assert seen["sandboxes"] == len(state.sandboxes.all()) == seen["workers"][0]["sandboxes"]
    assert seen["cap"] >= seen["sandboxes"] and seen["zk_dropped"] >= 0 and seen["zk_expired"] >= 0
    assert client.get(f"/api/classes/{room['id']}/load").status_code == 403
    assert client.get("/api/classes/no-such-class/load", headers=IH).status_code == 404

    _caught_up(state.load_guard)
    assert _fault(client, student).status_code == 200
    assert _health(client)["load"]["shedding"] is False
    assert client.get(f"/api/classes/{room['id']}/load", headers=IH).get_json()["shedding"] is False
    page.disconnect()


def test_the_lateness_is_smoothed_and_refusal_ends_below_half_the_limit():
    guard = LoadGuard(limit_ms=300)
    guard.observe(late_s=0.2, elapsed_s=0.25)  # one collector pause of 0.2 s
    assert not guard.shedding and 0 < guard.probe.ms < 300
    for _ in range(20):  # half a second behind, for a second
        guard.observe(late_s=0.5, elapsed_s=0.55)
    assert guard.shedding and guard.probe.ms > 300
    with pytest.raises(ApiError) as refused:
        guard.require()
    assert refused.value.status == 503 and guard.refused == 1
    while guard.probe.ms >= 150:  # between half the limit and the limit: still refusing
        assert guard.shedding
        guard.observe(late_s=0.1, elapsed_s=0.15)
    assert not guard.shedding
    guard.require()


def test_a_late_zookeeper_loop_is_refused_for_though_the_probe_is_on_time():
    """The session loop can run seconds late while the probe wakes on time (docs/performance.md,
    issue 14, twenty-eighth round): its own lateness refuses, the refusal names it, and refusing
    ends when both are under half their limits; ``zk_limit_ms`` 0 never refuses for it."""
    guard = LoadGuard(limit_ms=300)
    assert guard.zk.limit_ms == DEFAULT_ZK_LIMIT_MS == 1000
    guard.observe(late_s=0.01, elapsed_s=0.06, zk_late_s=2.0)
    assert 0 < guard.zk.ms < 1000 and not guard.shedding  # one late reading moves it a little
    for _ in range(10):  # 0.66 s of the loop running 2 s late, the probe 10 ms late
        guard.observe(late_s=0.01, elapsed_s=0.06, zk_late_s=2.0)
    assert guard.shedding and guard.probe.ms < 300 < 1000 < guard.zk.ms
    with pytest.raises(ApiError) as refused:
        guard.require()
    assert refused.value.status == 503 and "its ZooKeeper sessions run 1.5 s behind" in str(refused.value)
    while guard.zk.ms >= 500:
        assert guard.shedding
        guard.observe(late_s=0.01, elapsed_s=0.06, zk_late_s=0.1)
    assert not guard.shedding
    assert guard.describe()["zk_lag_ms"] == round(guard.zk.ms, 1)
    never = LoadGuard(limit_ms=300, zk_limit_ms=0)
    for _ in range(40):
        never.observe(late_s=0.01, elapsed_s=0.06, zk_late_s=5.0)
    assert not never.shedding and never.zk.ms > 1000


class _Owner:
    timer_token = None

    def __init__(self, on_timer=lambda: None) -> None:
        self.on_timer = on_timer

    def on_wake(self) -> None:
        pass


@pytest.mark.parametrize("probe_limit_ms", [300, 0], ids=["both-limits", "probe-limit-off"])
def test_the_probe_reads_a_real_session_loop_held_up(probe_limit_ms):
    """The real thing: a session loop (a loop of its own, not the process's) whose thread is kept
    by one step while a timer waits; the probe, itself on time, reads the loop's lateness and
    refuses; once the loop runs again, refusing ends. The probe's own limit turned off
    (``--shed-after-ms 0``) leaves the loop's in force."""
    loop = SessionLoop()
    guard = LoadGuard(limit_ms=probe_limit_ms, zk_loop=lambda: loop, zk_limit_ms=200).start()
    release = threading.Event()
    try:
        start = time.monotonic()
        loop.call(lambda: (loop.set_timer(_Owner(lambda: release.wait(20)), start + 0.05),
                           loop.set_timer(_Owner(), start + 0.1)))
        wait_until(lambda: guard.shedding, 15, "the probe to see the loop behind")
        assert guard.zk.ms > 200, guard.describe()
        release.set()
        wait_until(lambda: not guard.shedding, 15, "the probe to see the loop caught up")
        assert guard.zk.ms < 100, guard.describe()
    finally:
        release.set()
        guard.stop()
        loop.close()


def test_the_probe_sees_a_worker_whose_threads_are_kept_from_running():
    """The real thing the refusal stands on: a thread that holds the interpreter (here in one
    long computation, as a huge JSON encoding would) keeps the probe from waking on time, and
    the probe says so; once the interpreter is free again, it is on time again."""
    guard = LoadGuard(limit_ms=100).start()
    try:
        wait_until(lambda: guard.wakes >= 20, 10, "the probe to wake 20 times")
        assert not guard.shedding, guard.describe()  # a quiet process: on time
        stop = threading.Event()

        def compute() -> None:
            while not stop.is_set():
                pow(7, 1_000_000)  # big-integer arithmetic: a few hundred ms without letting go

        busy = threading.Thread(target=compute, daemon=True)
        busy.start()
        try:
            wait_until(lambda: guard.shedding, 60, "the probe to see the worker behind")
        finally:
            stop.set()
            busy.join(30)
        wait_until(lambda: not guard.shedding, 30, "the probe to see the worker caught up")
    finally:
        guard.stop()
