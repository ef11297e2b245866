"""The sandbox cap: from what the machine holds, overridable, and a refusal that says how many run
and when to retry; a class hand-out that closes each student's old copy before making the new one,
so a class larger than half the cap gets its second hand-out too."""

from __future__ import annotations

import pytest

from web.capacity import MB_PER_SANDBOX, RESERVED_MB, SANDBOXES_PER_CORE, capacity, default_capacity

INSTRUCTOR = "capacity-instructor-token"
CAP = 5


def test_the_default_cap_is_what_memory_and_cores_hold():
    by_cores = default_capacity(memory_mb=64 * 1024, cores=2)
    assert by_cores.sandboxes == 2 * SANDBOXES_PER_CORE and "the cores decide" in by_cores.why
    small = default_capacity(memory_mb=RESERVED_MB + 30 * MB_PER_SANDBOX, cores=8)
    assert small.sandboxes == 30 and "the memory decide" in small.why and "8 core(s)" in small.why
    assert default_capacity(memory_mb=512, cores=1).sandboxes >= 1  # never zero: the page still works
    assert capacity(None).sandboxes >= 4 and capacity(7).sandboxes == 7 and "--max-sandboxes" in capacity(7).why


@pytest.fixture(scope="module")
def app(zk_hosts, tmp_path_factory):
    from web.app import create_app
    app = create_app({"ZK_HOSTS": zk_hosts, "DATA_DIR": str(tmp_path_factory.mktemp("data")), "TESTING": True,
                      "INSTRUCTOR_TOKEN": INSTRUCTOR, "MAX_SANDBOXES": CAP})
    yield app
    app.extensions["kclab"].close()


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


def test_a_second_hand_out_to_a_class_larger_than_half_the_cap_works(app):
    client = app.test_client()
    ih = {"X-Instructor-Token": INSTRUCTOR}
    room = client.post("/api/classes", json={}, headers=ih).get_json()
    students = [client.post("/api/classes/join", json={"code": room["code"], "name": f"s{i}"}).get_json()
                for i in range(CAP - 2)]  # 3 students + the class demo: 4 places of 5; twice that would not fit
    demo = client.post(f"/api/classes/{room['id']}/session", json={"cluster": {"brokers": [0]}}, headers=ih)
    assert demo.status_code == 201
    first = client.post(f"/api/classes/{room['id']}/fork", headers=ih).get_json()["copies"]
    second = client.post(f"/api/classes/{room['id']}/fork", headers=ih).get_json()["copies"]
    assert all("sandbox" in c for c in first + second), second
    manager = app.extensions["kclab"].sandboxes
    live = {s.id for s in manager.all()}
    assert {c["sandbox"] for c in second} <= live and not {c["sandbox"] for c in first} & live  # old copies closed
    assert manager.places.running() == len(students) + 1
    described = client.get(f"/api/classes/{room['id']}", headers=ih).get_json()
    assert sorted(s["sandbox"] for s in described["students"]) == sorted(c["sandbox"] for c in second)
