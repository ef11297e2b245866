"""How the statistics job scales: ``kclab stats`` (Spark) against plain single-process Python.

    .venv/bin/python bench/stats_scale.py --records 1000000,10000000 --runs 3,3 --warm-runs 5

1. Templates: replay logs of real runs. ``--templates DIR`` uses existing logs; by default every
   script in lessons/scripts/ is run once on an embedded ZooKeeper (about 1.5 minutes).
2. For each size, a replay directory of that many records is generated from the templates
   (``backend.stats.synthetic``): many sessions, the record mix of real runs, re-dressed as
   free play (45%), solo lessons (25%), class demos (15%) and script runs (15%), 20 classes,
   30 days, durations stretched 0.6-1.8x, one damaged line in every 5,000 sessions. A directory
   already generated under ``--work`` is reused.
3. Cold runs, side by side: for each run, the baseline ``python -m backend.stats.baseline`` and
   then ``kclab stats`` from nothing (no ingested table: every log is parsed; JVM start
   included), each a subprocess as a user runs it. Wall time, CPU time and the peak of the
   summed memory (PSS) of the process and its children, sampled every 0.2 s, and the load
   average before and after: on a shared machine CPU seconds are the steadier measure.
4. The warm dashboard run (``--warm-runs``, on the largest size): one process keeps a SparkSession,
   runs the job once (the table is built, or ``--warm-table`` — a copy of a table already
   ingested from that directory — is brought up to date), then ``--warm-idle`` times with
   nothing new, then ``--warm-runs`` times adds a class's day of new sessions (``--warm-add``
   records) and runs the job again, as the dashboard's Run does.
5. Every Spark run's headline numbers must equal the baseline's on the same input ("same
   numbers"); the warm runs are checked against the baseline over the final directory.
6. ``--before COMMIT`` also runs that commit's ``kclab stats`` (``git archive`` into a temporary
   directory) in every cold run, right after this tree's, on the same input: a change measured
   side by side with the code before it.
7. ``--event-log DIR`` writes each Spark run's event log there (``bench/spark_events.py`` reads
   them); generated data is deleted at the end unless ``--keep`` or ``--work`` is given.

Prints a Markdown table and writes the raw results as JSON (``--json``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from backend.stats.baseline import same_numbers  # noqa: E402
from backend.stats.synthetic import derive, load_log, write_log  # noqa: E402
from bench.process_tree import Sampler, tree_cpu_seconds  # noqa: E402
from bench.measure import archived, machine_busy_seconds as busy_seconds  # noqa: E402

PYTHON = str(Path(sys.executable))
KCLAB = str(Path(sys.executable).parent / "kclab")
MODES = (("sandbox", 0.45), ("lesson", 0.25), ("class", 0.15), ("script", 0.15))
DAY_MS = 86_400_000


def make_templates(directory: Path) -> list[Path]:
    """Run every fault script once (embedded ZooKeeper) into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    for script in sorted((ROOT / "lessons" / "scripts").glob("*.yaml")):
        result = subprocess.run([KCLAB, "run", str(script), "--replay-dir", str(directory)],
                                capture_output=True, text=True, timeout=300)
        print(f"template {script.stem}: {'ok' if result.returncode == 0 else 'FAILED'}", file=sys.stderr, flush=True)
    return sorted(directory.glob("*.jsonl"))


