"""The Socket.IO protocol with Flask-SocketIO's test client (in its own app instance: the test
client rewires the server it is attached to)."""

from __future__ import annotations

from backend.view import page
from tests.support import wait_until
from web.broadcast import room


def connect(app):
    socketio = app.extensions["kclab"].socketio
    return socketio.test_client(app, flask_test_client=app.test_client())


def received_records(client, sandbox_id):
    out = []
    for message in client.get_received():
        if message["name"] == "records":
            payload = message["args"][0]
            assert payload["sandbox"] == sandbox_id
            out += payload["records"]
    return out


def test_join_snapshot_then_every_record_after_it(app, sandbox):
    client = connect(app)
    refused = client.emit("join", {"sandbox": sandbox["id"], "token": "wrong"}, callback=True)
    assert refused["ok"] is False and refused["status"] == 403
    missing = client.emit("join", {"sandbox": "nope", "token": "x"}, callback=True)
    assert missing["status"] == 404

    joined = client.emit("join", {"sandbox": sandbox["id"], "token": sandbox["token"]}, callback=True)
    assert joined["ok"] and joined["snapshot"]["view"]["controller"]["id"] == 0
    view, seen = joined["snapshot"]["view"], []

    ack = client.emit("fault", {"sandbox": sandbox["id"], "token": sandbox["token"], "op": "stop_broker",
                                "broker": 0}, callback=True)
    assert ack["ok"], ack

    def new_controller():
        seen.extend(received_records(client, sandbox["id"]))
        folded = page.fold(sorted({r["seq"]: r for r in seen}.values(), key=lambda r: r["seq"]), view)
        return folded if folded["controller"] and folded["controller"]["epoch"] == 2 else None

    folded = wait_until(new_controller, 15, "the page to see a new controller with epoch 2")
    assert folded["controller"]["id"] in (1, 2) and folded["brokers"]["0"]["state"] == "stopped"
    seqs = sorted({r["seq"] for r in seen})
    assert seqs == list(range(view["seq"] + 1, seqs[-1] + 1)), "a record was lost between snapshot and batches"
    # What the page folded equals what the server folded, record for record.
    server = app.extensions["kclab"].sandboxes.get(sandbox["id"]).snapshot()

    def caught_up():
        seen.extend(received_records(client, sandbox["id"]))
        return max(r["seq"] for r in seen) >= server["seq"]
    wait_until(caught_up, 10, "the page to receive every record up to the server's snapshot")
    mine = sorted({r["seq"]: r for r in seen if r["seq"] <= server["seq"]}.values(), key=lambda r: r["seq"])
    assert page.fold(mine, view) == server["view"]
    client.disconnect()


def test_errors_come_back_in_the_ack_and_the_connection_lives(app, sandbox):
    client = connect(app)
    creds = {"sandbox": sandbox["id"], "token": sandbox["token"]}
    assert client.emit("fault", {**creds, "op": "crash_broker", "broker": 42}, callback=True)["status"] == 409
    assert client.emit("fault", {**creds, "op": "nonsense"}, callback=True)["status"] == 400
    assert client.emit("fault", "not an object", callback=True)["status"] == 404
    assert client.emit("records_since", {**creds, "since": 0, "limit": 3}, callback=True)["records"][2]["seq"] == 2
    assert client.is_connected()
    client.disconnect()


def test_a_watched_sandbox_is_not_reclaimed_but_an_idle_one_is(app):
    manager = app.extensions["kclab"].sandboxes
    created = app.test_client().post("/api/sandboxes", json={"cluster": {"brokers": [0], "topics": {}}}).get_json()
    client = connect(app)
    client.emit("join", {"sandbox": created["id"], "token": created["token"]}, callback=True)
    sandbox = manager.get(created["id"])
    assert sandbox.watchers == 1
    assert created["id"] not in manager.reap_idle(now=sandbox.last_active + 10 ** 6)
    client.disconnect()
    assert sandbox.watchers == 0
    assert manager.reap_idle(now=sandbox.last_active + manager.idle_seconds + 1) == [created["id"]]
    assert manager.get(created["id"]) is None


