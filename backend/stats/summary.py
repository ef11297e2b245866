"""``summary.json``: the headline numbers of a run, what was set aside, how big, how long.

The headline numbers are read from the datasets the run has just written (their ``overall``
rows: the same Arrow tables, ``datasets``), not computed a second time, so the summary cannot
disagree with the datasets. Only the rows it needs become Python values: reading the JSON copies
back cost a 10M table's warm Run 0.3–0.5 CPU-s (issue 16). The same ``headline`` shape is
produced by ``backend.stats.baseline`` in plain Python, which is how the tests and the benchmark
check the job.
"""

from __future__ import annotations

import time

import pyarrow as pa
import pyarrow.compute as pc

from backend.stats.aggregate import ALL


SUMMARY_VERSION = 1
EXAMPLES = 10

Datasets = dict[str, pa.Table]
"""Dataset name -> its rows, as written (``backend.stats.metrics``)."""


def _scope(datasets: Datasets, name: str, scope: str) -> list[dict]:
    rows = datasets[name]
    return rows.filter(pc.equal(rows["scope"], scope)).to_pylist()


def _overall(datasets: Datasets, name: str) -> list[dict]:
    return _scope(datasets, name, "overall")


def _values(rows: pa.Table, column: str) -> list:
    """The distinct non-empty values of a column, sorted."""
    return sorted(v for v in pc.unique(rows[column]).to_pylist() if v)


def _distribution(row: dict | None, count: str = "count") -> dict:
    row = row or {}
    return {"count": row.get(count, 0), "mean_ms": row.get("mean_ms"), "p50_ms": row.get("p50_ms"),
            "p95_ms": row.get("p95_ms"), "max_ms": row.get("max_ms")}


def headline(datasets: Datasets) -> dict:
    """The headline numbers, from the overall rows of the datasets."""
    failover = next(iter(_overall(datasets, "failover")), {})
    unavailability = _overall(datasets, "unavailability")
    every = next((r for r in unavailability if r.get("fault") == ALL), {})
    elections = {r.get("election"): r["elections"] for r in _overall(datasets, "elections")}
    losses = {r.get("acks"): r["messages_lost"] for r in _overall(datasets, "data_loss")}
    fencing = next(iter(_overall(datasets, "fencing")), {})
    lesson_rows = _scope(datasets, "predictions", "lesson")
    correct = sum(r["correct"] for r in lesson_rows)
    wrong = sum(r["wrong"] for r in lesson_rows)
    completion = next(iter(_overall(datasets, "completion")), {})
    sandbox = _overall(datasets, "sandbox_faults")
    return {
        "failover": {**_distribution(failover), "unresolved": failover.get("unresolved", 0)},
        "offline_windows": {**_distribution(every, "closed"), "windows": every.get("windows", 0),
                            "open": every.get("open", 0), "total_ms": every.get("total_ms", 0),
                            "by_fault": {r.get("fault"): r["windows"] for r in unavailability if r.get("fault") != ALL}},
        "elections": {"by_strategy": elections, "total": sum(elections.values()),
                      "unclean": elections.get("offline_unclean", 0)},
        "messages_lost": {"total": sum(losses.values()), "by_acks": losses},
        "zombie_writes_fenced": fencing.get("zombie_writes_fenced", 0),
        "stale_epoch_rejections": fencing.get("stale_epoch_rejections", 0),
        "rules_broken": {r.get("rule"): r["violations"] for r in _overall(datasets, "violations")},
        "predictions": {"answers": sum(r["answers"] for r in lesson_rows), "correct": correct, "wrong": wrong,
                        "accuracy": correct / (correct + wrong) if correct + wrong else None},
        "lessons": {"started": completion.get("started", 0), "finished": completion.get("finished", 0),
                    "completed": completion.get("completed", 0),
                    "completion_rate": completion.get("completion_rate")},
        "free_play": {"user_faults": sum(r["injected"] for r in sandbox),
                      "by_op": {r.get("op"): r["injected"] for r in sandbox}},
    }


