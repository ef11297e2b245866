"""What the lesson and class pages need from the server beyond tests/web/test_teaching.py: the
pages themselves; a student's page fetching the class session's records (it holds no sandbox
token); acting on the class cluster — the instructor may, a student is refused with the reason;
a reloading page's catch-up (the lesson's place in the snapshot, the student's private copy,
the open question's tally)."""

from __future__ import annotations

from backend.lessons.loader import LESSONS_DIR, load_lesson
from tests.support import wait_until

INSTRUCTOR = "teacher-secret"
IH = {"X-Instructor-Token": INSTRUCTOR}


APP_CONFIG = {"INSTRUCTOR_TOKEN": INSTRUCTOR}  # tests/web/conftest.py's app (six places)


def open_class(client, students=1):
    room = client.post("/api/classes", json={"instructor": "Ada"}, headers=IH).get_json()
    joined = [client.post("/api/classes/join", json={"code": room["code"], "name": f"s{n}"}).get_json()
              for n in range(students)]
    return room, joined


def test_the_pages(client):
    lessons = client.get("/lessons")
    assert lessons.status_code == 200 and b'id="lesson-list"' in lessons.data
    for path in ("/join", "/instructor"):
        page = client.get(path)
        assert page.status_code == 200 and b'<body id="app"' in page.data, path


def test_a_student_watches_the_class_cluster_and_cannot_act_on_it(app, client):
    room, [student] = open_class(client)
    sh = {"X-Student-Token": student["token"]}
    assert client.get(f"/api/classes/{room['id']}/records?since=0", headers=sh).status_code == 409  # no session yet
    session = client.post(f"/api/classes/{room['id']}/session", json={}, headers=IH).get_json()
    wait_until(lambda: client.get(f"/api/classes/{room['id']}/records?since=0&session={session['id']}",
                                  headers=sh).get_json()["records"], 20, "the demo's first records")
    page = client.get(f"/api/classes/{room['id']}/records?since=0&limit=5", headers=sh).get_json()
    assert [r["seq"] for r in page["records"]] == [0, 1, 2, 3, 4] and page["next"] == 5
    assert client.get(f"/api/classes/{room['id']}/records?since=0", headers={"X-Student-Token": "x"}).status_code == 403
    stale = client.get(f"/api/classes/{room['id']}/records?since=0&session=old", headers=sh)
    assert stale.status_code == 409 and session["id"] in stale.get_json()["error"]

    refused = client.post(f"/api/classes/{room['id']}/faults", headers=sh, json={"op": "crash_broker", "broker": 1})
    assert refused.status_code == 403 and "only the instructor" in refused.get_json()["error"]
    socketio = app.extensions["kclab"].socketio
    page = socketio.test_client(app, flask_test_client=app.test_client())
    try:
        joined = page.emit("join_class", {"class": room["id"], "token": student["token"]}, callback=True)
        assert joined["ok"] and joined["student"] == {"id": student["student"]["id"], "name": "s0", "sandbox": None,
                                                      "sandbox_token": None, "copy_error": None}
        assert joined["snapshot"]["view"]["lesson"] is None  # a free demo
        forced = page.emit("class_fault", {"class": room["id"], "token": student["token"], "op": "crash_broker",
                                           "broker": 1}, callback=True)
        assert forced["ok"] is False and forced["status"] == 403 and "only the instructor" in forced["error"]
        done = client.post(f"/api/classes/{room['id']}/faults", headers=IH, json={"op": "crash_broker", "broker": 1})
        assert done.status_code == 200 and done.get_json()["ok"], done.get_json()

        # After the fork, a page that reloads finds the student's private copy in the join's answer.
        assert client.post(f"/api/classes/{room['id']}/fork", headers=IH).status_code == 202
        copy = wait_until(lambda: next((m["args"][0] for m in page.get_received() if m["name"] == "private_sandbox"),
                                       None), 60, "the student's private copy")
        again = page.emit("join_class", {"class": room["id"], "token": student["token"]}, callback=True)
        assert again["student"]["sandbox"] == copy["sandbox"] and again["student"]["sandbox_token"] == copy["token"]
    finally:
        page.disconnect()


def test_a_late_joiner_sees_the_lesson_where_it_is_and_the_instructor_the_tally(app, client):
    room, [early, late] = open_class(client, students=2)
    session = client.post(f"/api/classes/{room['id']}/session", json={"lesson": "controller_failover"},
                          headers=IH).get_json()
    sandbox = {"X-Sandbox-Token": session["token"]}

    def waiting():
        return client.get(f"/api/sandboxes/{session['id']}/snapshot", headers=sandbox).get_json()["view"]["lesson"]
    question = next(s.index for s in load_lesson(LESSONS_DIR / "controller_failover.yaml").steps if s.op == "predict")

    def continue_to(step):
        def there():
            lesson = waiting() or {}
            if lesson.get("status") == "waiting" and lesson.get("step") != step:
                client.post(f"/api/classes/{room['id']}/continue", headers=IH)
            return lesson.get("status") == "waiting" and lesson.get("step") == step
        wait_until(there, 30, f"the class lesson to wait at step {step}")
    continue_to(question)
    socketio = app.extensions["kclab"].socketio
    page = socketio.test_client(app, flask_test_client=app.test_client())
    try:
        assert page.emit("class_answer", {"class": room["id"], "token": early["token"], "question": "next_epoch",
                                          "answer": "2"}, callback=True)["ok"]
        tally = client.get(f"/api/classes/{room['id']}", headers=IH).get_json()["answers"]
        assert tally == {"question": "next_epoch", "counts": {"2": 1}}
        joined = page.emit("join_class", {"class": room["id"], "token": late["token"]}, callback=True)
        lesson = joined["snapshot"]["view"]["lesson"]
        assert lesson["id"] == "controller_failover" and lesson["status"] == "waiting" and lesson["step"] == question
        assert lesson["question"]["id"] == "next_epoch" and lesson["question"]["choices"] == ["1", "2", "3"]
        assert lesson["say"]["text"].startswith("Broker 0 is also the **leader**")  # the last stop's narration
        assert lesson["highlight"]["targets"] == ["partition:orders-0", "broker:0"]
        assert [s["step"] for s in lesson["stops"]] == [1, 3, question]  # every stop so far, for Back
    finally:
        page.disconnect()
    continue_to(question + 1)
    # The next question's tally replaces it on the instructor's chart (it stays after Continue, too).
    assert client.get(f"/api/classes/{room['id']}", headers=IH).get_json()["answers"] == {"question": "new_leader",
                                                                                          "counts": {}}

    def finished():
        lesson = waiting()
        if lesson["status"] == "waiting":
            client.post(f"/api/classes/{room['id']}/continue", headers=IH)
        return lesson["status"] == "finished"
    wait_until(finished, 60, "the class lesson to finish")
    graded = waiting()["answers"]
    assert [(a["student"], a["answer"], a["correct"]) for a in graded] == [(early["student"]["id"], "2", True)]