def fresh_sandbox(app) -> dict:
    response = app.test_client().post("/api/sandboxes", json={"cluster": {"brokers": [0]}})
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def test_an_unexpected_error_in_a_handler_is_answered_500_and_the_socket_lives_on(app, monkeypatch):
    from web import service

    sandbox = fresh_sandbox(app)
    client = connect(app)

    def broken(*_args, **_kwargs):
        raise RuntimeError("a bug nobody foresaw")

    monkeypatch.setattr(service, "records_since", broken)
    answer = client.emit("records_since", {"sandbox": sandbox["id"], "token": sandbox["token"], "since": 0},
                         callback=True)
    assert answer == {"ok": False, "status": 500, "error": "the server failed: RuntimeError"}
    monkeypatch.undo()
    again = client.emit("join", {"sandbox": sandbox["id"], "token": sandbox["token"]}, callback=True)
    assert again["ok"], "the same connection still answers"


def test_a_failing_broadcast_round_is_logged_and_the_broadcaster_goes_on(app, monkeypatch, caplog):
    sandbox = fresh_sandbox(app)
    broadcaster = app.extensions["kclab"].broadcaster
    manager = app.extensions["kclab"].sandboxes
    calls = {"n": 0}
    real_all = manager.all

    def flaky():
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("one bad round")
        return real_all()

    monkeypatch.setattr(manager, "all", flaky)
    client = connect(app)
    client.emit("join", {"sandbox": sandbox["id"], "token": sandbox["token"]}, callback=True)
    client.get_received()
    broadcaster._wake.set()
    wait_until(lambda: calls["n"] >= 1, 10, "the broadcaster to run a round")
    ack = client.emit("fault", {"sandbox": sandbox["id"], "token": sandbox["token"], "op": "crash_broker",
                                "broker": 0}, callback=True)
    assert ack["ok"], ack
    wait_until(lambda: received_records(client, sandbox["id"]), 10, "records after the failed round")
    assert "one bad round" in caplog.text


def test_a_join_catch_up_goes_to_the_joining_socket_alone(app, monkeypatch):
    """Records made between a page's snapshot and its first batch come as its catch-up: to that
    socket only (not the room), and not through the message queue — the socket is this worker's,
    so another worker has nothing to deliver. A catch-up is a race in real use (the view folds each
    record as it is made), so the snapshot is made three records old here."""
    sandbox = app.test_client().post("/api/sandboxes", json={"cluster": {"brokers": [0], "topics": {}}}).get_json()
    other = connect(app)
    assert other.emit("join", {"sandbox": sandbox["id"], "token": sandbox["token"]}, callback=True)["ok"]
    other.get_received()
    held = app.extensions["kclab"].sandboxes.get(sandbox["id"])
    real = held.snapshot()
    monkeypatch.setattr(held, "snapshot", lambda: {**real, "seq": real["seq"] - 3})
    manager, emits = app.extensions["kclab"].socketio.server.manager, []
    manager_emit = manager.emit
    monkeypatch.setattr(manager, "emit", lambda *a, **k: emits.append(k) or manager_emit(*a, **k))
    client = connect(app)
    joined = client.emit("join", {"sandbox": sandbox["id"], "token": sandbox["token"]}, callback=True)
    assert joined["ok"] and joined["snapshot"]["seq"] == real["seq"] - 3
    assert [r["seq"] for r in received_records(client, sandbox["id"])] == [real["seq"] - 2, real["seq"] - 1, real["seq"]]
    assert [k["ignore_queue"] for k in emits if k.get("room") != room(sandbox["id"])] == [True]
    assert not [r for r in received_records(other, sandbox["id"]) if r["seq"] <= real["seq"]]
    client.disconnect()
    other.disconnect()
    app.test_client().delete(f"/api/sandboxes/{sandbox['id']}", headers={"X-Sandbox-Token": sandbox["token"]})
