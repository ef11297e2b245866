"""One client cannot take every place or flood the clusters, and no replay log is readable
without the token of what it recorded — against the real server."""

from __future__ import annotations

import pytest

from tests.hardening.server import serve
from tests.support import wait_until


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    server = serve(tmp_path_factory.mktemp("shares"), MAX_SANDBOXES_PER_CLIENT="2", FAULTS_PER_SECOND="1",
                   FAULT_BURST="3")
    yield server
    server.stop()


@pytest.fixture(scope="module")
def two(served):
    boxes = []
    for _ in range(2):
        status, box, _ = served.call("POST", "/api/sandboxes", {"cluster": {"brokers": [0]}})
        assert status == 201, box
        boxes.append(box)
    return boxes


def test_a_client_gets_its_share_of_sandboxes_and_no_more(served, two):
    status, answer, _ = served.call("POST", "/api/sandboxes", {"cluster": {"brokers": [0]}})
    assert status == 429 and "at most 2" in answer["error"], answer


def test_faults_beyond_the_client_s_rate_are_refused_with_retry_after(served, two):
    box = two[0]
    headers = {"X-Sandbox-Token": box["token"]}
    answers = [served.call("POST", f"/api/sandboxes/{box['id']}/faults", {"op": "consume", "topic": "none",
                                                                         "partition": 0}, headers)
               for _ in range(6)]
    refused = [(status, body, got) for status, body, got in answers if status == 429]
    assert refused, [a[:2] for a in answers]
    status, body, got = refused[0]
    assert int(got["Retry-After"]) >= 1 and "too many actions" in body["error"]


def test_the_replay_list_shows_each_caller_only_their_own(served, two):
    mine, other = two
    wait_until(lambda: (served.data_dir / "replays" / f"{mine['id']}.jsonl").exists(), 10, "the sandbox's log")
    status, anonymous, _ = served.call("GET", "/api/replays")
    assert status == 200 and anonymous["replays"] == [], anonymous
    _, listed, _ = served.call("GET", "/api/replays", headers={"X-Replay-Tokens": mine["token"]})
    assert [e["session_id"] for e in listed["replays"]] == [mine["id"]]
    _, everything, _ = served.call("GET", "/api/replays", headers={"X-Instructor-Token": served.token})
    assert {mine["id"], other["id"]} <= {e["session_id"] for e in everything["replays"]}


@pytest.mark.parametrize("suffix", ["", "/records", "/entry"])
def test_every_replay_endpoint_needs_the_sandbox_s_token(served, two, suffix):
    mine, other = two
    path = f"/api/replays/{mine['id']}.jsonl{suffix}"
    assert served.call("GET", path)[0] == 404, "anonymous"
    assert served.call("GET", path, headers={"X-Sandbox-Token": other["token"]})[0] == 403, "another sandbox's token"
    assert served.call("GET", path, headers={"X-Sandbox-Token": mine["token"]})[0] == 200
    assert served.call("GET", path, headers={"X-Instructor-Token": served.token})[0] == 200


def test_import_needs_the_instructor_and_imports_are_kept_apart(served, two):
    raw = (served.data_dir / "replays" / f"{two[0]['id']}.jsonl").read_bytes()
    plain = served.call("POST", "/api/replays", raw=raw, headers={"Content-Type": "application/x-ndjson"})
    assert plain[0] == 415, "not JSON and none of the app's headers: a cross-site form could send it"
    status, answer, _ = served.call("POST", "/api/replays", raw=raw, headers={"Content-Type": "application/x-ndjson",
                                                                              "X-Kclab-Request": "1"})
    assert status == 403, answer
    status, answer, _ = served.call("POST", "/api/replays", raw=raw + b"\n",
                                    headers={"Content-Type": "application/x-ndjson", "X-Instructor-Token": served.token})
    assert status == 201 and answer["imported"], answer
    assert (served.data_dir / "imported-replays" / answer["name"]).is_file(), "statistics read replays/ only"
    assert served.call("GET", f"/api/replays/{answer['name']}", headers={"X-Sandbox-Token": two[0]["token"]})[0] == 403
