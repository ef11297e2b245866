"""Lessons in the browser's API: a walkthrough with its Continue and graded answers, back and
try-it-yourself, class mode (students watch, answer, cannot act, get private copies), and the
lesson editor's checks."""

from __future__ import annotations

import time

from tests.support import wait_until

INSTRUCTOR = "teacher-secret"
APP_CONFIG = {"INSTRUCTOR_TOKEN": INSTRUCTOR, "MAX_SANDBOXES": 12}  # tests/web/conftest.py's app


def records(client, sandbox):
    return client.get(f"/api/sandboxes/{sandbox['id']}/records?since=0",
                      headers={"X-Sandbox-Token": sandbox["token"]}).get_json()["records"]


def lesson_state(client, sandbox, to_state, step=None):
    return [r for r in records(client, sandbox) if r["kind"] == "lesson" and r["to_state"] == to_state
            and (step is None or r.get("step") == step)]


def test_the_lesson_list_is_the_course(client):
    answer = client.get("/api/lessons").get_json()
    listed = {lesson["id"]: lesson for lesson in answer["lessons"]}
    failover = listed["controller_failover"]
    assert not failover["broken"] and failover["minutes"] == 5 and failover["requires"] == ["controller_election_race"]
    assert failover["part"] == answer["parts"][1]["title"] and failover["predictions"] == 2
    assert [(s["op"], s["stop"]) for s in failover["steps"]][:2] == [("say", True), ("expect", False)]
    ordered = [lesson["id"] for lesson in answer["lessons"]]
    assert ordered[:2] == ["zookeeper_sessions_and_watches", "zookeeper_quorum"]  # teaching order, not file order
    assert ordered == [i for part in answer["parts"] for i in part["lessons"]]
    assert client.get("/api/lessons/nope").status_code == 404


def stop_at(client, sandbox, step=None):
    """Press Continue at every stop until the lesson waits at ``step`` (None: until it ends)."""
    h = {"X-Sandbox-Token": sandbox["token"]}

    def there():
        if step is None and lesson_state(client, sandbox, "finished"):
            return True
        started = lesson_state(client, sandbox, "step_started")
        last = started[-1] if started else None
        if last is None or last["step"] == step or lesson_state(client, sandbox, "step_finished", last["step"]):
            return last is not None and last["step"] == step
        if last["detail"].get("stop"):
            client.post(f"/api/sandboxes/{sandbox['id']}/lesson/continue", headers=h)
        return False
    wait_until(there, 30, f"the lesson to reach {'its end' if step is None else f'step {step}'}")


def test_walkthrough_stops_at_every_narration_and_will_not_go_on_without_an_answer(client):
    sandbox = client.post("/api/lessons/controller_failover/walkthrough", json={}).get_json()
    h = {"X-Sandbox-Token": sandbox["token"]}
    wait_until(lambda: lesson_state(client, sandbox, "step_started", 1), 20, "the first narration")
    assert not lesson_state(client, sandbox, "step_started", 2)  # the lesson waits at its first narration
    stop_at(client, sandbox, 5)  # the question next_epoch
    url = f"/api/sandboxes/{sandbox['id']}/lesson"
    refused = client.post(f"{url}/continue", headers=h)
    assert refused.status_code == 409 and "answer the question first" in refused.get_json()["error"]
    assert client.post(f"{url}/answer", headers=h, json={"question": "x", "answer": "2"}).status_code == 409
    not_a_choice = client.post(f"{url}/answer", headers=h, json={"question": "next_epoch", "answer": "7"})
    assert not_a_choice.status_code == 400 and "not one of the choices" in not_a_choice.get_json()["error"]
    assert client.post(f"{url}/answer", headers=h, json={"question": "next_epoch", "answer": True}).status_code == 400
    ok = client.post(f"{url}/answer", headers=h, json={"question": "next_epoch", "answer": "3"})
    assert ok.status_code == 200 and ok.get_json()["counts"] == {"3": 1}
    assert client.post(f"{url}/continue", headers=h).status_code == 200
    stop_at(client, sandbox, 6)  # new_leader: "I'm not sure" is an answer too
    assert client.post(f"{url}/answer", headers=h, json={"question": "new_leader", "answer": "I'm not sure"}
                       ).status_code == 200
    # The question closed with Continue: answering it now is too late.
    assert client.post(f"{url}/answer", headers=h, json={"question": "next_epoch", "answer": "2"}).status_code == 409
    client.post(f"{url}/continue", headers=h)
    stop_at(client, sandbox)
    graded = {r["question"]: r for r in lesson_state(client, sandbox, "answered")}
    assert graded["next_epoch"]["answer"] == "3" and graded["next_epoch"]["correct"] is False
    assert graded["next_epoch"]["misconception"].startswith("One election, one increment")
    assert graded["next_epoch"]["detail"]["expected"] == "2" and "plus one" in graded["next_epoch"]["note"]
    assert graded["new_leader"]["answer"] == "I'm not sure" and "correct" not in graded["new_leader"]
    assert lesson_state(client, sandbox, "finished")[0]["detail"] == {"completed": True}
    # After the last step the cluster stays for free play.
    assert client.post(f"/api/sandboxes/{sandbox['id']}/faults", headers=h,
                       json={"op": "crash_broker", "broker": 1}).status_code == 200


