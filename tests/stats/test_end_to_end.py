"""The statistics job end to end: real fault scripts against the test ZooKeeper produce replay
logs, lesson/class/free-play sessions are derived from them (``backend.stats.synthetic``), one
line is damaged and one file cut short, ``kclab stats`` runs once as a user runs it, and its
numbers must equal those counted straight from the records in plain Python."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from backend.stats import baseline
from backend.stats.output import read_json_dataset
from backend.view.rules import RULE_IDS


@pytest.fixture(scope="module")
def run(stats_run):
    """The shared run (tests/stats/conftest.py: scripts, derived sessions, damage, the job)."""
    return stats_run


def test_the_job_writes_parquet_json_and_a_summary(run):
    _, out, job = run
    summary = json.loads((out / "summary.json").read_text())
    for name, rows in summary["datasets"].items():
        assert list((out / name).glob("*.parquet")) or rows == 0, f"{name}: no Parquet files"
        assert len(read_json_dataset(out, name)) == rows
    assert "stats [" in job.stderr and "done in" in job.stderr  # progress on stderr
    assert "controller failovers:" in job.stdout
    assert not list(out.parent.glob(".out.staging-*"))


def test_the_headline_numbers_equal_a_plain_python_count(run):
    replays, out, _ = run
    summary = json.loads((out / "summary.json").read_text())
    expected = baseline.compute(replays)
    assert summary["input"]["files"] == expected["input"]["files"] == 12
    assert summary["input"]["duplicate_copies"] == expected["input"]["duplicate_copies"] == 2
    assert summary["input"]["sessions"] == 10
    for key in ("bytes", "lines", "records", "sessions", "sessions_by_mode"):
        assert summary["input"][key] == expected["input"][key], key
    assert summary["malformed"]["by_reason"] == expected["malformed"]["by_reason"] == {"bad_json": 1, "truncated": 1}
    got, want = summary["headline"], expected["headline"]
    for key in want:
        assert baseline.same_numbers(got[key], want[key]), f"{key}: job {got[key]} != python {want[key]}"


def test_the_numbers_mean_something(run):
    """Guard against two implementations agreeing on nothing: the scripts do produce these."""
    replays, out, _ = run
    h = json.loads((out / "summary.json").read_text())["headline"]
    originals = sorted(path for path in replays.glob("*.jsonl") if ".imported" not in path.name)  # copies count once
    records = [json.loads(line) for path in originals for line in path.read_text().splitlines()
               if line.strip() and _json(line)]
    answered = [r for r in records if r.get("kind") == "lesson" and r.get("to_state") == "answered"]
    assert h["predictions"]["answers"] == len(answered) > 0
    assert h["predictions"]["wrong"] == sum(1 for r in answered if r.get("correct") is False)
    assert h["failover"]["count"] >= 6 and h["failover"]["p95_ms"] >= h["failover"]["p50_ms"] >= 0
    assert h["elections"]["unclean"] >= 1 and h["messages_lost"]["by_acks"].get("1", 0) >= 5
    assert h["zombie_writes_fenced"] >= 1 and h["stale_epoch_rejections"] >= 1
    # the unclean election breaks the data rule in its run and in the sessions derived from it
    assert h["rules_broken"].get("acked_not_lost", 0) >= 1 and set(h["rules_broken"]) <= set(RULE_IDS)
    assert h["offline_windows"]["by_fault"].get("stop_broker", 0) >= 1  # the unclean script's leader stops
    assert h["lessons"]["started"] == 6 and 0 < h["lessons"]["completed"] < 6
    assert h["free_play"]["user_faults"] == sum(
        1 for r in records if r.get("kind") == "fault" and (r.get("detail") or {}).get("source") == "user")


def test_choices_and_misconceptions_equal_counts_taken_from_the_records(run):
    """For each question, how many picked each choice (right, wrong, "I'm not sure"), and the
    most common misconceptions: the datasets against a plain count of the ``answered`` records."""
    replays, out, job = run
    originals = sorted(path for path in replays.glob("*.jsonl") if ".imported" not in path.name)
    answered = [r for path in originals for line in path.read_text().splitlines() if line.strip() and _json(line)
                for r in [json.loads(line)] if r.get("kind") == "lesson" and r.get("to_state") == "answered"]
    picked = Counter((r["question"], r["answer"]) for r in answered)
    choices = [r for r in read_json_dataset(out, "choices") if r["scope"] == "lesson"]
    assert {(r["question"], r["answer"]): r["answers"] for r in _summed(choices)} == dict(picked)
    assert sum(r["unsure"] for r in choices) == sum(1 for r in answered if "correct" not in r) > 0
    assert sum(r["right"] for r in choices) == sum(1 for r in answered if r.get("correct") is True) > 0
    told = Counter((r["answer"], r["misconception"]) for r in answered if r.get("misconception"))
    assert len(told) >= 2  # the derived sessions do hold misconceptions to count
    top = sorted((r for r in read_json_dataset(out, "misconceptions") if r["scope"] == "lesson"),
                 key=lambda r: r["rank"])
    assert [((r["answer"], r["misconception"]), r["count"]) for r in top] == told.most_common(5)
    summary = json.loads((out / "summary.json").read_text())
    [(lesson, listed)] = summary["misconceptions"].items()
    assert lesson == "failover_basics" and listed[0]["count"] == told.most_common(1)[0][1]
    assert "misconception in failover_basics" in job.stdout


def _summed(rows: list[dict]) -> list[dict]:
    """Rows of several lessons (and none) summed per question and answer."""
    out: dict[tuple, dict] = {}
    for r in rows:
        row = out.setdefault((r["question"], r["answer"]), {"question": r["question"], "answer": r["answer"], "answers": 0})
        row["answers"] += r["answers"]
    return list(out.values())


def test_datasets_have_scopes_and_the_malformed_lines_listed(run):
    _, out, _ = run
    scopes = {r["scope"] for r in read_json_dataset(out, "failover")}
    assert scopes == {"overall", "mode", "lesson", "class", "student", "cell"}
    wrong = [r for r in read_json_dataset(out, "wrong_answers") if r["scope"] == "lesson"]
    assert wrong and all(1 <= r["rank"] <= 3 for r in wrong)
    violations = [r for r in read_json_dataset(out, "violations") if r["scope"] == "overall"]
    assert violations and all(r["sessions"] >= 1 and r["violations"] >= r["sessions"] for r in violations)
    malformed = read_json_dataset(out, "malformed")
    assert sorted(r["reason"] for r in malformed) == ["bad_json", "truncated"]
    assert any(r["line"] == 21 and r["file"].endswith("derived-0-0.jsonl") for r in malformed)


def _json(line: str) -> bool:
    try:
        json.loads(line)
        return True
    except ValueError:
        return False
