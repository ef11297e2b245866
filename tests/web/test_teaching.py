"""Lessons in the browser's API: a walkthrough with its Continue and graded answers, back and
try-it-yourself, class mode (students watch, answer, cannot act, get private copies), and the
lesson editor's checks."""

from __future__ import annotations

import time

import pytest

from tests.support import wait_until

INSTRUCTOR = "teacher-secret"


@pytest.fixture(scope="module")
def app(zk_hosts, tmp_path_factory):
    from web.app import create_app
    app = create_app({"ZK_HOSTS": zk_hosts, "DATA_DIR": str(tmp_path_factory.mktemp("data")), "TESTING": True,
                      "INSTRUCTOR_TOKEN": INSTRUCTOR, "MAX_SANDBOXES": 12})
    yield app
    app.extensions["kclab"].broadcaster.stop()
    app.extensions["kclab"].sandboxes.close_all()


def records(client, sandbox):
    return client.get(f"/api/sandboxes/{sandbox['id']}/records?since=0",
                      headers={"X-Sandbox-Token": sandbox["token"]}).get_json()["records"]


def lesson_state(client, sandbox, to_state, step=None):
    return [r for r in records(client, sandbox) if r["kind"] == "lesson" and r["to_state"] == to_state
            and (step is None or r.get("step") == step)]


def test_the_lesson_list(client):
    listed = {lesson["id"]: lesson for lesson in client.get("/api/lessons").get_json()["lessons"]}
    failover = listed["controller_failover"]
    assert not failover["broken"] and failover["minutes"] == 5
    assert [s["op"] for s in failover["steps"]][:2] == ["say", "highlight"]
    assert client.get("/api/lessons/nope").status_code == 404


def test_walkthrough_waits_for_continue_and_grades_the_answer(client):
    sandbox = client.post("/api/lessons/controller_failover/walkthrough", json={}).get_json()
    h = {"X-Sandbox-Token": sandbox["token"]}
    wait_until(lambda: lesson_state(client, sandbox, "step_started", 5), 20, "the lesson to reach its pause")
    assert not lesson_state(client, sandbox, "step_finished", 5)  # waiting for Continue
    bad = client.post(f"/api/sandboxes/{sandbox['id']}/lesson/answer", headers=h, json={"question": "x", "answer": "2"})
    assert bad.status_code == 409
    ok = client.post(f"/api/sandboxes/{sandbox['id']}/lesson/answer", headers=h,
                     json={"question": "next_epoch", "answer": "3"})
    assert ok.status_code == 200 and ok.get_json()["counts"] == {"3": 1}
    assert client.post(f"/api/sandboxes/{sandbox['id']}/lesson/continue", headers=h).status_code == 200
    wait_until(lambda: lesson_state(client, sandbox, "finished"), 30, "the lesson to finish")
    [graded] = lesson_state(client, sandbox, "answered")
    assert graded["answer"] == "3" and graded["correct"] is False and graded["detail"]["expected"] == "2"
    assert "plus one" in graded["note"]
    assert lesson_state(client, sandbox, "finished")[0]["detail"] == {"completed": True}
    # After the last step the cluster stays for free play.
    assert client.post(f"/api/sandboxes/{sandbox['id']}/faults", headers=h,
                       json={"op": "crash_broker", "broker": 1}).status_code == 200


def test_back_replays_to_the_step_and_try_it_forks_free_play(client):
    sandbox = client.post("/api/lessons/controller_failover/walkthrough", json={}).get_json()
    h = {"X-Sandbox-Token": sandbox["token"]}
    wait_until(lambda: lesson_state(client, sandbox, "step_started", 5), 20, "the pause")
    back = client.post(f"/api/sandboxes/{sandbox['id']}/lesson/back", headers=h, json={"step": 4})
    assert back.status_code == 201
    rewound = back.get_json()
    wait_until(lambda: lesson_state(client, rewound, "step_started", 5), 20, "the rewound lesson to reach the pause")
    assert client.get(f"/api/sandboxes/{sandbox['id']}", headers=h).status_code == 404  # the old one is closed
    tried = client.post(f"/api/sandboxes/{rewound['id']}/lesson/try", headers={"X-Sandbox-Token": rewound["token"]},
                        json={"step": 8}).get_json()
    wait_until(lambda: any(r["kind"] == "controller" and r.get("to_state") == "elected" and r.get("controller_epoch") == 2
                           for r in records(client, tried)), 20, "the copy to play up to step 8")
    assert client.post(f"/api/sandboxes/{tried['id']}/faults", headers={"X-Sandbox-Token": tried["token"]},
                       json={"op": "crash_broker", "broker": 2}).status_code == 200


