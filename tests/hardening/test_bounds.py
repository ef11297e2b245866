"""Bodies built to exhaust the server are refused at once with a 400 and a reason, and the
worker's memory does not grow: the probes of issue 11, against the real server (gunicorn, the
embedded ZooKeeper). Memory is the worker's RSS before and after (never a time)."""

from __future__ import annotations

import json

import pytest

from backend.lessons.loader import LESSONS_DIR

BIG = 9223372036854775808  # 2**63: the partitions that took the worker to 19.9 GB
ALIAS_BOMB = "a: &a [x,x,x,x,x,x,x,x,x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{','.join([f'*{chr(97 + i)}'] * 9)}]\n" for i in range(8))
MB = 1024


def sandbox_body(**topic):
    return {"cluster": {"brokers": [0], "topics": {"t": {"partitions": 1, "replication_factor": 1, **topic}}}}


BOMBS = [
    ("POST", "/api/sandboxes", sandbox_body(partitions=BIG), "partitions"),
    ("POST", "/api/sandboxes", sandbox_body(partitions=10_000), "partitions"),
    ("POST", "/api/sandboxes", {"cluster": {"brokers": [0], "topics": {f"t{i}": {"partitions": 100}
                                                                        for i in range(3)}}}, "partitions"),
    ("POST", "/api/sandboxes", {"cluster": {"brokers": list(range(8))}}, "brokers"),
    ("POST", "/api/sandboxes", {"cluster": {"brokers": [0], "config": {"zookeeper.session.timeout.ms": 0}}},
     "at least 1000"),
    ("POST", "/api/sandboxes", {"cluster": {"brokers": [0], "config": {"zookeeper.session.timeout.ms": 2 ** 40}}},
     "at most 60000"),
    ("POST", "/api/sandboxes", {"cluster": "t"}, "cluster must be an object"),
    ("POST", "/api/sandboxes", {"cluster": 7}, "cluster must be an object"),
    ("POST", "/api/sandboxes", {"cluster": [1]}, "cluster must be an object"),
    ("POST", "/api/sandboxes", [1, 2], "JSON object"),
    ("POST", "/api/lessons/check", {"text": ALIAS_BOMB}, None),
    ("POST", "/api/lessons/check", {"text": "a: " + "[" * 3000 + "]" * 3000}, None),
    ("POST", "/api/lessons/check", [1], "JSON object"),
    ("POST", "/api/classes/join", ["x"], "JSON object"),
    ("POST", "/api/classes", ["x"], "JSON object"),
    ("POST", "/api/instructor/lessons", ["x"], "JSON object"),
]


@pytest.mark.parametrize("method,path,body,reason", BOMBS, ids=[f"{p}-{i}" for i, (_, p, _, _) in enumerate(BOMBS)])
def test_a_bomb_is_refused_with_a_reason(served, method, path, body, reason):
    status, answer, _ = served.call(method, path, body, {"X-Instructor-Token": served.token}, timeout=20)
    if path == "/api/lessons/check" and isinstance(body, dict):  # a check answers 200 with the problems
        assert status == 200 and answer["ok"] is False, answer
        assert any("too large" in p["message"] or "nested" in p["message"] for p in answer["problems"]), answer
        return
    assert status == 400, (status, answer)
    assert reason in answer["error"], answer


def test_every_bomb_together_leaves_the_worker_s_memory_where_it_was(served):
    worker = served.worker_pid()
    served.call("POST", "/api/lessons/check", {"text": "name: warm-up"})  # first-use imports happen before
    before = served.rss_kb(worker)
    for _ in range(3):
        for method, path, body, _ in BOMBS:
            served.call(method, path, body, {"X-Instructor-Token": served.token}, timeout=20)
        served.call("POST", "/api/sandboxes", raw=b"[" * 5000 + b"]" * 5000)
    after = served.rss_kb(worker)
    assert after - before < 64 * MB, f"the worker grew from {before} kB to {after} kB"


