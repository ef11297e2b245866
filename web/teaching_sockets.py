"""Socket.IO handlers for lessons and classes: a student's Continue and answers in a
walkthrough; joining a class (the pages follow its session live) and answering its questions."""

from __future__ import annotations

from flask import current_app, request
from flask_socketio import SocketIO, join_room, leave_room

from web import sockets, teaching
from web.broadcast import room as sandbox_room


def _state():
    return current_app.extensions["kclab"]


def on_lesson_continue(data):
    return teaching.press_continue(_state().sandboxes, data.get("sandbox"), data.get("token"))


def on_lesson_answer(data):
    return teaching.answer(_state().sandboxes, data.get("sandbox"), data.get("token"), data.get("question"),
                           data.get("answer"))


def on_join_class(data):
    """A student (their token) or the instructor (the instructor token) follows the class: its
    room for class events, and the current session's room for its records (watching only)."""
    registry = _state().classes
    room = registry.get(data.get("class"))
    token = data.get("token")
    student = registry.member(room, token)
    is_instructor = student is None
    if not is_instructor:
        join_room(f"student:{student.token}")
    join_room(f"class:{room.id}")
    if is_instructor:
        join_room(f"class:{room.id}:instructor")
    for previous in list(_state().class_watch.get(request.sid, ())):
        leave_room(sandbox_room(previous))
        sockets.forget(request.sid, previous)
    answer = {"ok": True, "class": room.describe(for_instructor=is_instructor), "snapshot": None}
    if student is not None:  # a page that reloads after the fork finds its private copy here
        answer["student"] = {"id": student.id, "name": student.name, "sandbox": student.sandbox,
                             "sandbox_token": student.sandbox_token}
    if room.session is not None:
        answer["snapshot"] = sockets.follow(room.session)
        _state().class_watch[request.sid] = {room.session.id}
    return answer


def on_class_answer(data):
    registry = _state().classes
    room = registry.get(data.get("class"))
    return {"ok": True, "counts": registry.answer(room, data.get("token"), data.get("question"), data.get("answer"))}


def on_class_fault(data):
    """A fault on the class cluster: the instructor's is applied, a student's refused (403)."""
    registry = _state().classes
    room = registry.get(data.get("class"))
    return registry.act(room, data.get("token"), {k: v for k, v in data.items() if k not in ("class", "token")})


def register(socketio: SocketIO, guard) -> None:
    for name, handler in (("lesson_continue", on_lesson_continue), ("lesson_answer", on_lesson_answer),
                          ("join_class", on_join_class), ("class_answer", on_class_answer),
                          ("class_fault", on_class_fault)):
        socketio.on_event(name, guard(handler))


def notifier(socketio: SocketIO):
    """How the class registry reaches pages: an event to a room."""
    def notify(room: str, event: str, payload: dict) -> None:
        socketio.emit(event, payload, to=room)
    return notify

