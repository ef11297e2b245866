"""Socket.IO handlers: join a sandbox's room (snapshot first, then every record after it) and
act on it. They call ``web.service`` exactly as the HTTP API does; an error comes back in the
acknowledgement as ``{"ok": false, "error": ...}`` and never kills the connection."""

from __future__ import annotations

import json
import re

from flask import current_app, request
from flask_socketio import SocketIO, emit, join_room, leave_room
from socketio.packet import ACK, BINARY_ACK, BINARY_EVENT, EVENT, Packet

from backend.faultscript.limits import MAX_JSON_DEPTH
from web import service, zk_health
from web.broadcast import room
from web.clients import current_client
from web.scaleout import routes


def _state():
    return current_app.extensions["kclab"]


def _manager():
    return _state().sandboxes


TOO_DEEP: dict = {}
"""What a message nested deeper than ``MAX_JSON_DEPTH`` is read as (never parsed): its handler
answers 400 instead of the parser recursing into a ``RecursionError`` and nobody answering."""


class BoundedJson:
    """The ``json`` python-socketio decodes messages with (``SocketIO(json=BoundedJson)``)."""

    dumps = staticmethod(json.dumps)

    @staticmethod
    def loads(text, **kwargs):
        raw = text.encode() if isinstance(text, str) else text
        if service.json_depth(raw) > MAX_JSON_DEPTH:
            event = re.match(r'\s*\[\s*"([A-Za-z_]{1,40})"', text if isinstance(text, str) else raw.decode("latin-1"))
            return [event.group(1) if event else "message", TOO_DEEP]
        return json.loads(text, **kwargs)


class JsonPacket(Packet):
    """python-socketio's packet, encoded as JSON first and walked for ``bytes`` only if that fails.

    Before encoding an outgoing message python-socketio walks every value of it looking for
    ``bytes`` to send as binary attachments (``Packet.data_is_binary``); for a batch of records
    that walk cost four times the JSON encoding itself and was the largest single part of the
    broadcaster's CPU in a class (docs/performance.md, issue 14, eighth round). The lab's
    messages are JSON, so this class encodes without the walk; a message that JSON cannot encode
    is walked then, and one holding ``bytes`` goes out as the stock packet sends it (a binary
    event with attachments), so nothing that worked before fails now. Incoming messages are
    decoded as before."""

    @classmethod
    def data_is_binary(cls, data) -> bool:
        return False  # decided in ``encode``, only when JSON cannot encode the message

    def encode(self):
        try:
            return super().encode()
        except TypeError:
            if self.packet_type in (EVENT, ACK) and Packet.data_is_binary(self.data):
                self.packet_type = BINARY_EVENT if self.packet_type == EVENT else BINARY_ACK
                return super().encode()
            raise


def guard(handler):
    """Run a socket handler; whatever goes wrong becomes the acknowledgement ``{"ok": false,
    "status", "error"}`` — an ApiError with its status, ZooKeeper not answering a 503, anything
    unforeseen a logged 500 — so a page never waits out its timeout for an answer that will not
    come."""
    def wrapped(data=None):
        if data is TOO_DEEP:
            return {"ok": False, "status": 400, "error": f"the message is nested more than {MAX_JSON_DEPTH} deep"}
        try:
            return handler(data if isinstance(data, dict) else {})
        except service.ApiError as error:
            return {**error.body(), "status": error.status}
        except Exception as error:  # noqa: BLE001 - answered, logged, and the connection lives on
            refusal = zk_health.as_api_error(error)
            if refusal is not None:
                return {**refusal.body(), "status": refusal.status}
            current_app.logger.exception("socket handler %s failed", handler.__name__)
            return {"ok": False, "status": 500, "error": f"the server failed: {type(error).__name__}"}
    wrapped.__name__ = handler.__name__
    return wrapped