def test_json_nested_five_thousand_deep_is_a_400(served):
    status, answer, _ = served.call("POST", "/api/sandboxes", raw=b"[" * 5000 + b"]" * 5000)
    assert status == 400 and "nested" in answer["error"], answer


def test_faults_that_would_take_the_machine_are_refused(served):
    status, box, _ = served.call("POST", "/api/sandboxes", {"cluster": {"brokers": [0]}})
    assert status == 201, box
    headers = {"X-Sandbox-Token": box["token"]}
    fault = lambda **body: served.call("POST", f"/api/sandboxes/{box['id']}/faults", body, headers)  # noqa: E731
    status, answer, _ = fault(op="create_topic", topic="big", partitions=BIG)
    assert status == 400 and "partitions" in answer["error"], answer
    status, answer, _ = fault(op="produce", topic="t", partition=0, count=1_000_000)
    assert status == 400 and "count" in answer["error"], answer
    status, answer, _ = fault(op="set_config", name="zookeeper.session.timeout.ms", value=10 ** 15)
    assert status == 400 and "at most" in answer["error"], answer
    status, answer, _ = fault(op="stall_follower", broker=0, topic="no-such-topic")
    assert status == 409 and "does not exist" in answer["error"], answer
    for n in range(2):  # 2 x 100 partitions fill the cluster's 200; the 201st is refused
        status, answer, _ = fault(op="create_topic", topic=f"wide{n}", partitions=100)
        assert status == 200, answer
    status, answer, _ = fault(op="create_topic", topic="one-more", partitions=1)
    assert status == 409 and "at most 200 partitions" in answer["error"], answer
    served.call("DELETE", f"/api/sandboxes/{box['id']}", headers=headers)


def test_a_lesson_id_of_300_characters_is_a_400_not_a_500(served):
    headers = {"X-Instructor-Token": served.token}
    text = (LESSONS_DIR / "controller_failover.yaml").read_text()
    status, answer, _ = served.call("POST", "/api/instructor/lessons", {"id": "a" * 300, "text": text}, headers)
    assert status == 400 and "64" in answer["error"], answer


def test_a_form_post_from_another_site_is_refused(served):
    status, answer, _ = served.call("POST", "/api/sandboxes", raw=b"cluster=x",
                                    headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert status == 415 and "JSON" in answer["error"], answer


def test_every_page_says_no_framing_no_sniffing_and_only_our_scripts(served):
    for path in ("/", "/replays", "/lessons", "/join", "/api/vocabulary", "/healthz"):
        status, _, headers = served.call("GET", path)
        assert status == 200, path
        assert headers["X-Frame-Options"] == "DENY" and headers["X-Content-Type-Options"] == "nosniff", path
        assert "frame-ancestors 'none'" in headers["Content-Security-Policy"], path
        assert "script-src 'self'" in headers["Content-Security-Policy"], path


def test_bounds_are_stated_in_the_openapi_document(served):
    _, document, _ = served.call("GET", "/api/openapi.json")
    text = json.dumps(document)
    topic = document["components"]["schemas"]["NewSandbox"]["properties"]["cluster"]["properties"]["topics"]
    assert topic["maxProperties"] == 20
    assert topic["additionalProperties"]["properties"]["partitions"]["maximum"] == 100
    assert '"maximum": 10000' in text  # produce's count


def test_a_socket_message_nested_five_thousand_deep_is_answered_400(served):
    from urllib.parse import urlparse

    from tests.hardening.raw_sockets import RawSocket, run

    async def probe():
        url, sock = urlparse(served.url), RawSocket()
        assert await sock.connect(url.hostname, url.port)
        try:
            sock._send('427["fault",' + "[" * 5000 + "]" * 5000 + "]")
            return await sock._next()
        finally:
            sock.close()

    answer = run(probe())
    assert answer.startswith("437") and '"status":400' in answer and "nested" in answer, answer
