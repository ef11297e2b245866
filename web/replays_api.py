"""Recorded sessions over HTTP: the list (with filters), export, import, one log's records, and
the ``/replays`` page that uses them.

The logs are the files the app's sandboxes, lessons and class demos write (the sandbox
manager's replay directory), plus imported ones. The handlers only translate HTTP to calls of
``backend.runtime.replay_index`` and its errors to ``{ok: false, error}`` with a status; the
endpoints are described in ``/api/openapi.json`` (``web/openapi.py``).
"""

from __future__ import annotations

import threading
from datetime import date, datetime, timezone
from pathlib import Path

from flask import Blueprint, current_app, g, jsonify, request, send_file, send_from_directory
from werkzeug.exceptions import RequestEntityTooLarge

from backend.runtime.replay_index import ImportRefused, ReplayIndex, ReplayNameError, UnknownReplay
from web.replay_access import ReplayAccess
from web.service import ApiError, int_param, quoted, records_page

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_IMPORT_MAX_BYTES = 32 * 1024 * 1024
DEFAULT_IMPORT_QUOTA_BYTES = 256 * 1024 * 1024
IMPORTED = "imported-replays"
MAX_REPLAY_TOKENS = 100
bp = Blueprint("replays", __name__)


def init_app(app) -> None:
    """Two indexes per app: the directory its sandboxes write their logs to, and
    ``imported-replays/`` beside it (imports are kept apart, so the statistics job, which reads
    the replay directory, leaves them out unless an instructor points it at them; a directory
    inside it would make Spark's file listing see two levels). Outside tests the
    logs not seen yet are checked in the background, so the first visitor of /replays does not
    wait for that (a thousand new logs take seconds; known ones are remembered)."""
    app.config.setdefault("REPLAY_IMPORT_MAX_BYTES", DEFAULT_IMPORT_MAX_BYTES)
    app.config.setdefault("REPLAY_IMPORT_QUOTA_BYTES", DEFAULT_IMPORT_QUOTA_BYTES)
    directory = app.extensions["kclab"].sandboxes.replay_dir
    indexes = (ReplayIndex(directory), ReplayIndex(directory.parent / IMPORTED))
    app.extensions["kclab_replays"] = indexes
    app.register_blueprint(bp)
    if not app.config.get("TESTING"):
        for each in indexes:
            threading.Thread(target=each.entries, name="replay-index", daemon=True).start()


def index(name: str | None = None) -> ReplayIndex:
    """The index that holds ``name`` (imported logs are named ``<session>.imported[-N].jsonl``)."""
    recorded, imported = current_app.extensions["kclab_replays"]
    return imported if name is not None and ".imported" in name else recorded


def live_names() -> set[str]:
    """Logs being written right now: the app's open sandboxes, lessons and class demos."""
    return {f"{s.id}.jsonl" for s in current_app.extensions["kclab"].sandboxes.all() if not s.closed}


def _path(name: str) -> Path:
    """The log's path, if the caller may open it. Without any token the answer is a 404, as for
    a log that is not there (which logs exist is itself not everyone's business); with a token
    that does not open it, a 403 that says which token would."""
    try:
        path = index(name).path(name)
    except ReplayNameError as exc:
        raise ApiError(400, str(exc)) from None
    except UnknownReplay as exc:
        raise ApiError(404, str(exc)) from None
    access = caller_access()
    if access.may_open(name):
        return path
    if access.anonymous:
        raise ApiError(404, f"there is no replay log named {name!r} that you may open (send your sandbox's token)")
    raise ApiError(403, "this replay log is not yours: open it with the token of the sandbox it recorded (your "
                        "browser keeps it), or the instructor's token")


def caller_access() -> ReplayAccess:
    """Who asks, from the request's headers (computed once per request)."""
    if "kclab_replay_access" not in g:
        instructor = request.headers.get("X-Instructor-Token")
        registry = current_app.extensions["kclab"].classes
        try:
            registry.check_instructor(instructor)
            is_instructor = True
        except ApiError:
            is_instructor = False
        tokens = [request.headers.get("X-Sandbox-Token") or "",
                  *(request.headers.get("X-Replay-Tokens") or "").split(",")[:MAX_REPLAY_TOKENS]]
        g.kclab_replay_access = ReplayAccess(current_app.extensions["kclab"].sandboxes.replay_dir, is_instructor,
                                             {t.strip() for t in tokens if 0 < len(t.strip()) <= 100})
    return g.kclab_replay_access


@bp.get("/replays")
def page():
    return send_from_directory(ROOT / "static", "replays.html", max_age=0)


