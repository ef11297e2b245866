"""How the statistics job scales: Spark (local[1], local[2]) against plain single-process Python.

    .venv/bin/python bench/stats_scale.py --records 100000,1000000,10000000 --runs 3,3,1

1. Templates: replay logs of real runs. ``--templates DIR`` uses existing logs; by default every
   script in lessons/scripts/ is run once on an embedded ZooKeeper (about 1.5 minutes).
2. For each size, a replay directory of that many records is generated from the templates
   (``backend.stats.synthetic``): many sessions, the record mix of real runs, re-dressed as
   free play (45%), solo lessons (25%), class demos (15%) and script runs (15%), 20 classes,
   30 days, durations stretched 0.6-1.8x, one damaged line in every 5,000 sessions.
3. Each measured command runs as a subprocess, cold, as a user runs it: ``kclab stats`` (JVM
   start included) and ``python -m backend.stats.baseline``. Wall time, and the peak of the summed
   RSS of the process and all its children (driver, JVM, Python workers), sampled every 0.1 s.
4. The Spark summary's headline numbers must equal the baseline's (checked every run).
5. Generated data is deleted at the end (``--keep`` keeps it).

Prints a Markdown table and writes the raw results as JSON (``--json``). The load average of the
machine is recorded with every measurement: on a shared machine it explains outliers.
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
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from backend.stats.synthetic import derive, load_log, write_log  # noqa: E402

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


def generate(directory: Path, templates: list, records: int, seed: int = 1) -> dict:
    """At least ``records`` records in many sessions; returns counts."""
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
        sid = f"bench-{sessions:07d}"
        lines = derive(template, session_id=sid, mode=mode, rng=rng,
                       started_ms=start + rng.randrange(30) * DAY_MS + rng.randrange(DAY_MS),
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


class PeakRss:
    """Peak of the summed memory (PSS) of a process and its descendants, sampled in a thread."""

    def __init__(self, pid: int, interval: float = 0.2) -> None:
        self.pid, self.interval, self.peak = pid, interval, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, sum(_rss(p) for p in _tree(self.pid)))


def _tree(root: int) -> list[int]:
    """The process and its descendants, less a JVM's transient helpers: to run ``chmod`` (Hadoop's
    local file system does, for every file it writes) the JVM spawns a child that shares its
    memory until it execs, and counting it would count the JVM twice."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        parent_exe = _exe(pid)
        todo.extend(c for c in children.get(pid, []) if _exe(c) != parent_exe)
    return out


def _exe(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return ""


def _rss(pid: int) -> int:
    """Proportional set size: pages shared between processes are split among them. Plain RSS
    would count the JVM several times over whenever it forks a helper (Hadoop's local file
    system runs shell commands), which briefly shares all its pages."""
    try:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def measure(command: list[str]) -> dict:
    load_before = os.getloadavg()[0]
    started = time.monotonic()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    sampler = PeakRss(process.pid)
    stdout, stderr = process.communicate()
    seconds = time.monotonic() - started
    peak = sampler.stop()
    if process.returncode != 0:
        raise RuntimeError(f"{command[:3]} failed:\n{stderr[-2000:]}")
    return {"seconds": round(seconds, 2), "peak_rss_mb": round(peak / 2**20), "stdout": stdout,
            "load_before": round(load_before, 1), "load_after": round(os.getloadavg()[0], 1)}


def headline_equal(summary: dict, baseline: dict) -> bool:
    def close(a, b):
        if isinstance(a, dict) and isinstance(b, dict):
            return a.keys() == b.keys() and all(close(a[k], b[k]) for k in a)
        if isinstance(a, float) or isinstance(b, float):
            return a is not None and b is not None and abs(a - b) <= 1e-6 * max(1.0, abs(b))
        return a == b
    return close(json.loads(json.dumps(summary["headline"])), json.loads(json.dumps(baseline["headline"])))


def run_size(data: Path, out: Path, masters: list[str], runs: int) -> list[dict]:
    rows = []
    for i in range(runs):
        base = measure([PYTHON, "-m", "backend.stats.baseline", str(data)])
        expected = json.loads(base["stdout"])
        rows.append({"engine": "python", "run": i, **{k: v for k, v in base.items() if k != "stdout"}})
        for master in masters:
            result = measure([KCLAB, "stats", "--replays", str(data), "--out", str(out), "--master", master, "--quiet"])
            summary = json.loads((out / "summary.json").read_text())
            rows.append({"engine": master, "run": i, **{k: v for k, v in result.items() if k != "stdout"},
                         "job_seconds": summary["timings_s"]["total"],
                         "session_seconds": summary["timings_s"]["spark_session"],
                         "same_numbers": headline_equal(summary, expected),
                         "records": summary["input"]["records"]})
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
        print(json.dumps(rows[-1 - len(masters)]), file=sys.stderr, flush=True)
    return rows


def table(results: list[dict]) -> str:
    lines = ["| records | engine | runs | wall s (median) | records/s | job s (no JVM start) | peak memory MB (PSS) | "
             "same numbers | load avg |", "|---|---|---|---|---|---|---|---|---|"]
    for size in results:
        by_engine: dict[str, list[dict]] = {}
        for row in size["rows"]:
            by_engine.setdefault(row["engine"], []).append(row)
        for engine, rows in by_engine.items():
            wall = statistics.median(r["seconds"] for r in rows)
            job = statistics.median(r.get("job_seconds", r["seconds"]) for r in rows)
            lines.append(
                f"| {size['records']:,} | {engine} | {len(rows)} | {wall:.1f} | {size['records'] / wall:,.0f} | "
                f"{job:.1f} | {max(r['peak_rss_mb'] for r in rows):,} | "
                f"{'yes' if all(r.get('same_numbers', True) for r in rows) else 'NO'} | "
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
    parser.add_argument("--records", default="100000,1000000,10000000")
    parser.add_argument("--runs", default="3,3,1", help="runs per size (one number per size)")
    parser.add_argument("--masters", default="local[1],local[2]")
    parser.add_argument("--templates", type=Path, help="replay logs to derive sessions from")
    parser.add_argument("--work", type=Path, help="where generated data goes (default: a temp dir)")
    parser.add_argument("--keep", action="store_true", help="keep the generated data")
    parser.add_argument("--json", type=Path, help="write the raw results here")
    args = parser.parse_args()
    sizes = [int(s) for s in args.records.split(",")]
    runs = [int(r) for r in args.runs.split(",")]
    runs += [runs[-1]] * (len(sizes) - len(runs))
    work = args.work or Path(tempfile.mkdtemp(prefix="kclab-stats-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    results = []
    try:
        paths = sorted(args.templates.glob("*.jsonl")) if args.templates else make_templates(work / "templates")
        templates = [load_log(p) for p in paths]
        print(f"{len(templates)} templates, {sum(len(t[1]) for t in templates)} records", file=sys.stderr)
        for size, count in zip(sizes, runs):
            data = work / f"replays-{size}"
            t = time.monotonic()
            generated = generate(data, templates, size)
            print(f"generated {generated} in {time.monotonic() - t:.0f} s", file=sys.stderr, flush=True)
            rows = run_size(data, work / f"out-{size}", args.masters.split(","), count)
            results.append({"records": generated["records"], "generated": generated, "rows": rows})
            if not args.keep:
                shutil.rmtree(data, ignore_errors=True)
                shutil.rmtree(work / f"out-{size}", ignore_errors=True)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    report = {"machine": machine(), "command": " ".join(sys.argv), "results": results}
    if args.json:
        args.json.write_text(json.dumps(report, indent=2))
    print(json.dumps(report["machine"]))
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
