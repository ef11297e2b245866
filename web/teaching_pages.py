"""The pages of lessons and classes.

``/lessons`` is the lesson list (its own small page: starting a walkthrough hands the main page
a new sandbox). ``/join`` (a student) and ``/instructor`` (``kclab serve`` prints the link, the
token after ``#`` so it never reaches a server log) are the main page itself: the same cluster
views, with the class's panels added by ``static/js/class-student.js`` / ``class-instructor.js``,
which ``app.js`` loads for these paths.
"""

from __future__ import annotations

from pathlib import Path

from flask import Blueprint, send_from_directory

STATIC = Path(__file__).resolve().parents[1] / "static"
bp = Blueprint("teaching_pages", __name__)


@bp.get("/lessons")
def lessons():
    return send_from_directory(STATIC, "lessons.html", max_age=0)


@bp.get("/join")
def join():
    return send_from_directory(STATIC, "index.html", max_age=0)


@bp.get("/instructor")
def instructor():
    return send_from_directory(STATIC, "index.html", max_age=0)