def generate(directory: Path, templates: list, records: int, seed: int = 1, prefix: str = "bench",
             day: int | None = None) -> dict:
    """At least ``records`` records in many sessions (all on ``day``, 0-29, if given); returns counts."""
    directory.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    start = 1_795_000_000_000
    total = sessions = damaged = 0
    modes, weights = zip(*MODES)
    while total < records:
        template = templates[rng.randrange(len(templates))]
        mode = rng.choices(modes, weights)[0]
        klass = f"class-{rng.randrange(20):02d}" if mode in ("class", "sandbox", "lesson") else None
        lesson = f"lesson-{rng.randrange(8)}" if mode in ("lesson", "class") else None
        sid = f"{prefix}-{sessions:07d}"
        lines = derive(template, session_id=sid, mode=mode, rng=rng,
                       started_ms=start + (rng.randrange(30) if day is None else day) * DAY_MS + rng.randrange(DAY_MS),
                       lesson_id=lesson, class_id=klass, student=f"s{rng.randrange(40):02d}" if mode != "class" else None,
                       students=tuple(f"s{i:02d}" for i in rng.sample(range(40), rng.randint(5, 25))),
                       stretch=rng.uniform(0.6, 1.8), outcome=rng.choices(
                           ("completed", "stopped", "abandoned"), (0.7, 0.15, 0.15))[0])
        path = write_log(directory / f"{sid}.jsonl", lines)
        if sessions % 5000 == 4999:
            with open(path, "a", encoding="utf-8") as f:
                f.write('{"kind": "zk", "seq": oops}\n')
            damaged += 1
        total += len(lines) - 1
        sessions += 1
    size = sum(p.stat().st_size for p in directory.iterdir())
    return {"records": total, "sessions": sessions, "damaged_lines": damaged, "bytes": size}


def generated(work: Path, templates: list, size: int) -> tuple[Path, dict]:
    """The replay directory of ``size`` records under ``work``, generated once."""
    data, marker = work / f"replays-{size}", work / f"replays-{size}.json"
    if marker.exists() and data.is_dir():
        return data, json.loads(marker.read_text())
    shutil.rmtree(data, ignore_errors=True)
    t = time.monotonic()
    counts = generate(data, templates, size)
    marker.write_text(json.dumps(counts))
    print(f"generated {counts} in {time.monotonic() - t:.0f} s", file=sys.stderr, flush=True)
    return data, counts


def measure(command: list[str], env: dict | None = None, cwd: Path = ROOT) -> dict:
    load_before, busy_before = os.getloadavg()[0], busy_seconds()
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd,
                               env={**os.environ, **(env or {})})
    sampler = Sampler(process.pid)
    stdout, stderr = process.communicate()
    seconds = time.monotonic() - started
    peak, cpu = sampler.stop()
    if process.returncode != 0:
        raise RuntimeError(f"{command[:3]} failed:\n{stderr[-2000:]}")
    return {"seconds": round(seconds, 2), "cpu_seconds": round(cpu, 1), "peak_rss_mb": round(peak / 2**20),
            "others_cpu_seconds": round(busy_seconds() - busy_before - cpu, 1),  # what the rest of the machine used
            "stdout": stdout, "load_before": round(load_before, 1), "load_after": round(os.getloadavg()[0], 1)}


def headline_equal(summary: dict, baseline: dict) -> bool:
    return same_numbers(summary["headline"], baseline["headline"])  # both read from JSON


def run_size(data: Path, out: Path, masters: list[str], runs: int, env: dict, before: Path | None = None) -> list[dict]:
    """Cold runs, side by side: the baseline, then each master from an empty table, ``runs``
    times; with ``before`` (a source tree), that tree's job too, after this one's."""
    rows = []
    trees = [("", ROOT)] + ([("before ", before)] if before else [])
    for i in range(runs):
        base = measure([PYTHON, "-m", "backend.stats.baseline", str(data)])
        expected = json.loads(base["stdout"])
        rows.append({"engine": "python", "run": i, **{k: v for k, v in base.items() if k != "stdout"}})
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
        for master in masters:
            for label, tree in trees:
                shutil.rmtree(out.with_name(out.name + "-table"), ignore_errors=True)  # cold: parse every log
                # The tree's own web.cli, as `kclab stats` runs it (the venv's kclab imports this checkout).
                command = [PYTHON, "-c", "import sys; from web.cli import main; sys.exit(main())",
                           "stats", "--replays", str(data), "--out", str(out), "--master", master, "--quiet"]
                result = measure(command, {**env, "PYTHONPATH": str(tree)}, cwd=tree)
                rows.append(spark_row(label + master, i, result, json.loads((out / "summary.json").read_text()), expected))
                print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def spark_row(engine: str, run: int, result: dict, summary: dict, expected: dict | None) -> dict:
    return {"engine": engine, "run": run, **{k: v for k, v in result.items() if k != "stdout"},
            "timings": summary["timings_s"], "read_files": summary["ingest"]["read_files"],
            "same_numbers": None if expected is None else headline_equal(summary, expected),
            "records": summary["input"]["records"]}


