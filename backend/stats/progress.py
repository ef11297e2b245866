"""Progress of a long job: phases we name, stages and tasks Spark reports.

The job runs as a list of phases (load, then one per dataset — several at once — then the
summary). Each phase sets a Spark job group in its own thread; a daemon thread polls
``SparkContext.statusTracker()`` every half second for the jobs of the running phases and
their stages, and reports a snapshot — to stderr (one line when something changed, at most
every 2 s, so a terminal or a CI log stays readable) and to an optional callback (the web
dashboard's progress bar). Polling rather than a SparkListener: a listener needs JVM-side
code, the StatusTracker is public Python API.

A snapshot is a plain dict, safe to send as JSON; ``phase_index`` counts finished phases::

    {"state": "running", "phase": "failover, offline_windows", "phase_index": 3, "phases": 17,
     "fraction": 0.21, "elapsed_s": 12.4,
     "stages": [{"id": 17, "name": "parquet at …", "tasks": 8, "done": 3, "active": 2, "failed": 0}]}
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from typing import Callable, TextIO

Callback = Callable[[dict], None]


class Progress:
    def __init__(self, spark_context, phases: list[str], callback: Callback | None = None,
                 stream: TextIO | None = sys.stderr, interval_s: float = 0.5, print_every_s: float = 2.0) -> None:
        self._sc = spark_context
        self.phases = list(phases)
        self._callback = callback
        self._stream = stream
        self._interval = interval_s
        self._print_every = print_every_s
        self._group_prefix = f"kclab-stats-{id(self):x}"
        self._active: list[str] = []
        self._done = 0
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._last_line = ""
        self._last_print = 0.0
        self._thread = threading.Thread(target=self._run, name="kclab-stats-progress", daemon=True)
        self._current = threading.local()  # the phase this thread runs, for attach()

    def __enter__(self) -> "Progress":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(5)

    @contextlib.contextmanager
    def phase(self, name: str):
        """Run the body as phase ``name`` (in any thread): its Spark jobs get the phase's group."""
        with self._lock:
            self._active.append(name)
        self._current.name = name
        self._set_group(name)
        started = time.monotonic()
        try:
            yield
        finally:
            self._current.name = None
            with self._lock:
                self._active.remove(name)
                self._done += 1
            self.report(force=True, done_phase=(name, time.monotonic() - started))

    def attach(self, spark_context) -> None:
        """Follow a SparkContext started after the job began (``spark_context=None`` at first: a
        run with nothing new starts none); the phase this thread runs gets its job group now."""
        self._sc = spark_context
        if getattr(self._current, "name", None):
            self._set_group(self._current.name)

    def _set_group(self, name: str) -> None:
        if self._sc is not None:
            self._sc.setJobGroup(self._group(name), f"kclab stats: {name}", interruptOnCancel=False)

    def snapshot(self) -> dict:
        with self._lock:
            active, done = list(self._active), self._done
        stages, within = [], 0.0
        for name in active:
            phase_stages = self._stages(name)
            total = sum(s["tasks"] for s in phase_stages)
            within += (sum(s["done"] for s in phase_stages) / total) if total else 0.0
            stages.extend(phase_stages)
        stages.sort(key=lambda s: s["id"])
        return {"state": "running", "phase": ", ".join(active) or None, "phase_index": done,
                "phases": len(self.phases),
                "fraction": round(min(1.0, (done + within) / max(1, len(self.phases))), 4),
                "elapsed_s": round(time.monotonic() - self._started, 2), "stages": stages[-6:]}

    def report(self, force: bool = False, done_phase: tuple[str, float] | None = None) -> None:
        snap = self.snapshot()
        if done_phase:
            snap["phase_done"] = {"phase": done_phase[0], "seconds": round(done_phase[1], 3)}
        if self._callback:
            try:
                self._callback(snap)
            except Exception:  # noqa: BLE001 - a broken progress display must not stop the job
                pass
        self._print(snap, force)

    def _print(self, snap: dict, force: bool) -> None:
        if self._stream is None:
            return
        stage_text = ", ".join(f"stage {s['id']} {s['done']}/{s['tasks']} tasks" for s in snap["stages"]) or "…"
        if "phase_done" in snap:
            line = (f"stats [{snap['phase_index']}/{snap['phases']}] {snap['phase_done']['phase']}: "
                    f"done in {snap['phase_done']['seconds']:.1f} s")
        else:
            line = f"stats [{snap['phase_index']}/{snap['phases']}] {snap['phase']}: {stage_text}"
        now = time.monotonic()
        if line != self._last_line and (force or now - self._last_print >= self._print_every):
            print(line, file=self._stream, flush=True)
            self._last_line, self._last_print = line, now

    def _group(self, name: str) -> str:
        return f"{self._group_prefix}:{name}"

    def _stages(self, phase: str) -> list[dict]:
        if self._sc is None:
            return []
        tracker = self._sc.statusTracker()
        stages = []
        try:
            for job_id in tracker.getJobIdsForGroup(self._group(phase)):
                job = tracker.getJobInfo(job_id)
                if job is None:
                    continue
                for stage_id in job.stageIds:
                    info = tracker.getStageInfo(stage_id)
                    if info is None or info.numTasks == 0:
                        continue
                    stages.append({"id": stage_id, "name": info.name, "tasks": info.numTasks,
                                   "done": info.numCompletedTasks, "active": info.numActiveTasks,
                                   "failed": info.numFailedTasks})
        except Exception:  # noqa: BLE001 - the context may be stopping; progress is best effort
            return []
        return sorted(stages, key=lambda s: s["id"])

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            self.report()
