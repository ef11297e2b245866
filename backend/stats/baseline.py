"""The job's headline numbers in plain single-process Python: the check and the yardstick.

Two uses: the end-to-end test compares the Spark job's ``summary.json`` with these numbers
computed straight from the records, and ``bench/stats_scale.py`` times this against the job to
show where Spark starts to pay off. It is written independently of the Spark transforms (a loop
per session, not DataFrames) but to the same definitions, which are stated in the transforms'
docstrings (``cluster_metrics``, ``lesson_metrics``, ``sandbox_metrics``) and in the loader's
table of reasons for setting a line aside. The rules broken are the exception: both count them
with the same checks (``backend.view.page.broken_rules``, the panel's fold), so here they
check the job's plumbing (grouping, the duplicate copies, the damaged lines left out). No JVM is involved: ``pyspark.sql.types`` is plain
Python and only describes the schema.

Usage: ``python -m backend.stats.baseline DIR`` prints the result as JSON.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

from backend.core.records import KINDS
from backend.stats.schema import LINE_SCHEMA, REQUIRED_RECORD_FIELDS, ZOMBIE_WRITE_OUTCOMES
from backend.view.page import broken_rules

_INT_RANGE = {"IntegerType": (-2**31, 2**31 - 1), "LongType": (-2**63, 2**63 - 1)}
_TYPES = {f.name: f.dataType for f in LINE_SCHEMA.fields}
STATE_ZNODE = re.compile(r"^znode:/brokers/topics/([^/]+)/partitions/(\d+)/state$")


def _int_ok(value, type_name: str) -> bool:
    low, high = _INT_RANGE[type_name]
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def fits_schema(data: dict) -> bool:
    """Would Spark's JSON reader accept every field of ``data`` with the line schema?
    (Strings accept any JSON value, as Spark keeps its text; unknown fields are ignored.)"""
    for name, value in data.items():
        dtype = _TYPES.get(name)
        if dtype is None or value is None:
            continue
        kind = type(dtype).__name__
        if kind in _INT_RANGE and not _int_ok(value, kind):
            return False
        if kind == "BooleanType" and not isinstance(value, bool):
            return False
        if kind == "ArrayType":
            element = type(dtype.elementType).__name__
            if not isinstance(value, list) or not all(v is None or _int_ok(v, element) for v in value):
                return False
    return True


def classify(text: str, first: bool, session_id: str | None = None) -> tuple[str | None, dict | None]:
    """(reason or None, parsed object) for one complete line."""
    if not text.strip():
        return "bad_json", None
    try:
        data = json.loads(text)
    except ValueError:
        return "bad_json", None
    if not isinstance(data, dict):
        return "bad_json", None
    if not fits_schema(data):
        return "wrong_type", data
    if first:
        return None, data
    if any(data.get(f) is None for f in REQUIRED_RECORD_FIELDS):
        return "missing_field", data
    if data["v"] != 1:
        return "bad_version", data
    if data["kind"] not in KINDS:
        return "unknown_kind", data
    if data["session_id"] != session_id:
        return "other_session", data
    return None, data


def _header_ok(lines: list[str], complete: bool) -> dict | None:
    if not lines or (len(lines) == 1 and not complete):
        return None
    reason, data = classify(lines[0], first=True)
    if reason or data.get("kind") != "session" or data.get("v") != 1:
        return None
    if any(data.get(f) is None for f in ("session_id", "mode", "started_ms")):
        return None
    return data


def scan_log(path: Path) -> tuple[dict | None, int]:
    """(header, number of lines) of one file, without parsing its records: enough to choose,
    of a session on disk twice, the copy that counts before reading any copy whole."""
    data = path.read_bytes()
    if not data:
        return None, 0
    complete = data.endswith(b"\n")
    n_lines = data.count(b"\n") + (0 if complete else 1)
    first = data.split(b"\n", 1)[0].decode("utf-8", errors="replace")
    return _header_ok([first] * min(n_lines, 2), complete), n_lines


def read_log(path: Path, malformed: Counter) -> tuple[dict | None, list[dict], int]:
    """(header, usable records sorted by seq, number of lines) of one file."""
    return read_text(path.read_bytes().decode("utf-8", errors="replace"), malformed)


def read_text(text: str, malformed: Counter) -> tuple[dict | None, list[dict], int]:
    """``read_log`` of a log's text."""
    complete = text.endswith("\n")
    lines = [] if text == "" else text.split("\n")
    if complete:
        lines = lines[:-1]
    header = _header_ok(lines, complete)
    if header is None:
        if lines:  # an empty file has no line to set aside
            malformed["missing_header"] += len(lines)
        return None, [], len(lines)
    records = []
    for number, line in enumerate(lines[1:], start=1):
        if not complete and number == len(lines) - 1:
            malformed["truncated"] += 1
            continue
        reason, data = classify(line, first=False, session_id=header["session_id"])
        if reason:
            malformed[reason] += 1
        else:
            records.append(data)
    records.sort(key=lambda r: r["seq"])
    return header, records, len(lines)


