"""A hand-out copies the class's cluster however long the class has run: its copies replay every
fault the class session applied, even once the session's bus no longer keeps their records
(it keeps the newest ``RECORD_HISTORY``); past the most a copy replays, the instructor is told
to start a new session rather than handed copies of a different cluster (issue 14)."""

from __future__ import annotations

from tests.support import wait_until

INSTRUCTOR = "long-session-instructor-token"
IH = {"X-Instructor-Token": INSTRUCTOR}
HISTORY = 30

# tests/web/conftest.py's app: a bus that keeps few records, and faults as fast as the test sends them
APP_CONFIG = {"INSTRUCTOR_TOKEN": INSTRUCTOR, "MAX_SANDBOXES": 4, "RECORD_HISTORY": HISTORY,
              "FAULTS_PER_SECOND": 1000, "FAULT_BURST": 1000}


def test_a_copy_replays_faults_older_than_the_records_the_session_keeps(app):
    client, manager = app.test_client(), app.extensions["kclab"].sandboxes
    room = client.post("/api/classes", json={}, headers=IH).get_json()
    client.post("/api/classes/join", json={"code": room["code"], "name": "Grace"})
    session = client.post(f"/api/classes/{room['id']}/session", json={"cluster": {"brokers": [0, 1, 2]}},
                          headers=IH).get_json()
    faults = f"/api/sandboxes/{session['id']}/faults"
    sh = {"X-Sandbox-Token": session["token"]}
    assert client.post(faults, headers=sh, json={"op": "shutdown_broker", "broker": 2}).status_code == 200
    # Refused faults make records too (and are not replayed): enough to push the shutdown's out.
    for _ in range(HISTORY):
        assert client.post(faults, headers=sh, json={"op": "shutdown_broker", "broker": 2}).status_code == 409
    kept = client.get(f"/api/sandboxes/{session['id']}/records?since=0", headers=sh).get_json()["records"]
    assert not any(r["kind"] == "fault" and r["to_state"] == "applied" for r in kept)  # the shutdown's is gone

    assert client.post(f"/api/classes/{room['id']}/fork", headers=IH).status_code == 202
    done = wait_until(lambda: (lambda h: h if h["status"] == "done" else None)(
        client.get(f"/api/classes/{room['id']}/handout", headers=IH).get_json()), 60, "the hand-out")
    assert (done["built"], done["failed"]) == (1, [])
    [student] = client.get(f"/api/classes/{room['id']}", headers=IH).get_json()["students"]
    copy = manager.get(student["sandbox"])
    replayed = [(r.op, r.detail["args"]) for r in copy.bus.since(0) if r.kind == "fault" and r.to_state == "applied"]
    assert replayed == [("shutdown_broker", {"broker": 2})]
    assert copy.view["brokers"]["2"]["state"] == "stopped"  # the class's cluster, not a fresh one

    # Past the most a copy replays: the instructor is told why and what to do.
    manager.get(session["id"]).applied.limit = 1
    assert client.post(faults, headers=sh, json={"op": "shutdown_broker", "broker": 1}).status_code == 200
    refused = client.post(f"/api/classes/{room['id']}/fork", headers=IH)
    assert refused.status_code == 409
    assert "applied 2 faults" in refused.get_json()["error"] and "new class session" in refused.get_json()["error"]
