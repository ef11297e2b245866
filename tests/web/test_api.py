"""The HTTP JSON API, including every kind of bad input: a clear 4xx with a reason, never a
crash, never an effect on another sandbox."""

from __future__ import annotations

import re

import jsonschema

from tests.support import wait_until


def headers(sandbox):
    return {"X-Sandbox-Token": sandbox["token"]}


def test_create_and_describe(client, sandbox):
    assert sandbox["cluster"]["brokers"] == [0, 1, 2]
    assert sandbox["cluster"]["topics"] == {"t": {"partitions": 3, "replication_factor": 3}}
    assert sandbox["cluster"]["chroot"] == f"/kclab/{sandbox['id']}"
    described = client.get(f"/api/sandboxes/{sandbox['id']}", headers=headers(sandbox)).get_json()
    assert described["status"] == "running" and "token" not in described


def test_snapshot_is_the_view_and_records_follow_it(client, sandbox):
    snapshot = client.get(f"/api/sandboxes/{sandbox['id']}/snapshot", headers=headers(sandbox)).get_json()
    view = snapshot["view"]
    assert view["controller"]["id"] == 0 and view["controller"]["epoch"] == 1
    assert {k: b["state"] for k, b in view["brokers"].items()} == {"0": "alive", "1": "alive", "2": "alive"}
    assert set(view["partitions"]) == {"t-0", "t-1", "t-2"}
    page = client.get(f"/api/sandboxes/{sandbox['id']}/records?since=0&limit=10", headers=headers(sandbox)).get_json()
    assert [r["seq"] for r in page["records"]] == list(range(10)) and page["next"] == 10


def test_metrics_come_as_json_and_in_prometheus_text_format(client, sandbox):
    url = f"/api/sandboxes/{sandbox['id']}/metrics"
    metrics = client.get(url, headers=headers(sandbox)).get_json()
    assert metrics["ActiveControllerCount"] == 1
    assert metrics["brokers"]["0"]["ActiveControllerCount"] == 1 and metrics["brokers"]["1"]["GlobalTopicCount"] == 0
    text = client.get(url, headers={**headers(sandbox), "Accept": "text/plain"})
    assert text.mimetype == "text/plain"
    body = text.get_data(as_text=True)
    assert 'kafka_controller_kafkacontroller_activecontrollercount{broker="0"} 1' in body
    assert "kafka_controller_activecontrollercount_sum 1" in body
    assert client.get(url).status_code in (401, 403)  # a sandbox's metrics are its owner's


def test_a_fault_applies_and_its_effect_is_visible(client, sandbox):
    response = client.post(f"/api/sandboxes/{sandbox['id']}/faults", headers=headers(sandbox),
                           json={"op": "crash_broker", "broker": 2})
    assert response.status_code == 200 and response.get_json()["ok"]
    # Its session has not expired yet (4 s): a restart fails as Kafka's does, a 409 with the reason.
    restart = client.post(f"/api/sandboxes/{sandbox['id']}/faults", headers=headers(sandbox),
                          json={"op": "start_broker", "broker": 2})
    if restart.status_code != 200:  # 200 only if this machine was slower than the session timeout
        assert restart.status_code == 409 and "NodeExistsException" in restart.get_json()["error"], restart.get_json()

    def broker_2():
        view = client.get(f"/api/sandboxes/{sandbox['id']}/snapshot", headers=headers(sandbox)).get_json()["view"]
        return view["brokers"]["2"]["state"] == "crashed" and all(2 not in p["isr"] for p in view["partitions"].values())
    if restart.status_code != 200:
        wait_until(broker_2, 15, "broker 2's session to expire and the controller to take it out of every ISR")