def percentile(values: list[float], p: float) -> float | None:
    """Linear interpolation between the closest ranks (Spark's ``percentile``, numpy's default)."""
    if not values:
        return None
    values = sorted(values)
    pos = p * (len(values) - 1)
    low, high = math.floor(pos), math.ceil(pos)
    return values[low] + (values[high] - values[low]) * (pos - low)


def distribution(values: list[float]) -> dict:
    return {"count": len(values), "mean_ms": sum(values) / len(values) if values else None,
            "p50_ms": percentile(values, 0.5), "p95_ms": percentile(values, 0.95),
            "max_ms": max(values) if values else None}


def failovers(records: list[dict]) -> list[int | None]:
    """k-th /controller deletion -> (k+1)-th election; see cluster_metrics.failovers."""
    deleted = [r for r in records if r["kind"] == "zk" and r["subject"] == "znode:/controller"
               and r.get("to_state") == "deleted"]
    elected = [r for r in records if r["kind"] == "controller" and r.get("to_state") == "elected"]
    out = []
    for k, d in enumerate(deleted):
        e = elected[k + 1] if k + 1 < len(elected) else None
        out.append(None if e is None else max(0, e["ts_ms"] - d["ts_ms"]))
    return out


def _signal(r: dict) -> tuple[tuple, str] | None:
    if r["kind"] == "partition" and r.get("to_state") in ("OfflinePartition", "OnlinePartition", "NonExistentPartition"):
        state = {"OfflinePartition": "off", "OnlinePartition": "on"}.get(r["to_state"], "gone")
        return (r.get("topic"), r.get("partition")), state
    if r["kind"] == "zk" and r.get("to_state") in ("created", "changed") and r.get("leader") is not None:
        m = STATE_ZNODE.match(r["subject"])
        if m:
            return (m.group(1), int(m.group(2))), "off" if r["leader"] == -1 else "on"
    return None


def offline_windows(records: list[dict]) -> list[dict]:
    """See cluster_metrics.offline_windows: {start_seq, duration_ms, closed, fault}."""
    windows, open_at, prev_off = [], {}, {}
    last_fault = None
    for r in records:
        if r["kind"] == "fault" and r.get("outcome") == "ok":
            last_fault = r.get("op")
        signal = _signal(r)
        if signal is None:
            continue
        key, state = signal
        was_off = prev_off.get(key, False)
        if state == "off" and not was_off:
            open_at[key] = {"start_seq": r["seq"], "start_ts": r["ts_ms"], "duration_ms": None, "closed": False,
                            "fault": last_fault or "(none)"}
            windows.append(open_at[key])
        elif state != "off" and was_off:
            window = open_at.pop(key)
            if state == "on":
                window["duration_ms"] = r["ts_ms"] - window["start_ts"]
                window["closed"] = True
        prev_off[key] = state == "off"
    return windows


