"""Where a Spark run's time went, read from its event log (the Spark UI's data, without the UI).

    .venv/bin/python bench/spark_events.py /tmp/events/local-1795...    # one event log file
    .venv/bin/python bench/spark_events.py /tmp/events --stages 12      # the newest log in a directory

Run the job with an event log first, e.g. through a ``spark-defaults.conf`` in ``SPARK_CONF_DIR``::

    spark.eventLog.enabled true
    spark.eventLog.dir     file:///tmp/events

``bench/stats_scale.py --event-log DIR`` does that for every Spark run it measures.

Prints, per phase of ``kclab stats`` (the Spark job group its ``Progress`` sets: load, ingest,
one per dataset …): wall time from its first job's submission to its last job's end, jobs,
stages, tasks, the summed task time and CPU time (what the cores did), GC, bytes read, shuffled
and written. Then the stages with the most task time. The time before the first job (the JVM,
the SparkContext, the driver's own work before Spark has anything to run) is the gap between
the application's start and the first job, and between phases the driver works alone.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path


def newest(path: Path) -> Path:
    if path.is_file():
        return path
    logs = [p for p in path.iterdir() if p.is_file() and not p.name.endswith(".inprogress")]
    if not logs:
        raise SystemExit(f"no finished event log in {path}")
    return max(logs, key=lambda p: p.stat().st_mtime)


def read_events(path: Path) -> dict:
    """The parts of an event log this report needs."""
    app = {"start": None, "end": None, "jobs": {}, "stages": {}, "tasks": defaultdict(list)}
    with open(path, encoding="utf-8") as f:
        for line in f:
            event = json.loads(line)
            name = event["Event"]
            if name == "SparkListenerApplicationStart":
                app["start"] = event["Timestamp"]
            elif name == "SparkListenerApplicationEnd":
                app["end"] = event["Timestamp"]
            elif name == "SparkListenerJobStart":
                props = event.get("Properties") or {}
                app["jobs"][event["Job ID"]] = {
                    "submitted": event["Submission Time"], "end": None,
                    "group": props.get("spark.jobGroup.id") or "(no group)",
                    "stages": [s["Stage ID"] for s in event["Stage Infos"]]}
            elif name == "SparkListenerJobEnd":
                app["jobs"][event["Job ID"]]["end"] = event["Completion Time"]
            elif name == "SparkListenerStageCompleted":
                info = event["Stage Info"]
                app["stages"][info["Stage ID"]] = {
                    "name": info["Stage Name"], "tasks": info["Number of Tasks"],
                    "submitted": info.get("Submission Time"), "completed": info.get("Completion Time")}
            elif name == "SparkListenerTaskEnd":
                metrics = event.get("Task Metrics") or {}
                app["tasks"][event["Stage ID"]].append({
                    "run_ms": metrics.get("Executor Run Time", 0),
                    "cpu_ms": metrics.get("Executor CPU Time", 0) / 1e6,
                    "gc_ms": metrics.get("JVM GC Time", 0),
                    "read": (metrics.get("Input Metrics") or {}).get("Bytes Read", 0),
                    "shuffle": (metrics.get("Shuffle Write Metrics") or {}).get("Shuffle Bytes Written", 0),
                    "written": (metrics.get("Output Metrics") or {}).get("Bytes Written", 0)})
    return app


def phase_of(group: str) -> str:
    """``kclab-stats-<id>:failover`` -> ``failover``."""
    return group.split(":", 1)[1] if ":" in group else group


def summarize(app: dict) -> dict:
    phases: dict[str, dict] = {}
    stage_phase = {}
    for job in sorted(app["jobs"].values(), key=lambda j: j["submitted"]):
        phase = phases.setdefault(phase_of(job["group"]), {
            "first": job["submitted"], "last": job["end"] or job["submitted"], "jobs": 0, "stages": set()})
        phase["first"] = min(phase["first"], job["submitted"])
        phase["last"] = max(phase["last"], job["end"] or job["submitted"])
        phase["jobs"] += 1
        for stage in job["stages"]:
            if stage in app["stages"]:  # skipped stages (shuffle reused) never complete
                phase["stages"].add(stage)
                stage_phase[stage] = phase_of(job["group"])
    out = {}
    for name, phase in phases.items():
        tasks = [t for s in phase["stages"] for t in app["tasks"].get(s, [])]
        out[name] = {"wall_s": (phase["last"] - phase["first"]) / 1000, "start_s": (phase["first"] - app["start"]) / 1000,
                     "jobs": phase["jobs"], "stages": len(phase["stages"]), "tasks": len(tasks),
                     "task_s": sum(t["run_ms"] for t in tasks) / 1000, "cpu_s": sum(t["cpu_ms"] for t in tasks) / 1000,
                     "gc_s": sum(t["gc_ms"] for t in tasks) / 1000, "read_mb": sum(t["read"] for t in tasks) / 1e6,
                     "shuffle_mb": sum(t["shuffle"] for t in tasks) / 1e6,
                     "written_mb": sum(t["written"] for t in tasks) / 1e6}
    stages = [{"id": s, "phase": stage_phase.get(s, "?"), "name": info["name"], "tasks": info["tasks"],
               "wall_s": ((info["completed"] or 0) - (info["submitted"] or 0)) / 1000,
               "task_s": sum(t["run_ms"] for t in app["tasks"].get(s, [])) / 1000}
              for s, info in app["stages"].items()]
    first_job = min((j["submitted"] for j in app["jobs"].values()), default=app["start"])
    last_end = max((j["end"] or 0 for j in app["jobs"].values()), default=app["start"])
    return {"app_s": ((app["end"] or last_end) - app["start"]) / 1000, "before_first_job_s": (first_job - app["start"]) / 1000,
            "jobs": len(app["jobs"]), "stages": len(app["stages"]),
            "tasks": sum(len(t) for t in app["tasks"].values()), "phases": out,
            "top_stages": sorted(stages, key=lambda s: -s["task_s"])}


def report(summary: dict, top: int) -> str:
    lines = [f"application {summary['app_s']:.1f} s (SparkContext start to stop); first job after "
             f"{summary['before_first_job_s']:.1f} s; {summary['jobs']} jobs, {summary['stages']} stages, "
             f"{summary['tasks']} tasks", "",
             "| phase | starts at s | wall s | jobs | stages | tasks | task s | CPU s | GC s | read MB | shuffle MB | written MB |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, p in sorted(summary["phases"].items(), key=lambda kv: kv[1]["start_s"]):
        lines.append(f"| {name} | {p['start_s']:.1f} | {p['wall_s']:.2f} | {p['jobs']} | {p['stages']} | {p['tasks']} | "
                     f"{p['task_s']:.1f} | {p['cpu_s']:.1f} | {p['gc_s']:.1f} | {p['read_mb']:.0f} | "
                     f"{p['shuffle_mb']:.1f} | {p['written_mb']:.1f} |")
    lines += ["", "| stage | phase | name | tasks | wall s | task s |", "|---:|---|---|---:|---:|---:|"]
    for s in summary["top_stages"][:top]:
        lines.append(f"| {s['id']} | {s['phase']} | {s['name'][:60]} | {s['tasks']} | {s['wall_s']:.2f} | {s['task_s']:.1f} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("log", type=Path, help="an event log file, or a directory (its newest finished log)")
    parser.add_argument("--stages", type=int, default=10, help="how many of the costliest stages to list")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    args = parser.parse_args()
    summary = summarize(read_events(newest(args.log)))
    print(json.dumps(summary, indent=2) if args.json else report(summary, args.stages))
    return 0


if __name__ == "__main__":
    sys.exit(main())