def warm_runs(data: Path, work: Path, templates_dir: Path, runs: int, add: int, env: dict, idle: int = 0,
              table: Path | None = None) -> list[dict]:
    """The dashboard's Run on a warm session: one process, the table built once (or copied from
    ``table``), then ``idle`` runs with nothing new, then ``runs`` times a class's day of new
    sessions and a run. Checked against the baseline at the end."""
    out = work / "out-warm"
    shutil.rmtree(out.with_name(out.name + "-table"), ignore_errors=True)
    if table:
        shutil.copytree(table, out.with_name(out.name + "-table"))
    command = [PYTHON, str(Path(__file__).resolve()), "--warm-worker", str(data), str(out), str(templates_dir),
               str(runs), str(add), str(idle)]
    result = measure(command, env)
    rows = [json.loads(line) for line in result["stdout"].splitlines() if line.startswith("{")]
    expected = json.loads(measure([PYTHON, "-m", "backend.stats.baseline", str(data)])["stdout"])
    rows[-1]["same_numbers"] = headline_equal(json.loads((out / "summary.json").read_text()), expected)
    for row in rows:
        row["process_peak_rss_mb"] = result["peak_rss_mb"]
    return rows


def warm_worker(data: str, out: str, templates_dir: str, runs: int, add: int, idle: int) -> int:
    """Runs in its own process (``--warm-worker``): prints one JSON line per run."""
    from backend.stats.job import run_job
    from backend.stats.session import spark_session
    spark = spark_session("local[2]")
    templates = [load_log(p) for p in sorted(Path(templates_dir).glob("*.jsonl"))]
    for i in range(idle + runs + 1):
        added = i - idle
        if added > 0:
            generate(Path(data), templates, add, seed=100 + added, prefix=f"warm{added}", day=30 + added)
        load = os.getloadavg()[0]
        started, cpu = time.monotonic(), tree_cpu_seconds()
        summary = run_job(data, out, spark=spark, stream=None)
        engine = "local[2] warm session" + (", nothing new" if 0 < i <= idle else "")
        print(json.dumps({"engine": engine, "run": i, "seconds": round(time.monotonic() - started, 2),
                          "cpu_seconds": round(tree_cpu_seconds() - cpu, 1),
                          "load_before": round(load, 1), "load_after": round(os.getloadavg()[0], 1),
                          "read_files": summary["ingest"]["read_files"], "records": summary["input"]["records"],
                          "timings": summary["timings_s"]}), flush=True)
    return 0


def table(results: list[dict]) -> str:
    lines = ["| records | engine | runs | wall s (median) | CPU s (median) | records/s | peak memory MB (PSS) | "
             "same numbers | load avg |", "|---|---|---|---|---|---|---|---|---|"]
    for size in results:
        by_engine: dict[str, list[dict]] = {}
        for row in size["rows"]:
            by_engine.setdefault(row["engine"], []).append(row)
        for engine, rows in by_engine.items():
            wall = statistics.median(r["seconds"] for r in rows)
            cpu = statistics.median(r.get("cpu_seconds", 0) for r in rows)
            lines.append(
                f"| {size['records']:,} | {engine} | {len(rows)} | {wall:.1f} | {cpu:.1f} | {size['records'] / wall:,.0f} | "
                f"{max(r.get('peak_rss_mb', r.get('process_peak_rss_mb', 0)) for r in rows):,} | "
                f"{'NO' if any(r.get('same_numbers') is False for r in rows) else 'yes'} | "
                f"{min(r['load_before'] for r in rows)}–{max(r['load_after'] for r in rows)} |")
    return "\n".join(lines)