def test_class_mode(app, client):
    refused = client.post("/api/classes", json={}, headers={"X-Instructor-Token": "guess"})
    assert refused.status_code == 403
    room = client.post("/api/classes", json={"instructor": "Ada"}, headers={"X-Instructor-Token": INSTRUCTOR}).get_json()
    ih = {"X-Instructor-Token": INSTRUCTOR}
    students = [client.post("/api/classes/join", json={"code": room["code"].lower(), "name": f"student {n}"}).get_json()
                for n in range(2)]
    assert client.post("/api/classes/join", json={"code": "ZZZZZZ", "name": "x"}).status_code == 404
    session = client.post(f"/api/classes/{room['id']}/session", json={"lesson": "controller_failover"},
                          headers=ih).get_json()
    # A student watches but cannot act: they hold no token of the class cluster.
    assert client.post(f"/api/sandboxes/{session['id']}/faults", headers={"X-Sandbox-Token": students[0]["token"]},
                       json={"op": "crash_broker", "broker": 0}).status_code == 403
    socketio = app.extensions["kclab"].socketio
    pages = [socketio.test_client(app, flask_test_client=app.test_client()) for _ in students]
    instructor = socketio.test_client(app, flask_test_client=app.test_client())
    assert instructor.emit("join_class", {"class": room["id"], "token": INSTRUCTOR}, callback=True)["ok"]
    for page, student in zip(pages, students):
        joined = page.emit("join_class", {"class": room["id"], "token": student["token"]}, callback=True)
        assert joined["ok"] and joined["class"]["session"] == session["id"]
    # Students following the class keep its cluster from being reaped as idle.
    manager = app.extensions["kclab"].sandboxes
    assert manager.get(session["id"]).watchers == 3
    assert session["id"] not in manager.reap_idle(now=time.monotonic() + 10 * manager.idle_seconds)
    sandbox = {"id": session["id"], "token": session["token"]}
    wait_until(lambda: lesson_state(client, sandbox, "step_started", 5), 20, "the class lesson's pause")
    # Class answers are checked as a walkthrough's: an empty answer is a 400, a closed question a 409.
    empty = pages[0].emit("class_answer", {"class": room["id"], "token": students[0]["token"], "question": "nope",
                                           "answer": " "}, callback=True)
    closed = pages[0].emit("class_answer", {"class": room["id"], "token": students[0]["token"], "question": "nope",
                                            "answer": "2"}, callback=True)
    assert (empty["status"], closed["status"]) == (400, 409) and "next_epoch" in closed["error"]
    for page, student, given in zip(pages, students, ("2", "3")):
        ack = page.emit("class_answer", {"class": room["id"], "token": student["token"], "question": "next_epoch",
                                         "answer": given}, callback=True)
        assert ack["ok"], ack
    tallies = [m["args"][0] for m in instructor.get_received() if m["name"] == "class_answers"]
    assert tallies[-1] == {"question": "next_epoch", "counts": {"2": 1, "3": 1}}
    assert client.post(f"/api/classes/{room['id']}/continue", headers=ih).status_code == 200
    wait_until(lambda: len(lesson_state(client, sandbox, "answered")) == 2, 30, "both answers graded")
    grades = {r["student"]: r["correct"] for r in lesson_state(client, sandbox, "answered")}
    assert sorted(grades.values()) == [False, True]
    # Everyone gets a private copy of the cluster.
    copies = client.post(f"/api/classes/{room['id']}/fork", headers=ih).get_json()["copies"]
    assert len(copies) == 2 and all("sandbox" in c for c in copies)
    for page, student in zip(pages, students):
        handed = [m["args"][0] for m in page.get_received() if m["name"] == "private_sandbox"]
        assert handed and handed[-1]["class"] == room["id"]
        mine = {"id": handed[-1]["sandbox"], "token": handed[-1]["token"]}
        view = client.get(f"/api/sandboxes/{mine['id']}/snapshot", headers={"X-Sandbox-Token": mine["token"]}).get_json()
        assert view["view"]["brokers"]["0"]["state"] == "crashed"  # the class's crash, replayed
    for page in (*pages, instructor):
        page.disconnect()


def test_the_lesson_editor_names_lines_and_never_saves_a_bad_lesson(client, app):
    ih = {"X-Instructor-Token": INSTRUCTOR}
    checked = client.post("/api/lessons/check", json={"text": "name: x\nminutes: 3\ncluster: {brokers: [0]}\nsteps:\n"
                                                               "  - op: crash_broker\n    broker: 4\n"}).get_json()
    assert not checked["ok"] and checked["problems"][0]["line"] == 6 and "broker 4" in checked["problems"][0]["message"]
    good = "name: Mine\nminutes: 3\ncluster: {brokers: [0]}\nsteps:\n  - op: say\n    text: hi\n"
    assert client.post("/api/instructor/lessons", json={"id": "mine", "text": good}).status_code == 403
    saved = client.post("/api/instructor/lessons", json={"id": "mine", "text": good, "instructor": "Ada"}, headers=ih)
    assert saved.status_code == 201 and saved.get_json()["id"] == "ada/mine"
    broken = client.post("/api/instructor/lessons", json={"id": "mine", "text": good.replace("say", "sya"),
                                                          "instructor": "Ada"}, headers=ih)
    assert broken.status_code == 400 and broken.get_json()["problems"]
    listed = {lesson["id"]: lesson for lesson in client.get("/api/lessons").get_json()["lessons"]}
    assert listed["ada/mine"]["title"] == "Mine"  # the good version stayed
    ran = client.post("/api/instructor/lessons/dry-run", json={"text": good}, headers=ih).get_json()
    assert ran["ok"], ran
