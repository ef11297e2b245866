"""The page's replay-log rules (static/js/replay-file.js) and the server's
(backend/view/replay_check.py, used by read_replay, the replay list and imports) agree: on the
same damaged files they stop at the same line, for the same reason, with the same records.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from backend.core import records as py_records
from backend.core.records import Record, SessionHeader
from backend.view.replay_check import ReplayChecker, split_lines
from backend.runtime.replay import ReplayWriter, read_replay

ROOT = Path(__file__).resolve().parents[2]
PARSE_JS = ROOT / "tests" / "js" / "parse_replay.mjs"


def node(*args: str) -> list[dict]:
    found = shutil.which("node")
    assert found, "node is not on PATH: `make setup` installs it (Debian's npm brings nodejs)"
    done = subprocess.run([found, str(PARSE_JS), *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, f"parse_replay.mjs failed:\n{done.stderr}"
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> bytes:
    """A small intact log with records of several kinds and optional fields."""
    directory = tmp_path_factory.mktemp("good")
    writer = ReplayWriter(directory, SessionHeader("s1", "lesson", 1_000, "0.1.0", {"brokers": [0, 1]},
                                                   lesson_id="l1", class_id="c1", student="kestrel"))
    made = [
        Record(kind="broker", subject="broker:0", to_state="registered", broker_id=0, detail={"broker_epoch": 3}),
        Record(kind="zk", subject="znode:/controller", to_state="created", zk_version=0, zxid=9),
        Record(kind="partition", subject="partition:t-0", from_state="NewPartition", to_state="OnlinePartition",
               topic="t", partition=0, leader=0, isr=(0, 1), leader_epoch=0, outcome="ok", note="it's fine"),
        Record(kind="election", subject="partition:t-0", election="offline", leader=1, isr=(1,)),
        Record(kind="lesson", subject="step:2", to_state="answered", student="kestrel", answer="2", correct=True),
    ]
    writer([r.stamped("s1", seq, 1_000 + seq) for seq, r in enumerate(made)])
    writer.close()
    return writer.path.read_bytes()


def lines_of(data: bytes) -> list[bytes]:
    return split_lines(data)



def with_line(data: bytes, index: int, line: bytes | dict) -> bytes:
    lines = lines_of(data)
    lines[index] = (json.dumps(line).encode() + b"\n") if isinstance(line, dict) else line
    return b"".join(lines)


def record_line(data: bytes, index: int) -> dict:
    return json.loads(lines_of(data)[index])


def variants(good: bytes) -> dict[str, bytes]:
    rec = lambda **changes: {**record_line(good, 2), **changes}  # noqa: E731  (line 3, seq 1)
    header = json.loads(lines_of(good)[0])
    out = {
        "intact": good,
        "torn_last_line": good[:-9],
        "crlf": good.replace(b"\n", b"\r\n"),
        "not_json": with_line(good, 2, b'{"v": 1, "seq": \n'),
        "blank_line": with_line(good, 2, b"   \n"),
        "seq_wrong_type": with_line(good, 2, rec(seq="one")),
        "unknown_field": with_line(good, 2, rec(colour="red")),
        "missing_field": with_line(good, 2, {k: v for k, v in rec().items() if k != "subject"}),
        "null_required": with_line(good, 2, rec(ts_ms=None)),
        "null_optional": with_line(good, 2, rec(note=None)),
        "seq_gap": with_line(good, 3, rec(seq=5)),
        "first_seq_not_zero": b"".join([lines_of(good)[0], *lines_of(good)[2:]]),
        "negative_seq": with_line(good, 1, {**record_line(good, 1), "seq": -1}),
        "second_header": with_line(good, 3, header),
        "other_session": with_line(good, 2, rec(session_id="s2")),
        "bad_utf8": with_line(good, 2, lines_of(good)[2].replace(b"broker", b"br\xff\xfeker")),
        "unknown_kind": with_line(good, 2, rec(kind="weather")),
        "unknown_outcome": with_line(good, 2, rec(outcome="maybe")),
        "unknown_election": with_line(good, 2, rec(election="coin_toss")),
        "isr_not_ints": with_line(good, 2, rec(isr=[0, "1"])),
        "bool_for_int": with_line(good, 2, rec(leader=True)),
        "float_seq": with_line(good, 2, rec(seq=1.5)),
        "record_is_a_list": with_line(good, 2, b"[1, 2]\n"),
        "record_version_2": with_line(good, 2, rec(v=2)),
        "detail_not_object": with_line(good, 2, rec(detail=[1])),
        "empty_file": b"",
        "header_only": lines_of(good)[0],
        "torn_header": lines_of(good)[0][:-20],
        "not_a_header": with_line(good, 0, record_line(good, 1)),
        "header_unknown_field": with_line(good, 0, {**header, "colour": "red"}),
        "header_missing_field": with_line(good, 0, {k: v for k, v in header.items() if k != "cluster"}),
        "header_started_ms_text": with_line(good, 0, {**header, "started_ms": "yesterday"}),
        "header_cluster_list": with_line(good, 0, {**header, "cluster": [0, 1]}),
        "header_empty_session": with_line(good, 0, {**header, "session_id": ""}),
        "header_version_3": with_line(good, 0, {**header, "v": 3}),
    }
    return out


def test_the_page_and_the_server_read_damaged_logs_alike(good, tmp_path):
    cases = variants(good)
    files = []
    for name, data in cases.items():
        path = tmp_path / f"{name}.jsonl"
        path.write_bytes(data)
        files.append(path)
    js = dict(zip(cases, node(*map(str, files))))
    mismatches = []
    for name, path in zip(cases, files):
        replay = read_replay(path)
        python = {"session_id": replay.header.session_id if replay.header else None, "records": len(replay.records),
                  "lastSeq": replay.records[-1].seq if replay.records else -1,
                  "damage": replay.damage.to_dict() if replay.damage else None, "pending": False}
        page = js[name]
        if name == "not_json":  # the JSON parsers word their errors differently
            assert page["damage"]["reason"].startswith("the line is not JSON (")
            page["damage"]["reason"] = python["damage"]["reason"]
        if python != page:
            mismatches.append(f"{name}:\n  python {python}\n  page   {page}")
    assert not mismatches, "\n".join(mismatches)
    assert js["intact"]["damage"] is None and js["intact"]["records"] == 5
    assert js["crlf"]["damage"] is None, "a log saved with Windows line ends still plays"
    assert js["torn_last_line"]["damage"]["line"] == 6 and js["torn_last_line"]["records"] == 4


def test_a_live_log_s_unfinished_last_line_is_not_damage(good, tmp_path):
    path = tmp_path / "live.jsonl"
    path.write_bytes(good[:-9])
    [page] = node("--live", str(path))
    assert page["damage"] is None and page["pending"] is True and page["records"] == 4


def test_the_page_knows_the_record_schema_the_server_checks():
    [tables] = node("--tables")
    assert tables["KINDS"] == list(py_records.KINDS)
    assert tables["ELECTIONS"] == list(py_records.ELECTIONS)
    assert tables["OUTCOMES"] == list(py_records.OUTCOMES)
    assert tables["FIELD_TYPES"] == {name: types[0] for name, types in py_records._FIELD_TYPES.items()}
    from backend.view import replay_check
    assert {k: {"str": str, "int": int, "dict": dict}[v] for k, v in tables["HEADER_TYPES"].items()} \
        == replay_check._HEADER_TYPES


def test_the_checker_resumes_where_a_growing_log_stopped(good):
    """What the replay index relies on: feeding the rest later gives the same verdict."""
    whole = ReplayChecker()
    for line in lines_of(good):
        whole.feed(line)
    resumed = ReplayChecker()
    lines = lines_of(good)
    for line in lines[:3]:
        resumed.feed(line)
    assert resumed.good_bytes == sum(map(len, lines[:3]))
    for line in lines[3:]:
        resumed.feed(line)
    assert (resumed.records, resumed.last_seq, resumed.good_bytes, resumed.damage) == \
        (whole.records, whole.last_seq, len(good), None)
