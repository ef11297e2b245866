"""A flooding sandbox slows only itself: its faults queue behind one another (a bounded queue, then
429s) while another sandbox's fault goes through at once, and its backlog of records leaves the
broadcaster in bounded batches, behind every other sandbox that waits. Asserted on the mechanisms
and their outcomes, never on timings."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from tests.support import wait_until
from tests.web.sent_emits import SentEmits
from web.broadcast import Broadcaster
from web.fairness import MAX_BATCH, MAX_WAITING

SMALL = {"cluster": {"brokers": [0, 1]}}


# tests/web/conftest.py's app, without its own broadcaster, so that the test's decides what each round sends
APP_CONFIG = {"MAX_SANDBOXES": 6, "START_BROADCASTER": False, "FAULTS_PER_SECOND": 0}


def _new(client) -> dict:
    response = client.post("/api/sandboxes", json=SMALL)
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def _fault(client, sandbox, op="crash_broker"):
    return client.post(f"/api/sandboxes/{sandbox['id']}/faults", json={"op": op, "broker": 1},
                       headers={"X-Sandbox-Token": sandbox["token"]})


def test_a_flood_of_faults_queues_in_its_own_sandbox_and_the_others_go_on(app):
    client = app.test_client()
    flooding, quiet = _new(client), _new(client)
    manager = app.extensions["kclab"].sandboxes
    queue = manager.get(flooding["id"]).faults
    flood = 12
    pool = ThreadPoolExecutor(flood)
    try:
        with queue._turn:  # the flooding sandbox's current fault, still being carried out
            answers = [pool.submit(_fault, app.test_client(), flooding) for _ in range(flood)]
            wait_until(lambda: queue.queued == MAX_WAITING + 1 and queue.refused == flood - MAX_WAITING - 1,
                       30, "the flood queued and refused")
            # Meanwhile another student's fault is not held up by the flood.
            other = _fault(client, quiet)
            assert other.status_code == 200, other.get_json()
            refused = [a.result() for a in answers if a.done()]
            assert len(refused) == flood - MAX_WAITING - 1
            assert all(r.status_code == 429 and r.headers["Retry-After"] == "1" for r in refused)
            assert "at most 3 at a time" in refused[0].get_json()["error"]
        statuses = sorted(a.result(timeout=60).status_code for a in answers)
        assert statuses.count(429) == flood - MAX_WAITING - 1  # the queued ones were carried out in turn
        assert len([s for s in statuses if s in (200, 409)]) == MAX_WAITING + 1
    finally:
        pool.shutdown(wait=False)
        for sandbox in (flooding, quiet):
            manager.close(sandbox["id"])


def test_a_backlog_goes_out_in_bounded_batches_behind_the_others(app):
    client = app.test_client()
    manager = app.extensions["kclab"].sandboxes
    flooding, quiet = (manager.get(_new(client)["id"]) for _ in range(2))
    sent = SentEmits()
    broadcaster = Broadcaster(sent, manager)
    try:
        for sandbox in (flooding, quiet):
            assert sandbox.cluster.wait_stable(10)
            sandbox.drain(10**6)  # what starting them emitted
        flooding.pending.extend({"seq": n} for n in range(3 * MAX_BATCH + 7))  # a produce storm's records
        quiet.pending.append({"seq": 1})
        flooding.last_broadcast, quiet.last_broadcast = 1.0, 2.0  # both due; the flood was served longest ago
        broadcaster.flush()
        assert sent.batches() == [(flooding.id, MAX_BATCH), (quiet.id, 1)]
        # Next round: the flood has just been served, so the quiet sandbox's new record goes first.
        quiet.pending.append({"seq": 2})
        flooding.last_broadcast, quiet.last_broadcast = 2.0, 1.0
        sent.emits.clear()
        broadcaster.flush()
        assert sent.batches() == [(quiet.id, 1), (flooding.id, MAX_BATCH)]
        assert [r["seq"] for r in flooding.pending] == list(range(2 * MAX_BATCH, 3 * MAX_BATCH + 7))  # nothing lost
    finally:
        broadcaster.stop()
        for sandbox in (flooding, quiet):
            manager.close(sandbox.id)
