"""Which worker answers: the hooks that send a request for a sandbox or class held elsewhere to
its owner (``forward.py``), and what the owner runs for it (:data:`CALLS`).

HTTP requests are routed before any view runs (``before_request``), by the ``sandbox_id`` or
``class_id`` of their URL (or a class join's code); a new sandbox is made by the worker that
holds the fewest (``Workers.fewer_elsewhere``); socket events by the ``sandbox`` or
``class`` they carry. A socket that follows a sandbox held elsewhere joins its room here — the
message queue brings the owner's broadcasts to every worker — and gets its snapshot and
catch-up from the owner.
"""

from __future__ import annotations

import base64

from flask import Response, current_app, request

from web.service import ApiError, sandbox_for

FORWARDED = "kclab.forwarded"
"""Set in the environ of a request a worker runs for another: it is never forwarded again."""
HOP_HEADERS = {"content-length", "transfer-encoding", "connection", "host"}


def _state():
    return current_app.extensions["kclab"]


def owner_of(kind: str, key) -> str | None:
    """The worker that holds sandbox (or class) ``key``, when that is another worker; ``None`` when
    it is this one, nobody (the local 404 says so), or the app runs one worker. A sandbox whose
    worker stopped is a 503 that says so."""
    state = _state()
    workers = state.workers
    if workers is None or not isinstance(key, str) or request.environ.get(FORWARDED):
        return None
    if kind == "sandbox":
        if state.sandboxes.get(key) is not None:
            return None
        owner = workers.owner_of_sandbox(key)
        if owner is None and workers.gone(key):
            raise ApiError(503, workers.gone(key))
    else:
        if key in state.classes.ids():
            return None
        owner = workers.owner_of_class(key)
    return owner if owner != workers.id else None


def route_http():
    """``before_request``: run a request for a sandbox or class held elsewhere on its owner."""
    args = request.view_args or {}
    if "sandbox_id" in args:
        owner = owner_of("sandbox", args["sandbox_id"])
    elif "class_id" in args:
        owner = owner_of("class", args["class_id"])
    elif request.endpoint == "api.create_sandbox" and _state().workers is not None:
        owner = None if request.environ.get(FORWARDED) else _state().workers.fewer_elsewhere()
    elif request.endpoint == "teaching.join_class" and _state().workers is not None:
        code = (request.get_json(silent=True) or {}).get("code")
        class_id = _state().workers.class_of_code(code.strip().upper()) if isinstance(code, str) else None
        owner = owner_of("class", class_id)
    else:
        return None
    if owner is None:
        return None
    answer = _state().forwarder.call(owner, "http", request.method, request.path, request.query_string.decode(),
                                     [(k, v) for k, v in request.headers.items() if k.lower() not in HOP_HEADERS],
                                     base64.b64encode(request.get_data()).decode(), request.remote_addr)
    return Response(base64.b64decode(answer["body"]), answer["status"], answer["headers"])


def _http(method, path, query, headers, body, remote_addr) -> dict:
    response = current_app.test_client().open(path, method=method, query_string=query, headers=headers,
                                              data=base64.b64decode(body),
                                              environ_overrides={"REMOTE_ADDR": remote_addr, FORWARDED: True})
    return {"status": response.status_code, "body": base64.b64encode(response.get_data()).decode(),
            "headers": [(k, v) for k, v in response.headers.items() if k.lower() not in HOP_HEADERS]}


def routed_event(name: str, handler, key: str):
    """A socket handler that runs on the owner of the sandbox (``key="sandbox"``) or class
    (``"class"``) its message names; the owner answers with the same guarded handler."""
    def wrapped(data):
        owner = owner_of(key, data.get(key))
        if owner is None:
            return handler(data)
        return _state().forwarder.call(owner, "socket", name, data, request.remote_addr)
    wrapped.__name__ = handler.__name__
    return wrapped


def _socket(name, data, remote_addr) -> dict:
    with current_app.test_request_context(environ_overrides={"REMOTE_ADDR": remote_addr, FORWARDED: True}):
        return _state().socket_handlers[name](data)


def _follow(sandbox_id, token) -> dict:
    """A socket on another worker follows this sandbox: counted as a watcher (never reaped while
    watched); its snapshot, the records after it and its description."""
    sandbox = sandbox_for(_state().sandboxes, sandbox_id, token)
    sandbox.followed(elsewhere=True)  # before the snapshot: every batch after it goes through the queue
    snapshot, catch_up = sandbox.snapshot_with_catch_up()
    return {"snapshot": snapshot, "sandbox": sandbox.describe(), "catch_up": catch_up}


def _unfollow(sandbox_id) -> None:
    sandbox = _state().sandboxes.get(sandbox_id)
    if sandbox is not None:
        sandbox.unfollowed(elsewhere=True)


def unfollow_elsewhere(sandbox_id: str) -> None:
    """A socket here stopped following a sandbox another worker holds (best effort: a worker
    that stopped has no watchers to count)."""
    owner = _state().workers.owner_of_sandbox(sandbox_id)
    if owner is not None and owner != _state().workers.id:
        try:
            _state().forwarder.call(owner, "unfollow", sandbox_id)
        except ApiError:
            pass


def _class_join(class_id, token) -> dict:
    return _state().classes.joining(class_id, token)


def _class_follow(session_id, token, class_id) -> dict:
    """A class member on another worker follows the class's session (they hold no token of its
    sandbox: their membership is checked instead)."""
    registry = _state().classes
    room = registry.get(class_id)
    registry.member(room, token)
    if room.session is None or room.session.id != session_id:
        raise ApiError(409, "the class's session changed meanwhile: join the class again")
    return _follow(session_id, room.session.token)


CALLS = {"http": _http, "socket": _socket, "follow": _follow, "unfollow": _unfollow, "class_join": _class_join,
         "class_follow": _class_follow}
