"""The sandbox cap: from what the machine holds, overridable, and a refusal that says how many run
and when to retry; a class hand-out that closes each student's old copy before making the new one,
so a class larger than half the cap gets its second hand-out too."""

from __future__ import annotations

from tests.support import wait_until
from web.capacity import MB_PER_SANDBOX, RESERVED_MB, SANDBOXES_PER_CORE, capacity, default_capacity, sandbox_mb

INSTRUCTOR = "capacity-instructor-token"
CAP = 5


def test_the_default_cap_is_what_memory_and_cores_hold():
    by_cores = default_capacity(memory_mb=64 * 1024, cores=2)
    assert by_cores.sandboxes == 2 * SANDBOXES_PER_CORE and "the cores decide" in by_cores.why
    small = default_capacity(memory_mb=RESERVED_MB + 30 * MB_PER_SANDBOX, cores=8)
    assert small.sandboxes == 30 and "the memory decide" in small.why and "8 core(s)" in small.why
    assert default_capacity(memory_mb=512, cores=1).sandboxes >= 1  # never zero: the page still works
    assert capacity(None).sandboxes >= 4 and capacity(7).sandboxes == 7 and "--max-sandboxes" in capacity(7).why


def test_sandboxes_that_keep_more_records_are_fewer():
    """``KCLAB_RECORD_HISTORY`` is memory: a sandbox keeps that many records for pages that catch
    up, so the cap by memory counts them (and the words say the budget it used)."""
    memory = RESERVED_MB + 60 * MB_PER_SANDBOX
    assert default_capacity(memory_mb=memory, cores=8).sandboxes == 60  # the default history: 8 MB
    bigger = default_capacity(memory_mb=memory, cores=8, record_history=100_000)
    assert sandbox_mb(100_000) > 2 * MB_PER_SANDBOX
    assert bigger.sandboxes == 60 * MB_PER_SANDBOX // sandbox_mb(100_000) and f"{sandbox_mb(100_000)} MB" in bigger.why
    assert default_capacity(memory_mb=memory, cores=8, record_history=1_000).sandboxes > 60
    assert capacity(None, 100_000).sandboxes <= capacity(None).sandboxes and capacity(7, 100_000).sandboxes == 7


APP_CONFIG = {"INSTRUCTOR_TOKEN": INSTRUCTOR, "MAX_SANDBOXES": CAP}  # tests/web/conftest.py's app


def test_a_full_server_says_how_many_run_and_when_to_retry(app):
    client = app.test_client()
    small = {"cluster": {"brokers": [0]}}
    made = [client.post("/api/sandboxes", json=small) for _ in range(CAP)]
    try:
        assert [r.status_code for r in made] == [201] * CAP
        refused = client.post("/api/sandboxes", json=small)
        assert refused.status_code == 503
        body = refused.get_json()
        assert body["running"] == CAP and f"runs {CAP} sandboxes" in body["error"]
        assert "--max-sandboxes" in body["error"]  # why the cap is what it is
        assert refused.headers["Retry-After"] == str(body["retry_after"]) and body["retry_after"] > 0
    finally:
        for response in made:
            sandbox = response.get_json()
            client.delete(f"/api/sandboxes/{sandbox['id']}", headers={"X-Sandbox-Token": sandbox["token"]})
    assert app.extensions["kclab"].sandboxes.places.running() == 0  # every place given back


def hand_out(client, room, ih) -> dict:
    """Start a hand-out and wait for it to finish (as the instructor's page polls after a reload)."""
    assert client.post(f"/api/classes/{room['id']}/fork", headers=ih).status_code == 202
    return wait_until(lambda: (lambda h: h if h["status"] == "done" else None)(
        client.get(f"/api/classes/{room['id']}/handout", headers=ih).get_json()), 60, "the hand-out to finish")


def test_a_second_hand_out_to_a_class_larger_than_half_the_cap_works(app):
    client = app.test_client()
    ih = {"X-Instructor-Token": INSTRUCTOR}
    room = client.post("/api/classes", json={}, headers=ih).get_json()
    students = [client.post("/api/classes/join", json={"code": room["code"], "name": f"s{i}"}).get_json()
                for i in range(CAP - 2)]  # 3 students + the class demo: 4 places of 5; twice that would not fit
    demo = client.post(f"/api/classes/{room['id']}/session", json={"cluster": {"brokers": [0]}}, headers=ih)
    assert demo.status_code == 201
    assert hand_out(client, room, ih)["built"] == len(students)
    first = {s["sandbox"] for s in client.get(f"/api/classes/{room['id']}", headers=ih).get_json()["students"]}
    second = hand_out(client, room, ih)
    assert (second["built"], second["failed"]) == (len(students), []), second
    manager = app.extensions["kclab"].sandboxes
    live = {s.id for s in manager.all()}
    described = client.get(f"/api/classes/{room['id']}", headers=ih).get_json()
    now = {s["sandbox"] for s in described["students"]}
    assert len(now) == len(students) and now <= live and not first & live  # old copies closed
    assert manager.places.running() == len(students) + 1


def test_a_class_larger_than_the_room_left_is_refused_per_student_with_the_reason(app):
    client = app.test_client()
    ih = {"X-Instructor-Token": INSTRUCTOR}
    socketio = app.extensions["kclab"].socketio
    room = client.post("/api/classes", json={}, headers=ih).get_json()
    students = [client.post("/api/classes/join", json={"code": room["code"], "name": f"t{i}"}).get_json()
                for i in range(CAP)]  # the class demo + CAP copies: one more than the cap
    pages = [socketio.test_client(app, flask_test_client=app.test_client()) for _ in students]
    for page, student in zip(pages, students):
        assert page.emit("join_class", {"class": room["id"], "token": student["token"]}, callback=True)["ok"]
    manager = app.extensions["kclab"].sandboxes
    for sandbox in manager.all():  # the previous test's class and copies: the cap is this class's alone
        manager.close(sandbox.id)
    demo = client.post(f"/api/classes/{room['id']}/session", json={"cluster": {"brokers": [0]}}, headers=ih)
    assert demo.status_code == 201
    done = hand_out(client, room, ih)
    assert done["built"] == CAP - 1 and len(done["failed"]) == 1 and done["remaining"] == 0, done
    refusal = done["failed"][0]
    assert f"runs {CAP} sandboxes" in refusal["error"] and refusal["name"].startswith("t")
    refused = next(page for page, s in zip(pages, students) if s["student"]["id"] == refusal["student"])
    told = [m["args"][0] for m in refused.get_received() if m["name"] == "private_sandbox_failed"]
    assert len(told) == 1 and f"runs {CAP} sandboxes" in told[0]["error"]  # the student is told why
    assert not [m for m in refused.get_received() if m["name"] == "private_sandbox"]
    token = students[pages.index(refused)]["token"]
    rejoined = refused.emit("join_class", {"class": room["id"], "token": token}, callback=True)
    assert f"runs {CAP} sandboxes" in rejoined["student"]["copy_error"]  # and again after a reload
    for page in pages:
        page.disconnect()