def compute(replays: str | Path) -> dict:
    """Input counts, malformed lines and the headline numbers, as ``summary.json`` has them."""
    malformed: Counter = Counter()
    files = lines_total = records_total = sessions = 0
    size = 0
    by_mode: Counter = Counter()
    fail_ms, fail_unresolved, windows = [], 0, []
    elections, losses, fenced, stale, broke = Counter(), Counter(), 0, 0, Counter()
    answers = correct = wrong = 0
    started = finished = completed = 0
    user_faults: Counter = Counter()
    # Two passes, so that only one log's records are in memory at a time: headers and line
    # counts first (of a session on disk twice, the copy with the most lines counts), then each
    # counted log read whole, folded and dropped.
    logs, best = [], {}
    for entry in sorted(os.scandir(replays), key=lambda e: e.name):
        if not (entry.is_file() and entry.name.endswith(".jsonl")):
            continue
        files += 1
        size += entry.stat().st_size
        header, n_lines = scan_log(Path(entry.path))
        logs.append((entry.name, Path(entry.path), header))
        if header is not None:
            key = header["session_id"]
            if key not in best or n_lines > best[key][1]:
                best[key] = (entry.name, n_lines)
    duplicate_copies = sum(1 for name, _, header in logs if header is not None
                           and best[header["session_id"]][0] != name)
    for name, path, header in logs:
        if header is not None and best[header["session_id"]][0] != name:
            continue
        bad: Counter = Counter()
        header, records, n_lines = read_log(path, bad)
        malformed.update(bad)
        lines_total += n_lines
        if header is None:
            continue
        sessions += 1
        by_mode[header["mode"]] += 1
        records_total += len(records)
        for ms in failovers(records):
            fail_unresolved += ms is None
            if ms is not None:
                fail_ms.append(ms)
        windows.extend(offline_windows(records))
        broke.update(broken_rules(records))
        lesson = defaultdict(bool)
        for r in records:
            kind, state, outcome = r["kind"], r.get("to_state"), r.get("outcome")
            if kind == "election" and outcome == "ok" and state == "elected":
                elections[r.get("election")] += 1
            elif kind == "log" and outcome == "data_loss":
                losses[r.get("acks") or "unknown"] += r.get("count") or 0
            elif kind == "zk" and state == "write_refused" and outcome in ZOMBIE_WRITE_OUTCOMES:
                fenced += 1
            elif kind == "request" and outcome == "rejected_stale_epoch":
                stale += 1
            elif kind == "lesson":
                lesson["any"] = True
                lesson[state] = True
                if state == "finished" and str((_detail(r)).get("completed")).lower() == "true":
                    lesson["completed"] = True
                if state == "answered":
                    answers += 1
                    correct += r.get("correct") is True
                    wrong += r.get("correct") is False
            elif kind == "fault" and header["mode"] == "sandbox" and _detail(r).get("source") == "user":
                user_faults[r.get("op")] += 1
        if lesson["any"]:
            started += lesson["started"]
            finished += lesson["finished"]
            completed += lesson["completed"]
    closed = [w["duration_ms"] for w in windows if w["closed"]]
    return {
        "input": {"files": files, "bytes": size, "lines": lines_total, "records": records_total,
                  "sessions": sessions, "sessions_by_mode": dict(by_mode), "duplicate_copies": duplicate_copies},
        "malformed": {"lines": sum(malformed.values()), "by_reason": dict(malformed)},
        "headline": {
            "failover": {**distribution(fail_ms), "unresolved": fail_unresolved},
            "offline_windows": {**distribution(closed), "windows": len(windows),
                                "open": sum(1 for w in windows if not w["closed"]), "total_ms": sum(closed),
                                "by_fault": dict(Counter(w["fault"] for w in windows))},
            "elections": {"by_strategy": dict(elections), "total": sum(elections.values()),
                          "unclean": elections.get("offline_unclean", 0)},
            "messages_lost": {"total": sum(losses.values()), "by_acks": dict(losses)},
            "zombie_writes_fenced": fenced, "stale_epoch_rejections": stale, "rules_broken": dict(broke),
            "predictions": {"answers": answers, "correct": correct, "wrong": wrong,
                            "accuracy": correct / (correct + wrong) if correct + wrong else None},
            "lessons": {"started": started, "finished": finished, "completed": completed,
                        "completion_rate": completed / started if started else None},
            "free_play": {"user_faults": sum(user_faults.values()), "by_op": dict(user_faults)},
        },
    }


def same_numbers(job: object, counted: object) -> bool:
    """Whether the job's figures (``summary.json``'s, as JSON gives them back) equal this count's:
    the same keys and values, a float within a millionth (Spark and Python sum in other orders)."""
    if isinstance(job, dict) and isinstance(counted, dict):
        return job.keys() == counted.keys() and all(same_numbers(job[k], counted[k]) for k in job)
    if isinstance(job, float) or isinstance(counted, float):
        return job is not None and counted is not None and abs(job - counted) <= 1e-6 * max(1.0, abs(counted))
    return job == counted


def _detail(record: dict) -> dict:
    detail = record.get("detail")
    return detail if isinstance(detail, dict) else {}


if __name__ == "__main__":
    print(json.dumps(compute(sys.argv[1]), indent=2))
