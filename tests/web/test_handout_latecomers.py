"""Students keep joining while a class's copies are built: a latecomer is added to the running
hand-out, and once it is over the instructor can give a copy to just the students who have none,
leaving everyone else's copy alone (issue 14 item 2, a class of 200 that trickles in)."""

from __future__ import annotations

import threading

from tests.support import wait_until
from web.handout import COPY_THREADS

INSTRUCTOR = "latecomer-instructor-token"
IH = {"X-Instructor-Token": INSTRUCTOR}
APP_CONFIG = {"INSTRUCTOR_TOKEN": INSTRUCTOR}  # tests/web/conftest.py's app


def copies(client, room) -> dict[str, str | None]:
    """Each student's private copy now, by name (as the instructor's page lists them)."""
    return {s["name"]: s["sandbox"] for s in client.get(f"/api/classes/{room['id']}", headers=IH).get_json()["students"]}


def finished(client, room, handout_id: str) -> dict:
    return wait_until(lambda: (lambda h: h if h["id"] == handout_id and h["status"] == "done" else None)(
        client.get(f"/api/classes/{room['id']}/handout", headers=IH).get_json()), 60, "the hand-out to finish")


def test_a_latecomer_joins_the_running_hand_out_and_the_missing_get_theirs_after(app):
    client, socketio = app.test_client(), app.extensions["kclab"].socketio
    room = client.post("/api/classes", json={}, headers=IH).get_json()
    join = lambda name: client.post("/api/classes/join", json={"code": room["code"], "name": name}).get_json()  # noqa: E731
    join("early")
    assert client.post(f"/api/classes/{room['id']}/session", json={"cluster": {"brokers": [0]}},
                       headers=IH).status_code == 201
    instructor = socketio.test_client(app, flask_test_client=app.test_client())
    assert instructor.emit("join_class", {"class": room["id"], "token": INSTRUCTOR}, callback=True)["ok"]
    gate = threading.Event()  # hold the copiers: the latecomer joins while the hand-out runs
    held = [app.extensions["kclab"].classes.copier.pool.submit(gate.wait, 60) for _ in range(COPY_THREADS)]
    try:
        started = client.post(f"/api/classes/{room['id']}/fork", headers=IH).get_json()["handout"]
        assert (started["total"], started["remaining"]) == (1, 1)
        late = join("late")
        grown = [m["args"][0] for m in instructor.get_received() if m["name"] == "class_handout"]
        assert grown and (grown[-1]["id"], grown[-1]["total"], grown[-1]["remaining"]) == (started["id"], 2, 2)
    finally:
        gate.set()
    assert all(h.result(60) for h in held)
    assert finished(client, room, started["id"])["built"] == 2
    first = copies(client, room)
    assert first["early"] and first["late"]
    page = socketio.test_client(app, flask_test_client=app.test_client())  # the latecomer's page, reloaded
    joined = page.emit("join_class", {"class": room["id"], "token": late["token"]}, callback=True)
    assert joined["student"]["sandbox"] == first["late"]

    join("after")  # the hand-out is over: nobody builds this one a copy unasked
    assert copies(client, room)["after"] is None
    bad = client.post(f"/api/classes/{room['id']}/fork", json={"students": "some"}, headers=IH)
    assert bad.status_code == 400 and "'missing'" in bad.get_json()["error"]
    answer = client.post(f"/api/classes/{room['id']}/fork", json={"students": "missing"}, headers=IH)
    assert answer.status_code == 202 and answer.get_json()["handout"]["total"] == 1
    finished(client, room, answer.get_json()["handout"]["id"])
    second = copies(client, room)
    assert second["after"] and {k: second[k] for k in first} == first  # the others' copies untouched
    again = client.post(f"/api/classes/{room['id']}/fork", json={"students": "missing"}, headers=IH)
    assert again.status_code == 409 and "already has a private copy" in again.get_json()["error"]
    for p in (page, instructor):
        p.disconnect()


def test_a_huge_refused_students_value_is_quoted_short_with_what_is_allowed(app):
    client = app.test_client()
    room = client.post("/api/classes", json={}, headers=IH).get_json()
    bad = client.post(f"/api/classes/{room['id']}/fork", json={"students": "x" * 60_000}, headers=IH)
    error = bad.get_json()["error"]
    assert bad.status_code == 400 and len(bad.data) < 400, f"{len(bad.data)} bytes: {error[:200]}"
    assert "'all'" in error and "'missing'" in error and "'xxxx" in error and "60002 characters" in error


def test_every_refused_value_from_a_request_is_quoted_short(app):
    """The shared rule behind the fork's 400 (``web.service.quoted``): a class code, a query's
    number, whatever a client sent is repeated at most 80 characters long."""
    client = app.test_client()
    huge = "y" * 60_000
    answers = [client.post("/api/classes/join", json={"code": huge, "name": "s"}),
               client.get(f"/api/replays?limit={huge[:3000]}")]
    for answer in answers:
        error = answer.get_json()["error"]
        assert 400 <= answer.status_code < 500 and len(answer.data) < 500, (answer.status_code, error[:200])
        assert "'yyyy" in error.lower() and "characters)" in error, error