def test_replay_from_a_stop_and_try_it_forks_free_play(client):
    sandbox = client.post("/api/lessons/controller_failover/walkthrough", json={}).get_json()
    h = {"X-Sandbox-Token": sandbox["token"]}
    stop_at(client, sandbox, 3)
    replay = client.post(f"/api/sandboxes/{sandbox['id']}/lesson/replay", headers=h, json={"step": 3})
    assert replay.status_code == 201
    rewound = replay.get_json()
    wait_until(lambda: lesson_state(client, rewound, "step_started", 3), 20, "the replayed lesson to reach stop 3")
    assert not lesson_state(client, rewound, "step_finished", 3)  # it waits there
    assert lesson_state(client, rewound, "step_finished", 1)  # the stops before were passed at once
    assert client.get(f"/api/sandboxes/{sandbox['id']}", headers=h).status_code == 404  # the old one is closed
    assert client.post(f"/api/sandboxes/{rewound['id']}/lesson/back", headers={"X-Sandbox-Token": rewound["token"]},
                       json={"step": 1}).status_code == 404  # Back is the page's own look back now
    tried = client.post(f"/api/sandboxes/{rewound['id']}/lesson/try", headers={"X-Sandbox-Token": rewound["token"]},
                        json={"step": 10}).get_json()
    wait_until(lambda: any(r["kind"] == "controller" and r.get("to_state") == "elected" and r.get("controller_epoch") == 2
                           for r in records(client, tried)), 20, "the copy to play up to step 10")
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
    for stop in (1, 3):  # the instructor continues through the narrations
        wait_until(lambda: lesson_state(client, sandbox, "step_started", stop), 20, f"the class lesson's stop {stop}")
        assert client.post(f"/api/classes/{room['id']}/continue", headers=ih).status_code == 200
    wait_until(lambda: lesson_state(client, sandbox, "step_started", 5), 20, "the class lesson's question")
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
    wait_until(lambda: lesson_state(client, sandbox, "step_started", 6), 20, "the class lesson's second question")
    # In a class the instructor decides when to go on: nobody has answered this one yet.
    assert client.post(f"/api/classes/{room['id']}/continue", headers=ih).status_code == 200
    wait_until(lambda: len(lesson_state(client, sandbox, "answered")) == 2, 30, "both answers graded")
    grades = {r["student"]: r["correct"] for r in lesson_state(client, sandbox, "answered")}
    assert sorted(grades.values()) == [False, True]
    # Everyone gets a private copy of the cluster.
    handout = client.post(f"/api/classes/{room['id']}/fork", headers=ih)
    assert handout.status_code == 202 and handout.get_json()["handout"]["total"] == 2
    for page, student in zip(pages, students):
        handed = wait_until(lambda: [m["args"][0] for m in page.get_received() if m["name"] == "private_sandbox"],
                            60, "the student's private copy")
        assert handed[-1]["class"] == room["id"]
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
