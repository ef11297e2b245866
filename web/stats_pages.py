"""The instructor's statistics dashboard: ``/stats``, its JSON API, the job in the background.

- ``GET /stats``                 the page (``static/stats.html``)
- ``GET /api/stats/summary``     the latest run's ``summary.json`` (404 with the number of replay
                                 logs when there is none yet, so the page can say which empty state)
- ``GET /api/stats/<dataset>``   that dataset's rows; any query parameter that names a column
                                 filters on it (``?scope=cell&class_id=A``), ``limit`` caps the rows
- ``POST /api/stats/run``        start the job over ``<DATA_DIR>/replays`` (202), 409 while one runs;
                                 only logs new since the last run are parsed (``<DATA_DIR>/stats-table``)
- ``GET /api/stats/progress``    idle / running (phase, fraction, Spark stages) / done / failed

The output lives in ``<DATA_DIR>/stats`` and is read from the job's JSON copies: the web
process needs no Parquet reader, and showing a chart never touches Spark. The job runs in one
background thread per app, one run at a time, on the process's one SparkSession
(``backend.stats.session``), never one per request: opening ``/stats`` starts it in the
background and runs its parse once on a few logs, so it is warm by the time the instructor
presses Run. Its master is
``KCLAB_SPARK_MASTER`` (docker-compose: the compose file's Spark cluster), else local mode.
Heavy imports (pyspark) happen in those threads, so an app whose /stats is never opened never
loads them.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any, Callable

from flask import Blueprint, current_app, jsonify, request, send_from_directory

from backend.stats.session import configured_master
from web.service import int_param

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_LIMIT, MAX_LIMIT = 20_000, 200_000

bp = Blueprint("stats", __name__)

RunFunction = Callable[[Path, Path, Callable[[dict], None]], dict]


def spark_job(replays: Path, out: Path, progress: Callable[[dict], None], master: str) -> dict:
    """The real run: the process's SparkSession (created on first use, then kept warm) and the
    job over the ingested table beside the output (``<DATA_DIR>/stats-table``): a run reads only
    the logs that are new since the last one."""
    from backend.stats.job import run_job
    from backend.stats.session import spark_session
    return run_job(replays, out, spark=spark_session(master), progress=progress, stream=None)


def warm_spark(master: str, replays: Path) -> None:
    """Start the process's SparkSession now (the JVM and the context take seconds) and run its
    parse once on a few logs (``backend.stats.job.warm_up``), so that the instructor's first
    Run waits for neither."""
    from backend.stats.job import warm_up
    from backend.stats.session import spark_session
    warm_up(spark_session(master), replays)


class StatsRunner:
    """Runs the job in a background thread, one run at a time, and keeps its progress."""

    def __init__(self, replays: Path, out: Path, run: RunFunction, warm: Callable[[], None] | None = None) -> None:
        self.replays, self.out, self._run, self._warm = replays, out, run, warm
        self._lock = threading.Lock()
        self._state: dict[str, Any] = {"state": "idle"}
        self._thread: threading.Thread | None = None
        self._warming: threading.Thread | None = None

    def warm(self) -> None:
        """Start the Spark session in the background, once (the page calls this when it opens)."""
        with self._lock:
            if self._warm is None or self._warming is not None:
                return
            self._warming = threading.Thread(target=self._warm_quietly, name="kclab-stats-warm", daemon=True)
            self._warming.start()

    def _warm_quietly(self) -> None:
        try:
            self._warm()
        except Exception:  # noqa: BLE001 - a Run will start the session again and show the error
            pass

    def start(self) -> bool:
        """Start a run; False if one is already running."""
        with self._lock:
            if self._state["state"] == "running":
                return False
            self._state = {"state": "running", "phase": "starting Spark", "fraction": 0.0, "stages": [],
                           "started_at": time.time()}
            self._thread = threading.Thread(target=self._work, name="kclab-stats-job", daemon=True)
            self._thread.start()
            return True

    def progress(self) -> dict[str, Any]:
        with self._lock:
            state = dict(self._state)
        if state["state"] == "running":
            state["elapsed_s"] = round(time.time() - state["started_at"], 1)
        return state

    def wait(self, timeout: float | None = None) -> None:
        thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def _on_progress(self, snapshot: dict) -> None:
        with self._lock:
            if self._state["state"] == "running":
                self._state.update({k: snapshot[k] for k in ("phase", "phase_index", "phases", "fraction", "stages")
                                    if k in snapshot})

    def _work(self) -> None:
        try:
            summary = self._run(self.replays, self.out, self._on_progress)
            outcome = {"state": "done", "fraction": 1.0,
                       "records": summary.get("input", {}).get("records"),
                       "new_logs": summary.get("ingest", {}).get("read_files"),
                       "seconds": summary.get("timings_s", {}).get("total")}
        except Exception as error:  # noqa: BLE001 - shown to the instructor, not raised in a thread
            current = f"{type(error).__name__}: {error}"
            outcome = {"state": "failed", "error": current.splitlines()[0][:500]}
        with self._lock:
            self._state = {**outcome, "started_at": self._state.get("started_at"), "finished_at": time.time()}


@bp.record_once
def _set_up(setup_state) -> None:
    app = setup_state.app
    data = Path(app.config["DATA_DIR"])
    run, warm = app.config.get("STATS_RUN"), None
    if run is None:
        master = app.config.get("STATS_MASTER") or configured_master()

        def run(replays, out, progress):
            return spark_job(replays, out, progress, master)

        def warm():
            warm_spark(master, data / "replays")
    app.extensions["kclab_stats"] = StatsRunner(data / "replays", data / "stats", run, warm)


def runner() -> StatsRunner:
    return current_app.extensions["kclab_stats"]


def _error(status: int, message: str, **extra):
    return jsonify({"ok": False, "error": message, **extra}), status


def _replay_logs() -> int:
    directory = runner().replays
    return sum(1 for _ in directory.glob("*.jsonl")) if directory.is_dir() else 0


_cache: dict[tuple[str, float], Any] = {}
_cache_lock = threading.Lock()


def _read_cached(path: Path, parse: Callable[[Path], Any]) -> Any:
    """Parsed file contents, re-read only when the file changed (a new run swaps the directory)."""
    mtime = path.stat().st_mtime
    key = (str(path), mtime)
    with _cache_lock:
        if key in _cache:
            return _cache[key]
    value = parse(path)
    with _cache_lock:
        for old in [k for k in _cache if k[0] == str(path)]:
            del _cache[old]
        _cache[key] = value
    return value


def _summary() -> dict | None:
    path = runner().out / "summary.json"
    try:
        return _read_cached(path, lambda p: json.loads(p.read_text(encoding="utf-8")))
    except FileNotFoundError:
        return None


def _rows(name: str) -> list[dict]:
    rows: list[dict] = []
    for part in sorted((runner().out / "json" / name).glob("part-*.json")):
        rows.extend(_read_cached(part, _parse_json_lines))
    return rows


def _parse_json_lines(path: Path) -> list[dict]:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


@bp.before_request
def _instructor_only():
    """The statistics name students and their answers: the instructor's token is needed for
    every /api/stats/ call (the page takes it from /stats#token=…, as the instructor page does)."""
    if request.path.startswith("/api/stats/"):
        current_app.extensions["kclab"].classes.check_instructor(request.headers.get("X-Instructor-Token"))


@bp.get("/stats")
def page():
    runner().warm()  # the instructor will press Run soon: start Spark meanwhile
    return send_from_directory(ROOT / "static", "stats.html", max_age=0)


@bp.get("/api/stats/summary")
def summary():
    data = _summary()
    if data is None:
        return _error(404, "no statistics yet: run the job", replay_logs=_replay_logs())
    return jsonify({**data, "replay_logs": _replay_logs()})


@bp.get("/api/stats/progress")
def progress():
    return jsonify(runner().progress())


@bp.post("/api/stats/run")
def run():
    if _replay_logs() == 0:
        return _error(400, f"no replay logs yet in {runner().replays}: play a lesson or a sandbox first")
    if not runner().start():
        return _error(409, "the statistics job is already running", progress=runner().progress())
    return jsonify({"ok": True, **runner().progress()}), 202


@bp.get("/api/stats/<name>")
def dataset(name: str):
    data = _summary()
    if data is None:
        return _error(404, "no statistics yet: run the job", replay_logs=_replay_logs())
    if name not in data.get("datasets", {}):
        return _error(404, f"no dataset {name!r}; the latest run wrote {', '.join(data.get('datasets', {}))}")
    limit = min(int_param(request.args.get("limit"), "limit", DEFAULT_LIMIT), MAX_LIMIT)
    filters = {k: v for k, v in request.args.items() if k != "limit"}
    try:
        rows = _rows(name)
    except FileNotFoundError:  # a new run was swapped in between two reads
        return _error(503, "the statistics are being replaced by a new run: try again")
    matching = [r for r in rows if all(_text(r.get(k)) == v for k, v in filters.items())]
    return jsonify({"ok": True, "dataset": name, "rows": matching[:limit], "total": len(matching),
                    "truncated": len(matching) > limit, "generated_at": data.get("generated_at")})


def openapi_paths() -> dict:
    """This blueprint's part of ``/api/openapi.json`` (for ``web/openapi.py``: ``**openapi_paths()``)."""
    def answer(description: str) -> dict:
        return {"description": description, "content": {"application/json": {"schema": {"type": "object"}}}}

    def error(why: str) -> dict:
        return {"description": why, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}

    none_yet = error("no statistics yet (the body says how many replay logs there are)")
    paths = {
        "/api/stats/summary": {"get": {"summary": "Headline numbers of the latest statistics run (summary.json)",
                                       "responses": {"200": answer("OK"), "404": none_yet}}},
        "/api/stats/{name}": {
            "parameters": [{"name": "name", "in": "path", "required": True, "schema": {"type": "string"},
                            "description": "a dataset of the latest run (summary.json lists them)"},
                           {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 0}}],
            "get": {"summary": "Rows of one dataset; any other query parameter filters on the column it names "
                               "(scope, class_id, lesson_id, date, ...)",
                    "responses": {"200": answer("OK: rows, total, truncated"), "400": error("bad limit"),
                                  "404": error("no statistics yet, or no such dataset"),
                                  "503": error("a new run is being swapped in: try again")}}},
        "/api/stats/run": {"post": {"summary": "Start the statistics job over the replay logs, in the background",
                                    "responses": {"202": answer("started"), "400": error("no replay logs yet"),
                                                  "409": error("a run is already going on")}}},
        "/api/stats/progress": {"get": {"summary": "The job: idle, running (phase, fraction, Spark stages), done or "
                                                   "failed", "responses": {"200": answer("OK")}}},
    }
    for item in paths.values():
        for method, operation in item.items():
            if method in ("get", "post"):
                operation["security"] = [{"instructorToken": []}]
                operation["responses"]["403"] = error("the instructor token is missing or wrong")
    return paths


def _text(value: Any) -> str:
    """A column value as a query parameter spells it (null: empty)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
