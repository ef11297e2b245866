"""Socket.IO handlers for lessons and classes: a student's Continue and answers in a
walkthrough; joining a class (the pages follow its session live) and answering its questions."""

from __future__ import annotations

from flask import current_app, request
from flask_socketio import SocketIO, join_room, leave_room

from web import sockets, teaching
from web.broadcast import room as sandbox_room
from web.scaleout import routes


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
    for previous in list(_state().class_watch.get(request.sid, ())):
        leave_room(sandbox_room(previous))
        sockets.forget(request.sid, previous)
    owner = routes.owner_of("class", data.get("class"))
    if owner is None:
        joined = _state().classes.joining(data.get("class"), data.get("token"))
    else:
        joined = _state().forwarder.call(owner, "class_join", data.get("class"), data.get("token"))
    for name in joined["rooms"]:
        join_room(name)
    answer, session = joined["answer"], joined["session"]
    if session is not None:
        if owner is None:
            answer["snapshot"] = sockets.follow(_state().sandboxes.get(session))
        else:
            answer["snapshot"] = sockets.follow_remote(owner, session, data.get("token"), "class_follow",
                                                       data.get("class"))["snapshot"]
        _state().class_watch[request.sid] = {session}
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


def register(socketio: SocketIO, guard, handlers: dict) -> None:
    """Bind the handlers; those that act on a sandbox or class run on the worker that holds it."""
    socketio.on_event("join_class", guard(on_join_class))
    for name, handler, key in (("lesson_continue", on_lesson_continue, "sandbox"),
                               ("lesson_answer", on_lesson_answer, "sandbox"),
                               ("class_answer", on_class_answer, "class"), ("class_fault", on_class_fault, "class")):
        handlers[name] = guard(handler)
        socketio.on_event(name, guard(routes.routed_event(name, handler, key)))


def notifier(socketio: SocketIO):
    """How the class registry reaches pages: an event to a room."""
    def notify(room: str, event: str, payload: dict) -> None:
        socketio.emit(event, payload, to=room)
    return notify

