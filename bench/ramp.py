"""A ramp of rates (``bench/classroom.py --fault-intervals``): which rate each variant held.

Issue 14 asks "2 workers vs 1 on this machine, faults/s at p99 < 250 ms": the fastest rate each
carries with its tails inside the aim. The classroom bench runs the class at each rate; this
reads its runs. Pure: no server, no clock."""

from __future__ import annotations

SERVER_FAILED = "the server failed"
"""How ``web/api.py``'s answer to an unexpected error (a 500) begins: it has no other mark in
what a student's client keeps."""


def server_failed(fault: dict) -> bool:
    """The server answered the fault 500 (a bug, whatever the load)."""
    return str(fault.get("error")).startswith(SERVER_FAILED)


def ramp(runs: list[dict], aim_ms: float) -> dict:
    """Issue 14's "2 workers vs 1 on this machine, faults/s at p99 < 250 ms": for each variant,
    each rate of the ramp (faults carried a second, both p99s, the server's CPU, the stolen time)
    and the most faults a second it carried with the students' own faults and the class demo both
    inside ``aim_ms`` at p99, the server refusing none for its own sake (its load, or a 500) and
    losing none. A refusal that Kafka gives too is not the server's: at a student's turn every
    2.5 s, the produce after a crash comes before the crashed leader's session expires, and times
    out as in Kafka. A rate above one that missed does not count, so one lucky minute on a noisy
    host does not make the knee."""
    by_variant: dict[str, list[dict]] = {}
    for run in runs:
        by_variant.setdefault(run["variant"], []).append({
            "fault_interval_s": run["fault_interval_s"], "faults_per_s": run["faults_per_s"],
            "fault_to_page_p99_ms": run["fault_to_page"].get("p99_ms"),
            "demo_to_every_student_p99_ms": run["demo_to_every_student"].get("p99_ms"),
            "refused": run["faults_refused"], "refused_by_the_server": run["faults_refused_by_the_server"],
            "lost": run["fault_records_lost"] + run["demo_records_lost"],
            "server_cpu_pct_of_one_core": run["server_cpu_pct_of_one_core"],
            "server_cpu_ms_per_fault": run["server_cpu_ms_per_fault"],
            "stolen_pct": run["machine_stolen_pct_of_all_cores"]})
    knees = {}
    for name, rows in by_variant.items():
        rows.sort(key=lambda row: row["faults_per_s"])
        for row in rows:
            row["held"] = (not row["refused_by_the_server"] and not row["lost"]
                           and all(p is not None and p < aim_ms
                                   for p in (row["fault_to_page_p99_ms"], row["demo_to_every_student_p99_ms"])))
        missed = next((i for i, row in enumerate(rows) if not row["held"]), len(rows))
        knees[name] = rows[missed - 1]["faults_per_s"] if missed else 0.0
    ratio = (round(knees["head-2w"] / knees["head-1w"], 2)
             if knees.get("head-1w") and "head-2w" in knees else None)
    return {"aim_ms": aim_ms, "rates": by_variant, "held_faults_per_s": knees, "two_workers_over_one": ratio}
