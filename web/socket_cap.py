"""A cap on open page sockets, so the HTTP API always has threads left.

In Flask-SocketIO's threading mode (under gunicorn's gthread worker) an open websocket holds
one worker thread for as long as the page is open. The server therefore runs with ``MAX_SOCKETS``
threads for sockets plus a reserve for HTTP (``kclab serve --max-sockets N --threads M`` gives
gunicorn N + M threads), and this WSGI middleware refuses a Socket.IO request beyond the cap
with a 503 at once — the page's client retries with back-off — instead of letting sockets take
the threads ``/healthz`` and the API need. docs/performance.md (§ "Open page sockets") has the
measurements behind this choice over gevent or eventlet workers.
"""

from __future__ import annotations

import json
import threading

SOCKET_PATH = "/socket.io/"


def for_sockets(environ) -> bool:
    """A Socket.IO request (a page's websocket or long-poll), not the HTTP API or a page."""
    return environ.get("PATH_INFO", "").startswith(SOCKET_PATH)


class SocketCap:
    def __init__(self, app, max_sockets: int | None) -> None:
        self.app = app
        self.max_sockets = max_sockets
        self.open = 0
        """Socket.IO requests in progress now (open websockets and pending long-polls)."""
        self.refused = 0
        self._lock = threading.Lock()

    def __call__(self, environ, start_response):
        if not for_sockets(environ):
            return self.app(environ, start_response)
        with self._lock:
            if self.max_sockets is not None and self.open >= self.max_sockets:
                self.refused += 1
                full = True
            else:
                self.open += 1
                full = False
        if full:
            body = json.dumps({"ok": False, "error": f"the server holds {self.max_sockets} open pages already; "
                                                    f"yours connects as soon as one closes"}).encode()
            start_response("503 Service Unavailable", [("Content-Type", "application/json"),
                                                       ("Content-Length", str(len(body))), ("Retry-After", "5")])
            return [body]
        try:
            # The websocket's whole life runs inside this call (simple-websocket takes the
            # connection over), so the count is right when it returns.
            return self.app(environ, start_response)
        finally:
            with self._lock:
                self.open -= 1


class SocketPathsOnly:
    """Flask-SocketIO's WSGI middleware for Socket.IO's paths alone; every other request goes
    straight to the Flask app it wraps.

    Under gunicorn, ``engineio.middleware.WSGIApp.__call__`` defines a class for *every* request,
    to hand gunicorn's socket on the way eventlet names it, and a class is a reference cycle: 16
    objects for the collector per API call, two thirds of the cyclic garbage a served class of 200
    made (the rest is werkzeug's router), ~50 µs each made and collected, and paid inside the
    young collections every request of the worker waits for (docs/performance.md, issue 14,
    thirty-eighth round). Only a websocket's request needs that socket, and only Socket.IO's
    requests need the middleware (it adds ``flask.app`` for the socket handlers)."""

    def __init__(self, middleware) -> None:
        self.middleware = middleware
        self.flask = middleware.wsgi_app

    def __call__(self, environ, start_response):
        if for_sockets(environ):
            return self.middleware(environ, start_response)
        return self.flask(environ, start_response)