def on_join(data):
    """Join first, snapshot second, catch-up third: a record emitted at any moment is then either
    in the snapshot, or in the catch-up, or in a later batch (perhaps twice: pages dedupe by seq)."""
    owner = routes.owner_of("sandbox", data.get("sandbox"))
    if owner is not None:
        followed = follow_remote(owner, data["sandbox"], data.get("token"))
        return {"ok": True, "snapshot": followed["snapshot"], "sandbox": followed["sandbox"]}
    sandbox = service.sandbox_for(_manager(), data.get("sandbox"), data.get("token"))
    return {"ok": True, "snapshot": follow(sandbox), "sandbox": sandbox.describe()}


def follow_remote(owner: str, sandbox_id: str, token, call: str = "follow", *args) -> dict:
    """``follow`` for a sandbox another worker holds: its room here (the message queue brings the
    owner's broadcasts), then the owner's snapshot and catch-up (``web/scaleout/routes.py``)."""
    join_room(room(sandbox_id))
    try:
        followed = _state().forwarder.call(owner, call, sandbox_id, token, *args)
    except Exception:
        leave_room(room(sandbox_id))
        raise
    _state().watching.setdefault(request.sid, set()).add(sandbox_id)
    _catch_up(sandbox_id, followed["catch_up"])
    return followed


def follow(sandbox) -> dict:
    """This socket follows ``sandbox``: joins its room, is counted as a watcher, gets the records
    after the snapshot it is given (returned, for the join's answer)."""
    join_room(room(sandbox.id))
    watch(request.sid, sandbox)
    snapshot, catch_up = sandbox.snapshot_with_catch_up()
    _catch_up(sandbox.id, catch_up)
    return snapshot


def _catch_up(sandbox_id: str, records: list[dict]) -> None:
    """The records after a joining socket's snapshot, to that socket alone. It is connected to this
    worker, so the emit skips the message queue (no other worker has anything to deliver)."""
    if records:
        emit("records", {"sandbox": sandbox_id, "records": records}, ignore_queue=True)


def on_leave(data):
    if routes.owner_of("sandbox", data.get("sandbox")) is not None:
        sandbox_id = data["sandbox"]  # leaving a room needs no secret
    else:
        sandbox_id = service.sandbox_for(_manager(), data.get("sandbox"), data.get("token")).id
    leave_room(room(sandbox_id))
    forget(request.sid, sandbox_id)
    return {"ok": True}


def on_fault(data):
    _state().fault_rate.take(current_client())
    body = {k: v for k, v in data.items() if k not in ("sandbox", "token")}
    return service.apply(_manager(), data.get("sandbox"), data.get("token"), body)


def on_records_since(data):
    return {"ok": True, **service.records_since(_manager(), data.get("sandbox"), data.get("token"),
                                                data.get("since"), data.get("limit"))}


def on_disconnect(*_):
    watching = _state().watching
    for sandbox_id in list(watching.get(request.sid, ())):
        forget(request.sid, sandbox_id)
    watching.pop(request.sid, None)
    _state().class_watch.pop(request.sid, None)


def watch(sid: str, sandbox) -> None:
    """Count this connection as watching ``sandbox``: a watched sandbox is never reaped as idle
    (a class demo followed by thirty students, with the instructor's page closed, stays up)."""
    watching = _state().watching.setdefault(sid, set())
    if sandbox.id not in watching:
        watching.add(sandbox.id)
        sandbox.followed()


def forget(sid: str, sandbox_id: str) -> None:
    watching = _state().watching
    if sandbox_id in watching.get(sid, set()):
        watching[sid].discard(sandbox_id)
        sandbox = _manager().get(sandbox_id)
        if sandbox is not None:
            sandbox.unfollowed()
        elif _state().workers is not None:
            routes.unfollow_elsewhere(sandbox_id)


def register(socketio: SocketIO, handlers: dict) -> None:
    """Bind the handlers to this app's Socket.IO server (one per app, so tests may build many);
    ``handlers`` collects them by name, for the events another worker forwards here."""
    for name, handler in (("join", on_join), ("leave", on_leave)):
        socketio.on_event(name, guard(handler))
    for name, handler in (("fault", on_fault), ("records_since", on_records_since)):
        handlers[name] = guard(handler)
        socketio.on_event(name, guard(routes.routed_event(name, handler, "sandbox")))
    socketio.on_event("disconnect", on_disconnect)