def test_bad_inputs_get_a_reason_and_a_4xx(client, sandbox, app):
    sid, h = sandbox["id"], headers(sandbox)
    cases = [
        (client.post(f"/api/sandboxes/{sid}/faults", headers=h, json={"op": "crash_broker", "broker": 9}),
         409, "there is no broker 9"),
        (client.post(f"/api/sandboxes/{sid}/faults", headers=h, json={"op": "start_broker", "broker": 0}),
         409, "broker 0 is running"),
        (client.post(f"/api/sandboxes/{sid}/faults", headers=h, json={"op": "crash_brokr", "broker": 1}),
         400, "did you mean crash_broker"),
        (client.post(f"/api/sandboxes/{sid}/faults", headers=h, json={"op": "crash_broker"}),
         400, "broker"),
        (client.post(f"/api/sandboxes/{sid}/faults", headers=h, json={"op": "wait_ms", "ms": 5}),
         400, "script step"),
        (client.post(f"/api/sandboxes/{sid}/faults", headers=h, json=[1, 2]), 400, "JSON object"),
        (client.post(f"/api/sandboxes/{sid}/faults", headers=h, data="{not json", content_type="application/json"),
         400, "not valid JSON"),
        (client.post(f"/api/sandboxes/{sid}/faults", headers=h, data="x" * 70000, content_type="application/json"),
         413, "too large"),
        (client.post(f"/api/sandboxes/{sid}/faults", json={"op": "crash_broker", "broker": 1}),
         403, "belongs to someone else"),
        (client.post(f"/api/sandboxes/{sid}/faults", headers={"X-Sandbox-Token": "guess"},
                     json={"op": "crash_broker", "broker": 1}), 403, "belongs to someone else"),
        (client.get("/api/sandboxes/nope/snapshot", headers=h), 404, "no sandbox 'nope'"),
        (client.get(f"/api/sandboxes/{sid}/records?since=-3", headers=h), 400, "since must not be negative"),
        (client.post("/api/sandboxes", json={"cluster": {"brokers": [0, 1, 2, 3, 4, 5, 6, 7]}}), 400, "7"),
        (client.post("/api/sandboxes", json={"cluster": {"brokers": [0], "topics": {"t": {"partitions": 1,
                                                                                       "replication_factor": 3}}}}),
         400, "replication"),
        (client.post("/api/sandboxes", json={"colour": "red"}), 400, "unknown field(s) colour"),
        (client.get("/api/nothing-here"), 404, "no such API endpoint"),
    ]
    for response, status, reason in cases:
        body = response.get_json()
        assert response.status_code == status, (status, reason, body)
        assert reason in body["error"], (reason, body)
    # Nothing happened to the cluster: broker 1 is still alive.
    view = client.get(f"/api/sandboxes/{sid}/snapshot", headers=h).get_json()["view"]
    assert view["brokers"]["1"]["state"] == "alive"


def test_one_users_mistake_never_touches_another_sandbox(client, sandbox):
    other = client.post("/api/sandboxes", json={"cluster": {"brokers": [0, 1], "topics": {}}}).get_json()
    before = client.get(f"/api/sandboxes/{other['id']}/snapshot", headers=headers(other)).get_json()["seq"]
    client.post(f"/api/sandboxes/{sandbox['id']}/faults", headers=headers(sandbox),
                json={"op": "crash_broker", "broker": 77})
    client.post(f"/api/sandboxes/{other['id']}/faults", headers=headers(sandbox),  # the wrong token
                json={"op": "crash_broker", "broker": 0})
    after = client.get(f"/api/sandboxes/{other['id']}/snapshot", headers=headers(other)).get_json()
    assert after["seq"] == before and after["view"]["brokers"]["0"]["state"] == "alive"
    assert client.delete(f"/api/sandboxes/{other['id']}", headers=headers(other)).status_code == 204
    assert client.get(f"/api/sandboxes/{other['id']}", headers=headers(other)).status_code == 404


def test_openapi_describes_the_faults_the_server_accepts(client):
    document = client.get("/api/openapi.json").get_json()
    assert document["openapi"].startswith("3.1")
    assert set(document["paths"]) >= {"/api/sandboxes", "/api/sandboxes/{sandbox_id}/faults"}
    fault_schema = document["components"]["schemas"]["Fault"]
    jsonschema.validate({"op": "crash_broker", "broker": 1}, fault_schema)
    try:
        jsonschema.validate({"op": "crash_broker"}, fault_schema)
        raise AssertionError("a fault without its broker must not validate")
    except jsonschema.ValidationError:
        pass
    ops = {op["name"] for op in client.get("/api/vocabulary").get_json()["ops"]}
    assert {"crash_broker", "pause_broker", "reassign_partitions", "wait_stable"} <= ops


def test_assets_come_from_our_own_origin(client):
    for path in ("/vendor/d3.mjs", "/vendor/socket.io.mjs", "/vendor/plotly.min.js"):
        response = client.get(path)
        assert response.status_code == 200 and len(response.data) > 10000, path
        assert "javascript" in response.content_type
    assert client.get("/vendor/jquery.js").status_code == 404


def test_openapi_documents_every_api_route_and_method_the_app_serves(app, client):
    """The document cannot fall behind the code: every /api/ rule of the app (and /healthz), with
    each of its methods, is a path of /api/openapi.json (Flask's <x> written as OpenAPI's {x})."""
    document = client.get("/api/openapi.json").get_json()
    served = set()
    for rule in app.url_map.iter_rules():
        if rule.rule.startswith("/api/") or rule.rule == "/healthz":
            path = re.sub(r"<(?:[a-z]+:)?([a-z_]+)>", r"{\1}", rule.rule)
            served |= {(path, method.lower()) for method in rule.methods - {"HEAD", "OPTIONS"}}
    documented = {(path, method) for path, item in document["paths"].items() for method in item
                  if method in ("get", "post", "put", "delete", "patch")}
    assert served - documented == set(), "undocumented routes"
    assert documented - served == set(), "documented routes the app does not serve"
