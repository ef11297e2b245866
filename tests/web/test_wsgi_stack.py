"""The WSGI stack under gunicorn: an API request leaves no class for the collector, and Socket.IO's
requests still reach engineio's middleware (``web.socket_cap.SocketPathsOnly``)."""

from __future__ import annotations

import gc
import socket

from werkzeug.test import EnvironBuilder


def call(app, path: str) -> tuple[str, bytes]:
    """``path`` through the app's whole WSGI stack, with the socket gunicorn puts in every request."""
    environ = EnvironBuilder(path=path).get_environ()
    left, right = socket.socketpair()
    environ["gunicorn.socket"] = left
    answered = []
    try:
        body = b"".join(app.wsgi_app(environ, lambda status, headers, exc_info=None: answered.append(status)))
    finally:
        left.close()
        right.close()
    return answered[0], body


def test_an_api_request_under_gunicorn_leaves_no_class_for_the_collector(app):
    """engineio's middleware defines a class per request when gunicorn's socket is there (a cycle
    of 16 objects, ~50 µs made and collected, inside the young collections a class waits for)."""
    call(app, "/healthz")  # the first request's one-time allocations
    gc.collect()
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:
        for _ in range(5):
            status, _ = call(app, "/healthz")
            assert status.startswith("200")
        gc.collect()
        classes = [o for o in gc.garbage if isinstance(o, type)]
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
    assert classes == []


def test_socket_io_requests_still_go_through_engineio(app):
    status, body = call(app, "/socket.io/?EIO=4&transport=polling")
    assert status.startswith("200") and body.startswith(b"0{") and b'"sid"' in body  # engineio's open packet