@bp.get("/api/replays")
def list_replays():
    """Newest first. Filters: class, lesson, mode, student (exact), since/until (started at)."""
    args = request.args
    since, until = _time(args.get("since"), "since"), _time(args.get("until"), "until", end_of_day=True)
    wanted = {"class_id": args.get("class"), "lesson_id": args.get("lesson"), "mode": args.get("mode"),
              "student": args.get("student")}
    access, live = caller_access(), live_names()
    entries = [e for e in sorted((*index().entries(live), *index("x.imported").entries()),
                                 key=lambda e: (e["started_ms"] or e["modified_ms"], e["name"]), reverse=True)
               if access.may_open(e["name"])
               and all(not value or e[key] == value for key, value in wanted.items())
               and (since is None or (e["started_ms"] is not None and e["started_ms"] >= since))
               and (until is None or (e["started_ms"] is not None and e["started_ms"] <= until))]
    limit = int_param(args.get("limit"), "limit", len(entries))
    return jsonify({"replays": entries[:limit], "total": len(entries)})


@bp.get("/api/replays/<name>")
def export_replay(name: str):
    """The log itself, as a download (export). ``X-Replay-Live: 1`` while it is being recorded:
    its last line may then still be on its way, which is not damage."""
    path = _path(name)
    live = name in live_names()
    if live:  # still growing: send the bytes read now, so the length sent is the length said
        response = current_app.response_class(path.read_bytes(), mimetype="application/x-ndjson")
        response.headers["Content-Disposition"] = f"attachment; filename={name}"
    else:
        response = send_file(path, mimetype="application/x-ndjson", as_attachment=True, download_name=name,
                             max_age=0, conditional=False, etag=False)
    response.headers["X-Replay-Live"] = "1" if live else "0"
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.get("/api/replays/<name>/entry")
def describe_replay(name: str):
    _path(name)
    return jsonify(index(name).entry(name, live=name in live_names()))


@bp.get("/api/replays/<name>/records")
def replay_records(name: str):
    """Records with seq >= since, as the sandbox records API answers, plus where the log is damaged."""
    _path(name)
    replay = index(name).read(name)
    end = replay.records[-1].seq + 1 if replay.records else 0
    page = records_page(request.args.get("since"), request.args.get("limit"),
                        lambda first, n: replay.records[first:first + n], end)  # seqs are dense from 0
    return jsonify({**page,
                    "header": replay.header.to_dict() if replay.header else None,
                    "damage": replay.damage.to_dict() if replay.damage else None,
                    "live": name in live_names()})


@bp.post("/api/replays")
def import_replay():
    """Import a log: a multipart form's ``file``, or the raw body. The instructor's only, and
    within a quota: an import is stored on the server's disk for good."""
    current_app.extensions["kclab"].classes.check_instructor(request.headers.get("X-Instructor-Token"))
    imports = index("x.imported")
    quota = current_app.config["REPLAY_IMPORT_QUOTA_BYTES"]
    used = sum(e["size"] for e in imports.entries())
    limit = current_app.config["REPLAY_IMPORT_MAX_BYTES"]
    too_large = ApiError(413, f"the replay log is too large: at most {limit} bytes can be imported")
    if request.content_length is not None and request.content_length > limit + 64 * 1024:
        raise too_large
    request.max_content_length = limit + 64 * 1024  # the form's own bytes on top of the file's
    try:
        if request.mimetype == "multipart/form-data":
            upload = request.files.get("file")
            if upload is None:
                raise ApiError(400, "send the replay log as the form field 'file'")
            data = upload.read(limit + 1)
        else:
            data = request.get_data(cache=False)
    except RequestEntityTooLarge:
        raise too_large from None
    if len(data) > limit:
        raise too_large
    if not data:
        raise ApiError(400, "the replay log is empty")
    if used + len(data) > quota:
        raise ApiError(507, f"the imported logs already take {used} bytes; at most {quota} may be imported "
                            f"(delete some from {imports.directory})")
    try:
        entry, created = imports.store(data, originals=index())
    except ImportRefused as exc:
        raise ApiError(400, str(exc)) from None
    return jsonify({"ok": True, "created": created, **entry}), 201 if created else 200


def _time(value: str | None, name: str, end_of_day: bool = False) -> int | None:
    """ms since the epoch, from a whole number (ms), an ISO date (UTC; ``until`` takes the whole
    day) or an ISO date and time."""
    if value is None or value == "":
        return None
    if value.lstrip("-").isdigit():
        return int(value)
    try:
        if len(value) == 10:
            day = date.fromisoformat(value)
            start = datetime(day.year, day.month, day.day, tzinfo=timezone.utc)
            return int(start.timestamp() * 1000) + (86_400_000 - 1 if end_of_day else 0)
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise ApiError(400, f"{name} must be a date (2026-11-21), a date and time or ms since the epoch, "
                            f"got {quoted(value)}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000)