def misconceptions(datasets: Datasets, per_lesson: int = 3) -> dict[str, list[dict]]:
    """The most common misconceptions of each lesson (over every class): what the students who
    picked a wrong choice were told, and how many picked it."""
    out: dict[str, list[dict]] = {}
    rows = _scope(datasets, "misconceptions", "lesson")
    for row in sorted(rows, key=lambda r: (r.get("lesson_id") or "", r["rank"])):
        if row["rank"] <= per_lesson:
            out.setdefault(row.get("lesson_id") or "(none)", []).append(
                {k: row[k] for k in ("question", "answer", "misconception", "count")})
    return out


def build_summary(datasets: Datasets, replays: str, listing: dict, counts: dict, timings: dict[str, float],
                  spark: dict) -> dict:
    """``spark``: the session's version, master and default parallelism (``job._spark_facts``)."""
    sessions = datasets["sessions"]
    malformed = datasets["malformed"].slice(0, EXAMPLES).to_pylist()
    files = listing["files"]
    seconds = timings.get("total", 0.0)
    return {
        "version": SUMMARY_VERSION,
        "generated_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "replays": replays,
        "spark": spark,
        "input": {"files": files, "bytes": listing["bytes"],
                  "lines": counts["lines"], "records": counts["records"], "sessions": counts["sessions"],
                  "files_without_header": files - counts["sessions"] - counts.get("duplicate_copies", 0),
                  "duplicate_copies": counts.get("duplicate_copies", 0),
                  "sessions_by_mode": counts["sessions_by_mode"]},
        "malformed": {"lines": sum(counts["malformed_by_reason"].values()),
                      "by_reason": counts["malformed_by_reason"], "examples": malformed},
        "headline": headline(datasets),
        "misconceptions": misconceptions(datasets),
        "filters": {"class_ids": _values(sessions, "class_id"), "lesson_ids": _values(sessions, "lesson_id"),
                    "dates": _values(sessions, "date")},
        "datasets": {name: rows.num_rows for name, rows in datasets.items()},
        "timings_s": {k: round(v, 3) for k, v in timings.items()},
        "records_per_s": round(counts["records"] / seconds, 1) if seconds else None,
    }


def headline_text(summary: dict) -> str:
    """A few lines for the terminal."""
    h, i, m = summary["headline"], summary["input"], summary["malformed"]
    f, o = h["failover"], h["offline_windows"]

    def ms(v):
        return "-" if v is None else f"{v:.0f} ms"
    lines = [
        f"input: {i['files']} files, {i['records']} records, {i['sessions']} sessions; "
        f"malformed lines: {m['lines']} {m['by_reason'] or ''}".rstrip(),
        f"controller failovers: {f['count']} (p50 {ms(f['p50_ms'])}, p95 {ms(f['p95_ms'])}, max {ms(f['max_ms'])}), "
        f"unresolved {f['unresolved']}",
        f"offline windows: {o['windows']} (p50 {ms(o['p50_ms'])}, p95 {ms(o['p95_ms'])}), still open {o['open']}",
        f"elections: {h['elections']['by_strategy']}; unclean {h['elections']['unclean']}",
        f"acknowledged messages lost: {h['messages_lost']['total']} {h['messages_lost']['by_acks']}",
        f"zombie writes fenced: {h['zombie_writes_fenced']}; stale-epoch requests rejected: {h['stale_epoch_rejections']}",
        f"Kafka's rules broken: {h['rules_broken'] or 'none'}",
        f"predictions: {h['predictions']['answers']} answers, accuracy {h['predictions']['accuracy']}",
        *[f"  misconception in {lesson}: {m['count']} × {m['question']} = {m['answer']!r}: {m['misconception']}"
          for lesson, top in summary.get("misconceptions", {}).items() for m in top[:1]],
        f"lessons: {h['lessons']['started']} started, {h['lessons']['completed']} completed",
        f"free play: {h['free_play']['user_faults']} faults injected by students",
        f"took {summary['timings_s'].get('total', 0):.1f} s ({summary['records_per_s']} records/s)",
    ]
    return "\n".join(lines)
