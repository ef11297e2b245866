"""Recorded sessions over HTTP (web/replays_api.py): list and filters, export, import, records,
damaged logs, names that try to leave the replay directory, and a log being written right now.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from backend.view import replay_check
from backend.core.records import Record, SessionHeader
from backend.runtime.replay import ReplayWriter
from backend.runtime.replay_index import INDEX_FILE, ReplayIndex
from tests.support import wait_until

DAY_MS = 86_400_000
T0 = 1_795_219_200_000  # 2026-11-21 00:00 UTC


@pytest.fixture(scope="module")
def client(app):
    """The instructor's client: every log is theirs to open (who else may open what is tested in
    tests/hardening/test_replay_access.py)."""
    client = app.test_client()
    client.environ_base["HTTP_X_INSTRUCTOR_TOKEN"] = app.config["INSTRUCTOR_TOKEN"]
    return client


@pytest.fixture(scope="module")
def replay_dir(app) -> Path:
    return app.extensions["kclab"].sandboxes.replay_dir


def write_log(directory: Path, session_id: str, mode: str = "sandbox", started_ms: int = T0, n: int = 5,
              **header) -> Path:
    writer = ReplayWriter(directory, SessionHeader(session_id, mode, started_ms, "0.1.0", {"brokers": [0, 1]},
                                                   **header))
    writer([Record(kind="broker", subject=f"broker:{i % 2}", to_state="registered", broker_id=i % 2)
            .stamped(session_id, i, started_ms + i) for i in range(n)])
    writer.close()
    return writer.path


@pytest.fixture(scope="module")
def logs(replay_dir):
    """Five finished sessions over three days, one torn at the end, one corrupt in the middle."""
    write_log(replay_dir, "s-sandbox", "sandbox", T0 + 1_000, n=7, class_id="c1", student="owl")
    write_log(replay_dir, "s-lesson", "lesson", T0 + DAY_MS, n=4, lesson_id="failover", class_id="c1")
    write_log(replay_dir, "s-class", "class", T0 + 2 * DAY_MS + 5_000, n=3, lesson_id="fencing", class_id="c2")
    torn = write_log(replay_dir, "s-torn", "script", T0 + 3_000, n=5, lesson_id="failover")
    torn.write_bytes(torn.read_bytes()[:-10])
    corrupt = write_log(replay_dir, "s-corrupt", "sandbox", T0 + 2_000, n=6)
    lines = corrupt.read_bytes().split(b"\n")
    lines[3] = b'{"v": 1, "kind": "broker", "subject": "broker:0", "session_id": "s-corrupt", "seq": "two"'
    corrupt.write_bytes(b"\n".join(lines))
    return replay_dir


def listing(client, query: str = "") -> dict[str, dict]:
    response = client.get(f"/api/replays{query}")
    assert response.status_code == 200, response.get_json()
    return {e["name"]: e for e in response.get_json()["replays"]}


def mine(entries: dict) -> list[str]:
    """The names this module wrote (a live sandbox of another test may be listed too)."""
    return [name for name in entries if name.startswith("s-")]


def test_the_list_says_what_each_log_holds_newest_first(client, logs):
    response = client.get("/api/replays")
    names = [e["name"] for e in response.get_json()["replays"] if e["name"].startswith("s-")]
    assert names == ["s-class.jsonl", "s-lesson.jsonl", "s-torn.jsonl", "s-corrupt.jsonl", "s-sandbox.jsonl"]
    entries = listing(client)
    sandbox = entries["s-sandbox.jsonl"]
    assert {k: sandbox[k] for k in ("session_id", "mode", "class_id", "student", "lesson_id", "started_ms",
                                    "records", "last_seq", "damaged", "damage", "live", "imported")} == {
        "session_id": "s-sandbox", "mode": "sandbox", "class_id": "c1", "student": "owl", "lesson_id": None,
        "started_ms": T0 + 1_000, "records": 7, "last_seq": 6, "damaged": False, "damage": None, "live": False,
        "imported": False}
    assert sandbox["cluster"] == {"brokers": [0, 1]}


def test_a_damaged_log_is_listed_with_the_line_and_the_reason(client, logs):
    entries = listing(client)
    torn, corrupt = entries["s-torn.jsonl"], entries["s-corrupt.jsonl"]
    assert torn["damaged"] and torn["damage"] == {"line": 6, "reason": replay_check.TORN}
    assert torn["records"] == 4 and torn["last_seq"] == 3
    assert corrupt["damaged"] and corrupt["damage"]["line"] == 4 and "not JSON" in corrupt["damage"]["reason"]
    assert corrupt["records"] == 2 and corrupt["last_seq"] == 1


@pytest.mark.parametrize(("query", "expected"), [
    ("?class=c1", ["s-lesson.jsonl", "s-sandbox.jsonl"]),
    ("?lesson=failover", ["s-lesson.jsonl", "s-torn.jsonl"]),
    ("?mode=sandbox", ["s-corrupt.jsonl", "s-sandbox.jsonl"]),
    ("?class=c1&mode=lesson", ["s-lesson.jsonl"]),
    ("?student=owl", ["s-sandbox.jsonl"]),
    (f"?since={T0 + DAY_MS}", ["s-class.jsonl", "s-lesson.jsonl"]),
    (f"?until={T0 + 2_500}", ["s-corrupt.jsonl", "s-sandbox.jsonl"]),
    ("?since=2026-11-22&until=2026-11-22", ["s-lesson.jsonl"]),   # dates: whole UTC days
    ("?until=2026-11-21", ["s-torn.jsonl", "s-corrupt.jsonl", "s-sandbox.jsonl"]),
    ("?since=2026-11-23T00:00:01Z", ["s-class.jsonl"]),
    ("?class=nobody", []),
    ("?mode=", ["s-class.jsonl", "s-lesson.jsonl", "s-torn.jsonl", "s-corrupt.jsonl", "s-sandbox.jsonl"]),
])
def test_filters(client, logs, query, expected):
    assert mine(listing(client, query)) == expected


def test_limit_and_total(client, logs):
    body = client.get("/api/replays?class=c1&limit=1").get_json()
    assert body["total"] == 2 and [e["name"] for e in body["replays"]] == ["s-lesson.jsonl"]


@pytest.mark.parametrize("query", ["?since=yesterday", "?until=2026-13-45", "?limit=-1", "?limit=lots"])
def test_a_bad_filter_is_a_400_with_a_reason(client, logs, query):
    response = client.get(f"/api/replays{query}")
    assert response.status_code == 400
    body = response.get_json()
    assert body["ok"] is False and body["error"]


def test_export_is_the_log_itself_as_a_download(client, logs):
    response = client.get("/api/replays/s-sandbox.jsonl")
    assert response.status_code == 200
    assert response.data == (logs / "s-sandbox.jsonl").read_bytes()
    assert response.headers["Content-Disposition"] == "attachment; filename=s-sandbox.jsonl"
    assert response.mimetype == "application/x-ndjson" and response.headers["X-Replay-Live"] == "0"
    torn = client.get("/api/replays/s-torn.jsonl")
    assert torn.data == (logs / "s-torn.jsonl").read_bytes(), "a damaged log is exported as it is"


def test_an_unknown_log_is_a_404_with_a_reason(client, logs):
    for path in ("/api/replays/nope.jsonl", "/api/replays/nope.jsonl/records", "/api/replays/nope.jsonl/entry"):
        response = client.get(path)
        assert response.status_code == 404, path
        assert response.get_json() == {"ok": False, "error": "there is no replay log named 'nope.jsonl'"}


@pytest.mark.parametrize("name", [
    "..%2F..%2Fetc%2Fpasswd", "..%2Foutside.jsonl", "%2E%2E%2Foutside.jsonl", "..", ".hidden.jsonl",
    f"{INDEX_FILE}", "s-sandbox.json", "s sandbox.jsonl", "s-sandbox.jsonl%00.txt", "%2Fetc%2Fpasswd",
    "..%5C..%5Cwin.jsonl", "a" * 300 + ".jsonl",
])
def test_names_that_leave_the_directory_or_are_not_logs_are_refused(client, logs, name):
    (logs.parent / "outside.jsonl").write_text("secret\n")
    for suffix in ("", "/records", "/entry"):
        response = client.get(f"/api/replays/{name}{suffix}")
        assert response.status_code in (400, 404), (name, suffix, response.status_code)
        body = response.get_json()
        assert body["ok"] is False and body["error"], (name, suffix)
        assert b"secret" not in response.data and b"root:" not in response.data


def test_the_records_of_a_log_page_like_a_sandbox_s(client, logs):
    first = client.get("/api/replays/s-sandbox.jsonl/records?since=0&limit=3").get_json()
    assert [r["seq"] for r in first["records"]] == [0, 1, 2] and first["next"] == 3
    assert first["header"]["session_id"] == "s-sandbox" and first["damage"] is None and first["live"] is False
    rest = client.get("/api/replays/s-sandbox.jsonl/records?since=3").get_json()
    assert [r["seq"] for r in rest["records"]] == [3, 4, 5, 6] and rest["next"] == 7
    beyond = client.get("/api/replays/s-sandbox.jsonl/records?since=50").get_json()
    assert beyond["records"] == [] and beyond["next"] == 50
    torn = client.get("/api/replays/s-torn.jsonl/records").get_json()
    assert [r["seq"] for r in torn["records"]] == [0, 1, 2, 3]
    assert torn["damage"] == {"line": 6, "reason": replay_check.TORN}
    bad = client.get("/api/replays/s-sandbox.jsonl/records?since=x")
    assert bad.status_code == 400 and "since" in bad.get_json()["error"]


def test_describe_one_log(client, logs):
    entry = client.get("/api/replays/s-lesson.jsonl/entry").get_json()
    assert entry["name"] == "s-lesson.jsonl" and entry["lesson_id"] == "failover" and entry["records"] == 4


# -- import -------------------------------------------------------------------------------------------------
def test_import_a_raw_body_stores_it_under_a_new_name(client, logs, tmp_path):
    data = write_log(tmp_path, "elsewhere-1", "lesson", T0 + 10 * DAY_MS, n=4, lesson_id="failover").read_bytes()
    response = client.post("/api/replays", data=data, content_type="application/x-ndjson")
    assert response.status_code == 201, response.get_json()
    entry = response.get_json()
    assert entry["ok"] and entry["created"] and entry["name"] == "elsewhere-1.imported.jsonl"
    assert entry["imported"] and entry["records"] == 4 and not entry["damaged"]
    assert (logs.parent / "imported-replays" / entry["name"]).read_bytes() == data, "imports are kept apart from recorded logs"
    assert "elsewhere-1.imported.jsonl" in listing(client, "?lesson=failover")

    again = client.post("/api/replays", data=data, content_type="application/x-ndjson")
    assert again.status_code == 200 and again.get_json()["created"] is False
    assert again.get_json()["name"] == "elsewhere-1.imported.jsonl", "the same bytes are not stored twice"


def test_import_never_overwrites_a_log(client, logs, tmp_path):
    original = (logs / "s-lesson.jsonl").read_bytes()
    other = write_log(tmp_path, "s-lesson", "lesson", T0, n=2).read_bytes()  # same session id, other bytes
    one_more = json.dumps(Record(kind="broker", subject="broker:0").stamped("s-lesson", 2, T0).to_dict()).encode()
    names = [client.post("/api/replays", data=data, content_type="text/plain").get_json()["name"]
             for data in (other, other + one_more + b"\n")]
    assert names == ["s-lesson.imported.jsonl", "s-lesson.imported-2.jsonl"]
    assert (logs / "s-lesson.jsonl").read_bytes() == original

    exported = client.get("/api/replays/s-lesson.jsonl").data
    back = client.post("/api/replays", data=exported, content_type="application/x-ndjson").get_json()
    assert back["created"] is False and back["name"] == "s-lesson.jsonl", "an export of this server is already here"


def test_import_as_a_multipart_form(client, logs, tmp_path):
    data = write_log(tmp_path, "form-1", "class", T0, n=3, class_id="c9").read_bytes()
    response = client.post("/api/replays", data={"file": (io.BytesIO(data), "my log.jsonl")},
                           content_type="multipart/form-data")
    assert response.status_code == 201, response.get_json()
    assert response.get_json()["name"] == "form-1.imported.jsonl"
    missing = client.post("/api/replays", data={"other": (io.BytesIO(data), "x.jsonl")},
                          content_type="multipart/form-data")
    assert missing.status_code == 400 and "'file'" in missing.get_json()["error"]


def test_a_damaged_log_can_be_imported_and_is_flagged(client, logs, tmp_path):
    data = write_log(tmp_path, "damaged-1", "sandbox", T0, n=5).read_bytes()[:-4]
    entry = client.post("/api/replays", data=data, content_type="application/x-ndjson").get_json()
    assert entry["created"] and entry["damaged"] and entry["damage"] == {"line": 6, "reason": replay_check.TORN}
    assert entry["records"] == 4
    assert listing(client)[entry["name"]]["damaged"]


@pytest.mark.parametrize(("data", "reason"), [
    (b"", "empty"),
    (b"hello, world\n", "not a replay log: line 1: the line is not JSON"),
    (b'{"kind": "broker"}\n', "not a replay log: line 1: a replay log must start with a session header"),
    (b'{"kind": "session", "v": 1, "session_id": "x", "mode": "sandbox", "started_ms": "noon", '
     b'"app_version": "1", "cluster": {}}\n', "'started_ms' must be int"),
    (b"\xff\xfe\x00garbage", "not a replay log: line 1"),
])
def test_an_upload_that_is_not_a_replay_log_is_refused_with_the_reason(client, logs, data, reason):
    before = sorted(p.name for p in logs.iterdir())
    response = client.post("/api/replays", data=data, content_type="application/x-ndjson")
    assert response.status_code == 400
    assert response.get_json()["ok"] is False and reason in response.get_json()["error"]
    assert sorted(p.name for p in logs.iterdir()) == before, "nothing is stored"


def test_an_oversized_upload_is_a_413_with_the_limit(client, app, logs, tmp_path, monkeypatch):
    monkeypatch.setitem(app.config, "REPLAY_IMPORT_MAX_BYTES", 2_000)
    data = write_log(tmp_path, "big-1", "sandbox", T0, n=40).read_bytes()
    assert len(data) > 2_000
    before = sorted(p.name for p in logs.iterdir())
    raw = client.post("/api/replays", data=data, content_type="application/x-ndjson")
    form = client.post("/api/replays", data={"file": (io.BytesIO(data), "big.jsonl")},
                       content_type="multipart/form-data")
    huge = client.post("/api/replays", data=b"x" * 200_000, content_type="application/x-ndjson")
    for response in (raw, form, huge):
        assert response.status_code == 413
        assert response.get_json() == {"ok": False,
                                       "error": "the replay log is too large: at most 2000 bytes can be imported"}
    assert sorted(p.name for p in logs.iterdir()) == before
    small = write_log(tmp_path, "small-1", "sandbox", T0, n=2).read_bytes()
    assert client.post("/api/replays", data=small, content_type="text/plain").status_code == 201, \
        "the app-wide 64 KiB limit is not the import's: under its own limit an import goes through"


def test_a_hostile_session_id_cannot_choose_the_path(client, logs, tmp_path):
    header = {"kind": "session", "v": 1, "session_id": "../../../etc/passwd", "mode": "sandbox", "started_ms": T0,
              "app_version": "x", "cluster": {}}
    response = client.post("/api/replays", data=json.dumps(header).encode() + b"\n", content_type="text/plain")
    assert response.status_code == 201
    name = response.get_json()["name"]
    assert "/" not in name and not name.startswith(".") and (logs.parent / "imported-replays" / name).is_file()


def test_a_large_import_over_the_app_s_default_limit(client, logs, tmp_path):
    data = write_log(tmp_path, "large-1", "sandbox", T0, n=1_500).read_bytes()
    assert len(data) > 64 * 1024
    response = client.post("/api/replays", data=data, content_type="application/x-ndjson")
    assert response.status_code == 201 and response.get_json()["records"] == 1_500


# -- a log being written ---------------------------------------------------------------------------------
def test_a_live_sandbox_s_log_lists_fine_while_it_is_written(client, replay_dir):
    created = client.post("/api/sandboxes", json={})
    assert created.status_code == 201, created.get_json()
    sandbox = created.get_json()
    name = f"{sandbox['id']}.jsonl"
    headers = {"X-Sandbox-Token": sandbox["token"]}
    try:
        seen = []
        for op in ({"op": "stop_broker", "broker": 1}, {"op": "start_broker", "broker": 1}):
            assert client.post(f"/api/sandboxes/{sandbox['id']}/faults", headers=headers, json=op).status_code == 200
            for _ in range(5):
                entry = listing(client)[name]
                assert entry["live"] and not entry["damaged"], entry
                seen.append(entry["records"])
        assert seen == sorted(seen), "a growing log's count only grows"
        wait_until(lambda: listing(client)[name]["records"] > seen[0], 10, "more records in the live log")
        assert client.get(f"/api/replays/{name}").headers["X-Replay-Live"] == "1"
        assert client.get(f"/api/replays/{name}/records?limit=5").get_json()["live"] is True
    finally:
        client.delete(f"/api/sandboxes/{sandbox['id']}", headers=headers)
    entry = listing(client)[name]
    assert not entry["live"] and not entry["damaged"] and entry["mode"] == "sandbox"


def test_the_index_checks_only_what_a_growing_log_added(tmp_path, monkeypatch):
    path = write_log(tmp_path, "grow", n=3)
    index = ReplayIndex(tmp_path)
    fed = []
    original = replay_check.ReplayChecker.feed
    monkeypatch.setattr(replay_check.ReplayChecker, "feed", lambda self, raw: fed.append(raw) or original(self, raw))
    assert index.entries()[0]["records"] == 3 and len(fed) == 4
    fed.clear()
    assert index.entries()[0]["records"] == 3 and fed == [], "unchanged: not checked again"

    line = json.dumps(Record(kind="broker", subject="broker:0").stamped("grow", 3, T0).to_dict()).encode()
    with open(path, "ab") as f:
        f.write(line[:20])  # the writer is mid-line
    live = index.entries(live={"grow.jsonl"})[0]
    assert live["records"] == 3 and not live["damaged"] and live["live"]
    assert index.entries()[0]["damage"] == {"line": 5, "reason": replay_check.TORN}, "not live: a torn line"
    with open(path, "ab") as f:
        f.write(line[20:] + b"\n")
    fed.clear()
    entry = index.entries(live={"grow.jsonl"})[0]
    assert entry["records"] == 4 and not entry["damaged"] and len(fed) == 1, "only the new line is checked"

    fed.clear()
    restarted = ReplayIndex(tmp_path)  # remembers through .kclab-index.json
    assert restarted.entries()[0]["records"] == 4 and fed == []
    assert (tmp_path / INDEX_FILE).is_file()


def test_a_log_that_shrank_or_was_replaced_is_checked_again(tmp_path):
    path = write_log(tmp_path, "shrink", n=6)
    index = ReplayIndex(tmp_path)
    assert index.entries()[0]["records"] == 6
    path.write_bytes(path.read_bytes()[: len(path.read_bytes()) // 2])
    entry = index.entries()[0]
    assert entry["damaged"] and entry["records"] < 6
    path.unlink()
    assert index.entries() == []


# -- documents and the page ---------------------------------------------------------------------------------
def test_openapi_describes_the_replay_endpoints_and_their_entries(client, logs):
    document = client.get("/api/openapi.json").get_json()
    for path in ("/api/replays", "/api/replays/{name}", "/api/replays/{name}/records", "/api/replays/{name}/entry"):
        assert path in document["paths"], path
    assert set(document["paths"]["/api/replays"]) == {"get", "post"}
    entry = listing(client)["s-sandbox.jsonl"]
    assert set(document["components"]["schemas"]["ReplayEntry"]["properties"]) == set(entry)
    import re
    pattern = document["paths"]["/api/replays/{name}"]["parameters"][0]["schema"]["pattern"]
    assert re.fullmatch(pattern, "s-sandbox.jsonl") and not re.fullmatch(pattern, "../x.jsonl")


def test_the_replays_page_is_served(client):
    response = client.get("/replays")
    assert response.status_code == 200 and b"/static/js/replays-page.js" in response.data
