"""A three-server ensemble loses one server: the page notices no more than a record. Brokers
connected to that server reconnect to another within their session timeout (kazoo tries each
server), their sessions — and /brokers/ids — survive, the controller stays, and the app's
/healthz is back to ok by itself."""

from __future__ import annotations

import pytest

from backend.zkserver.ensemble import ZooKeeperEnsemble
from tests.support import running_app, wait_until


@pytest.fixture(scope="module")
def ensemble():
    with ZooKeeperEnsemble(3, force_sync=False) as servers:
        yield servers


def test_losing_one_server_of_three_is_a_record_not_an_outage(ensemble, tmp_path):
    victim = None
    with running_app(ensemble.hosts, tmp_path, ZK_CONTROL=ensemble) as app:
        client = app.test_client()
        try:
            box = client.post("/api/sandboxes", json={}).get_json()
            headers = {"X-Sandbox-Token": box["token"]}
            sandbox = app.extensions["kclab"].sandboxes.get(box["id"])
            before = client.get(f"/api/sandboxes/{box['id']}/snapshot", headers=headers).get_json()["view"]
            # The server most of the brokers talk to: the one whose loss they must ride out.
            sessions = [b.session_id for b in sandbox.cluster.brokers.values()]
            on = {n: sum(f"sid={sid}" in s.four_letter_word("cons") for sid in sessions)
                  for n, s in ensemble.servers.items()}
            victim = max(on, key=on.get)
            assert on[victim] >= 1, on
            ensemble.stop_server(victim)

            def reconnected():
                records = client.get(f"/api/sandboxes/{box['id']}/records?since=0",
                                     headers=headers).get_json()["records"]
                brokers = [r for r in records if r["kind"] == "broker"]
                return [r["to_state"] for r in brokers].count("zk_reconnected") >= on[victim] and brokers
            brokers = wait_until(reconnected, 30, "the brokers of the stopped server to reconnect elsewhere")
            states = [r["to_state"] for r in brokers]
            assert "session_lost" not in states and "zk_disconnected" in states
            # ZooKeeper's server went away, the lab's server was on time: no record blames the lab.
            assert not any((r.get("detail") or {}).get("cause") == "lab_server_late" for r in brokers), brokers
            wait_until(lambda: client.get("/healthz").status_code == 200, 30, "/healthz ok again")
            after = client.get(f"/api/sandboxes/{box['id']}/snapshot", headers=headers).get_json()["view"]
            assert after["controller"] == before["controller"], "no new controller: nobody lost a session"
            assert all(b["registered"] for b in after["brokers"].values())
            assert client.post(f"/api/sandboxes/{box['id']}/faults", headers=headers,
                               json={"op": "crash_broker", "broker": 2}).status_code == 200
        finally:
            if victim is not None and not ensemble.servers[victim].running:
                ensemble.start_server(victim)
