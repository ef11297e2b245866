"""HTTP API for lessons and classes (the page's walkthrough, class and authoring screens)."""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, current_app, jsonify, request

from web import server_load, service, teaching
from web.api import body, manager, token

bp = Blueprint("teaching", __name__, url_prefix="/api")


def classes():
    return current_app.extensions["kclab"].classes


def uploads() -> Path:
    return Path(current_app.config["DATA_DIR"]) / "lessons"


def instructor_token() -> str | None:
    return request.headers.get("X-Instructor-Token")


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name.lower())[:40] or "instructor"


# -- lessons and walkthroughs --------------------------------------------------------------------
@bp.get("/lessons")
def lessons():
    return jsonify(teaching.course_listing(uploads()))


@bp.get("/lessons/<path:lesson_id>")
def lesson(lesson_id):
    entry = next((e for e in teaching.lesson_entries(uploads()) if e.id == lesson_id), None)
    if entry is None:
        raise service.ApiError(404, f"there is no lesson {lesson_id!r}")
    return jsonify(teaching.describe_entry(entry))


@bp.post("/lessons/<path:lesson_id>/walkthrough")
def walkthrough(lesson_id):
    sandbox = teaching.start_walkthrough(manager(), teaching.find_lesson(lesson_id, uploads()), lesson_id)
    return jsonify({"id": sandbox.id, "token": sandbox.token, **sandbox.describe()}), 201


@bp.post("/sandboxes/<sandbox_id>/lesson/<action>")
def lesson_action(sandbox_id, action):
    data = body() or {}
    if action == "continue":
        return jsonify(teaching.press_continue(manager(), sandbox_id, token()))
    if action == "answer":
        return jsonify(teaching.answer(manager(), sandbox_id, token(), data.get("question"), data.get("answer")))
    if action in ("replay", "restart", "try"):
        step = data.get("step", 1) if action != "restart" else 1
        new = teaching.rewind(manager(), sandbox_id, token(), step, uploads(), free_play=action == "try")
        return jsonify({"id": new.id, "token": new.token, **new.describe()}), 201
    raise service.ApiError(404, f"no lesson action {action!r}; use continue, answer, replay, restart or try")


# -- authoring ------------------------------------------------------------------------------------
@bp.post("/lessons/check")
def check_lesson():
    known = {e.id for e in teaching.lesson_entries(uploads())}
    return jsonify(teaching.check_lesson_text((body() or {}).get("text"), known))


@bp.post("/instructor/lessons")
def upload_lesson():
    classes().check_instructor(instructor_token())
    data = body() or {}
    saved = teaching.save_lesson(uploads(), _slug(str(data.get("instructor") or "instructor")), data.get("id"),
                                 data.get("text"))
    return jsonify(saved), 201


@bp.post("/instructor/lessons/dry-run")
def dry_run_lesson():
    classes().check_instructor(instructor_token())
    config = current_app.config
    return jsonify(teaching.dry_run((body() or {}).get("text"), config["ZK_HOSTS"],
                                    Path(config["DATA_DIR"]) / "dry-runs", config["ZK_CONTROL"]))


# -- classes ----------------------------------------------------------------------------------------
@bp.post("/classes")
def create_class():
    room = classes().create(instructor_token(), (body() or {}).get("instructor"))
    return jsonify(room.describe(for_instructor=True)), 201


@bp.get("/classes/<class_id>")
def describe_class(class_id):
    classes().check_instructor(instructor_token())
    return jsonify(classes().get(class_id).describe(for_instructor=True))


@bp.get("/classes/<class_id>/load")
def class_server_load(class_id):
    """Is the server keeping up with the class (``web/server_load.py``)? Every worker's figures."""
    classes().check_instructor(instructor_token())
    classes().get(class_id)  # an unknown class is a 404, as for its other calls
    return jsonify(server_load.whole_server(current_app.extensions["kclab"]))


@bp.get("/classes/<class_id>/handout")
def class_handout(class_id):
    """The class's last hand-out of private copies: built, failed (with reasons), remaining."""
    registry = classes()
    registry.check_instructor(instructor_token())
    return jsonify(registry.handout(registry.get(class_id)))


def handout_url(class_id: str) -> str:
    return f"{bp.url_prefix}/classes/{class_id}/handout"


@bp.post("/classes/join")
def join_class():
    data = body() or {}
    room, student = classes().join(data.get("code"), data.get("name"))
    return jsonify({"class": room.describe(), "student": {"id": student.id, "name": student.name},
                    "token": student.token}), 201


def class_token() -> str | None:
    """A class member's token: a student's (``X-Student-Token``) or the instructor's."""
    return request.headers.get("X-Student-Token") or instructor_token()


@bp.get("/classes/<class_id>/records")
def class_records(class_id):
    registry = classes()
    return jsonify(registry.records_since(registry.get(class_id), class_token(), request.args.get("session"),
                                          request.args.get("since"), request.args.get("limit")))


@bp.post("/classes/<class_id>/faults")
def class_fault(class_id):
    registry = classes()
    return jsonify(registry.act(registry.get(class_id), class_token(), body()))


@bp.post("/classes/<class_id>/<action>")
def class_action(class_id, action):
    registry = classes()
    registry.check_instructor(instructor_token())
    room, data = registry.get(class_id), body() or {}
    if action == "session":
        if data.get("lesson"):
            lesson_id = data["lesson"]
            session = registry.start_session(room, teaching.find_lesson(lesson_id, uploads()), lesson_key=lesson_id)
        else:
            session = registry.start_session(room, spec=service.parse_cluster({"cluster": data.get("cluster")}
                                                                              if data.get("cluster") else None))
        return jsonify({"id": session.id, "token": session.token, **session.describe()}), 201
    if action == "pause":
        registry.set_paused(room, bool(data.get("paused", True)))
        return jsonify(room.describe(for_instructor=True))
    if action == "continue":
        teaching.continue_lesson(room.audience)
        return jsonify({"ok": True})
    if action == "fork":  # answered at once; the copies are built in the background (web/handout.py)
        who = data.get("students", "all")
        if who not in ("all", "missing"):
            raise service.ApiError(400, f"'students' is 'all' (every student, the default) or 'missing' (those "
                                        f"without a running copy), not {service.quoted(who)}")
        handout = registry.fork(room, only_missing=who == "missing")
        return jsonify({"ok": True, "handout": handout}), 202, {"Location": handout_url(class_id)}
    raise service.ApiError(404, f"no class action {action!r}; use session, pause, continue or fork")
