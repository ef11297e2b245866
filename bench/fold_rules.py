"""The rules' fold of the statistics (``backend.stats.violations.session_violations``), alone.

    PYTHONPATH=. .venv/bin/python bench/fold_rules.py --logs /tmp/kclab16b/replays-200000 \\
        --tree main=/tmp/main-export --tree branch=. --runs 3

What the ingest runs on the executors for every new log (decode its kept lines, sort them by
seq, fold them through the page's view and its rule checks), timed in one process without Spark,
so that two versions of the code can be compared side by side: each ``--tree`` (a checkout, e.g.
``main`` exported with ``git archive``) runs in a fresh subprocess with that tree first on
``sys.path``, the trees alternating within each of ``--runs`` rounds. Every file is read into
memory first; the time is the fold's alone: CPU seconds (``time.process_time``, the steadier
figure on a shared machine) and wall seconds. Each tree's verdicts are hashed: the bench fails
when two trees disagree. The lines a log's parse would set aside are those ``json.loads`` rejects
or that have no ``seq`` (the bench's generated logs have one damaged line in 5,000 sessions).
``--profile`` prints a cProfile of the last tree's fold (sorted by own time) instead.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def read_logs(directory: Path) -> list[tuple[str, list[int]]]:
    """Every ``*.jsonl`` log with a header: its text and the numbers of the lines set aside."""
    logs = []
    for path in sorted(directory.glob("*.jsonl")):
        text = path.read_text()
        lines = text.split("\n")
        n_lines = len(lines) - 1 if text.endswith("\n") else len(lines)
        logs.append((text, [i for i in range(1, n_lines) if not _is_record(lines[i], i == n_lines - 1
                                                                             and not text.endswith("\n"))]))
    return logs


def _is_record(line: str, torn: bool) -> bool:
    try:
        record = json.loads(line)
    except ValueError:
        return False
    return not torn and isinstance(record, dict) and isinstance(record.get("seq"), int)


def worker(tree: str, logs_dir: str, profile: bool) -> dict:
    sys.path.insert(0, tree)
    from backend.stats.violations import session_violations

    logs = read_logs(Path(logs_dir))
    if profile:
        import cProfile
        import pstats
        profiler = cProfile.Profile()
        profiler.runcall(lambda: [session_violations(text, aside) for text, aside in logs])
        pstats.Stats(profiler, stream=sys.stderr).sort_stats("tottime").print_stats(25)
    cpu, wall = time.process_time(), time.perf_counter()
    verdicts = [session_violations(text, aside) for text, aside in logs]
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    digest = hashlib.sha256(json.dumps(verdicts, sort_keys=True).encode()).hexdigest()[:16]
    return {"cpu_s": cpu, "wall_s": wall, "logs": len(logs), "verdicts": digest,
            "broken": sum(1 for v in verdicts if v), "records": sum(t.count("\n") - 1 for t, _ in logs)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--logs", required=True, help="a directory of replay logs (*.jsonl)")
    parser.add_argument("--tree", action="append", required=True, help="NAME=PATH of a checkout (repeatable)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker[0], args.worker[1], args.profile)))
        return 0
    trees = dict(t.split("=", 1) for t in args.tree)
    results: dict[str, list[dict]] = {name: [] for name in trees}
    for _ in range(1 if args.profile else args.runs):
        for name, path in trees.items():
            load = os.getloadavg()[0]
            out = subprocess.run([sys.executable, __file__, "--logs", args.logs, "--tree", args.tree[0],
                                  "--worker", str(Path(path).resolve()), args.logs]
                                 + (["--profile"] if args.profile else []),
                                 check=True, capture_output=not args.profile, text=True,
                                 env={**os.environ, "PYTHONPATH": ""})
            if not args.profile:
                results[name].append({**json.loads(out.stdout), "load": load})
    if args.profile:
        return 0
    print("| tree | logs | records | fold CPU s (runs) | median CPU s | µs a record | wall s (runs) | load | verdicts |")
    print("|---|---:|---:|---|---:|---:|---|---|---|")
    for name, runs in results.items():
        cpu = statistics.median(r["cpu_s"] for r in runs)
        print(f"| {name} | {runs[0]['logs']:,} | {runs[0]['records']:,} | "
              f"{_seconds(runs, 'cpu_s')} | {cpu:.2f} | {cpu / runs[0]['records'] * 1e6:.1f} | {_seconds(runs, 'wall_s')} | "
              f"{min(r['load'] for r in runs):.1f}–{max(r['load'] for r in runs):.1f} | "
              f"{runs[0]['verdicts']} ({runs[0]['broken']} logs broke a rule) |")
    digests = {r["verdicts"] for runs in results.values() for r in runs}
    if len(digests) != 1:
        print(f"the trees' verdicts differ: {sorted(digests)}", file=sys.stderr)
        return 1
    return 0


def _seconds(runs: list[dict], key: str) -> str:
    return ", ".join(f"{r[key]:.2f}" for r in runs)


if __name__ == "__main__":
    sys.exit(main())