def machine() -> dict:
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor())
    memory = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                  if line.startswith("MemTotal"))
    java = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr.splitlines()[0]
    return {"cpu": model, "cores": os.cpu_count(), "memory_gib": round(memory / 2**20, 1),
            "python": platform.python_version(), "java": java, "os": platform.platform()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", default="1000000,10000000")
    parser.add_argument("--runs", default="3,3", help="cold runs per size (one number per size)")
    parser.add_argument("--masters", default="local[2]")
    parser.add_argument("--warm-runs", type=int, default=5, help="warm dashboard runs on the largest size (0: none)")
    parser.add_argument("--warm-add", type=int, default=200_000, help="records added before each warm run")
    parser.add_argument("--warm-idle", type=int, default=0, help="warm runs with nothing new, before the additions")
    parser.add_argument("--warm-table", type=Path,
                        help="an ingested table of the largest size's directory: the warm process starts from a "
                             "copy of it instead of building one (its format must be the code's)")
    parser.add_argument("--templates", type=Path, help="replay logs to derive sessions from")
    parser.add_argument("--work", type=Path, help="where generated data goes, kept and reused (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the generated data")
    parser.add_argument("--before", metavar="COMMIT", help="also run this commit's job in every cold run (git archive)")
    parser.add_argument("--event-log", type=Path, help="write every Spark run's event log into this directory")
    parser.add_argument("--json", type=Path, help="write the raw results here")
    parser.add_argument("--warm-worker", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.warm_worker:
        data, out, templates_dir, runs, add, idle = args.warm_worker
        return warm_worker(data, out, templates_dir, int(runs), int(add), int(idle))
    sizes = [int(s) for s in args.records.split(",")]
    runs = [int(r) for r in args.runs.split(",")]
    runs += [runs[-1]] * (len(sizes) - len(runs))
    work = args.work or Path(tempfile.mkdtemp(prefix="kclab-stats-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    env = event_log_env(args.event_log, work) if args.event_log else {}
    results = []
    try:
        templates_dir = args.templates or work / "templates"
        paths = sorted(templates_dir.glob("*.jsonl")) or make_templates(templates_dir)
        templates = [load_log(p) for p in paths]
        print(f"{len(templates)} templates, {sum(len(t[1]) for t in templates)} records", file=sys.stderr)
        before = archived(args.before, work / f"before-{args.before}") if args.before else None
        for size, count in zip(sizes, runs):
            data, counts = generated(work, templates, size)
            rows = run_size(data, work / f"out-{size}", args.masters.split(","), count, env, before)
            results.append({"records": counts["records"], "generated": counts, "rows": rows})
        if args.warm_runs:
            warm_data = work / "replays-warm"
            shutil.rmtree(warm_data, ignore_errors=True)
            # Hard links: the logs are only read, and new ones are added beside them (3 GB at 10M).
            shutil.copytree(work / f"replays-{sizes[-1]}", warm_data, copy_function=os.link)
            rows = warm_runs(warm_data, work, templates_dir, args.warm_runs, args.warm_add, env, args.warm_idle,
                             args.warm_table)
            results.append({"records": rows[-1]["records"], "rows": rows[1:], "build": rows[0]})
            shutil.rmtree(warm_data, ignore_errors=True)
    finally:
        if not (args.keep or args.work):
            shutil.rmtree(work, ignore_errors=True)
    report = {"machine": machine(), "command": " ".join(sys.argv), "results": results}
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    print(json.dumps(report["machine"]))
    print(table(results))
    return 0


def event_log_env(directory: Path, work: Path) -> dict:
    """SPARK_CONF_DIR with a spark-defaults.conf that writes plain-text event logs to ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    conf = work / "spark-conf"
    conf.mkdir(exist_ok=True)
    (conf / "spark-defaults.conf").write_text(
        f"spark.eventLog.enabled true\nspark.eventLog.dir file://{directory.resolve()}\n"
        "spark.eventLog.compress false\nspark.eventLog.rolling.enabled false\n")
    return {"SPARK_CONF_DIR": str(conf)}


if __name__ == "__main__":
    sys.exit(main())
