"""Load shedding (``web/overload.py``): while the worker is late, a student's new work is a 503 that
says when to retry, and what already runs — reads, the instructor's class demo — goes on.

The probe is checked against the real thing (a thread holding the interpreter lock makes it wake
late); the app's answers are checked with the meter driven by hand, so no test depends on how
busy the machine running the suite happens to be."""

from __future__ import annotations

import sys
import time

import pytest

from web.overload import BUSY_LAG_S, CALM_LAG_S, RETRY_AFTER_S, LagMeter, Overload

INSTRUCTOR = "teacher-secret-overload"
APP_CONFIG = {"INSTRUCTOR_TOKEN": INSTRUCTOR, "FAULTS_PER_SECOND": 0}
SMALL = {"cluster": {"brokers": [0, 1]}}


def test_one_hiccup_sheds_nothing_a_sustained_lag_does_and_calm_needs_a_low_average():
    meter = LagMeter()
    meter.note(1.0)  # a garbage collection, a Spark job starting
    assert not meter.busy
    for _ in range(5):
        meter.note(0.0)
    for _ in range(3):
        meter.note(0.8)  # threads wait most of a second for their turn, again and again
    assert meter.busy and meter.lag_s >= BUSY_LAG_S
    meter.note(0.0)
    assert meter.busy, "one punctual probe is not calm yet (hysteresis)"
    while meter.lag_s > CALM_LAG_S:
        meter.note(0.0)
    assert not meter.busy
    assert meter.describe() == {"busy": False, "lag_ms": round(meter.lag_s * 1000, 1), "shed": 0}


def test_the_probe_wakes_late_while_another_thread_holds_the_interpreter_lock():
    """The real measure: one pure-Python loop that never blocks keeps the lock for the whole
    switch interval, so the probe's timer fires on time but its thread waits for the lock."""
    overload = Overload(meter=LagMeter(busy_s=0.5, calm_s=0.05, smoothing=1.0)).start()
    interval = sys.getswitchinterval()
    try:
        sys.setswitchinterval(1.5)
        end = time.monotonic() + 1.2
        while time.monotonic() < end:
            pass
    finally:
        sys.setswitchinterval(interval)
    deadline = time.monotonic() + 5
    while not overload.meter.busy and time.monotonic() < deadline:
        time.sleep(0.01)
    overload.stop()
    assert overload.meter.busy, f"the probe saw no lag: {overload.describe()}"


@pytest.fixture()
def overload(app):
    """The app's own shedding with its probe stopped: the test decides how late the worker is."""
    shedding = app.extensions["kclab"].overload
    shedding.stop()
    yield shedding
    shedding.meter.busy = False


def _busy(overload) -> None:
    for _ in range(10):
        overload.meter.note(2.0)
    assert overload.meter.busy


def test_while_busy_a_students_new_work_waits_and_everything_else_goes_on(app, client, sandbox, overload):
    h = {"X-Sandbox-Token": sandbox["token"]}
    ih = {"X-Instructor-Token": INSTRUCTOR}
    room = client.post("/api/classes", json={"instructor": "Ada"}, headers=ih).get_json()
    assert client.post(f"/api/classes/{room['id']}/session", json=SMALL, headers=ih).status_code == 201
    _busy(overload)

    for refused in (client.post("/api/sandboxes", json=SMALL),
                    client.post(f"/api/sandboxes/{sandbox['id']}/faults", json={"op": "crash_broker", "broker": 1},
                                headers=h),
                    client.post("/api/lessons/controller_failover/walkthrough", json={})):
        assert refused.status_code == 503, refused.get_json()
        assert refused.headers["Retry-After"] == str(RETRY_AFTER_S)
        error = refused.get_json()["error"]
        assert "the server is busy" in error and f"try again in {RETRY_AFTER_S} s" in error

    socketio = app.extensions["kclab"].socketio
    page = socketio.test_client(app, flask_test_client=app.test_client())
    answer = page.emit("fault", {"sandbox": sandbox["id"], "token": sandbox["token"], "op": "crash_broker",
                                 "broker": 1}, callback=True)
    page.disconnect()
    assert answer["ok"] is False and answer["status"] == 503 and "busy" in answer["error"]

    # Reading goes on, the instructor's demo goes on, and /healthz says why students wait.
    assert client.get(f"/api/sandboxes/{sandbox['id']}/snapshot", headers=h).status_code == 200
    demo = client.post(f"/api/classes/{room['id']}/faults", json={"op": "stop_broker", "broker": 1}, headers=ih)
    assert demo.status_code == 200, demo.get_json()
    health = client.get("/healthz").get_json()
    assert health["overload"]["busy"] is True and health["overload"]["shed"] >= 4

    while overload.meter.busy:  # the worker has caught up
        overload.meter.note(0.0)
    calm = client.post(f"/api/sandboxes/{sandbox['id']}/faults", json={"op": "crash_broker", "broker": 1}, headers=h)
    assert calm.status_code == 200, calm.get_json()


def test_shedding_can_be_turned_off():
    off = Overload(enabled=False)
    off.start()
    off.meter.busy = True
    off.require()  # no 503: kclab serve --shed-lag-ms 0
    assert off.describe()["enabled"] is False
