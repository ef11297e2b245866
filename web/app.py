"""The Flask application factory (Flask's tutorial pattern: ``create_app(test_config=None)``).

``kclab serve`` starts ZooKeeper (unless ``--zk`` names one) and passes its connect string
here; tests build as many independent app instances as they need, each with its own
Socket.IO server and sandboxes.
"""

from __future__ import annotations

import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flask import Flask
from flask_socketio import SocketIO

from backend.runtime.record_bus import HISTORY as RECORD_HISTORY
from backend.runtime.replay import default_data_dir
from backend.zk.io_loop import SessionLoop
from web import api, pages, security, sockets, teaching_api, teaching_sockets
from web import broadcast, stats_pages
from web import replays_api
from web import server_load, teaching_pages
from web.broadcast import Broadcaster
from web.capacity import capacity
from web.classes import MAX_CLASSES, MAX_STUDENTS_PER_CLASS, ClassRegistry
from web.handout import COPY_THREADS
from web.load_guard import DEFAULT_LIMIT_MS, DEFAULT_ZK_LIMIT_MS, LoadGuard
from web.clients import FaultRate, current_client
from web.sandboxes import SandboxManager
from web.scaleout import routes
from web.scaleout.forward import Forwarder
from web.scaleout.queue import WorkerQueue
from web.scaleout.workers import Workers, gone_message
from web.socket_cap import SocketCap, SocketPathsOnly
from web.zk_health import ZkHealth

ROOT = Path(__file__).resolve().parents[1]


def sandboxes_gone(socketio):
    """How the pages of a stopped worker's sandboxes learn it (``Workers.on_gone``)."""
    def tell(worker: str, sandbox_ids: list[str]) -> None:
        for sandbox_id in sandbox_ids:
            socketio.emit("sandbox_gone", {"sandbox": sandbox_id, "error": gone_message(worker)},
                          to=broadcast.room(sandbox_id))
    return tell


@dataclass
class Kclab:
    """This app's state: its sandboxes, its Socket.IO server, who watches what."""

    sandboxes: SandboxManager
    socketio: SocketIO
    broadcaster: Broadcaster
    classes: ClassRegistry
    zk_health: ZkHealth
    fault_rate: FaultRate
    load_guard: LoadGuard
    sockets: SocketCap | None = None
    watching: dict[str, set[str]] = field(default_factory=dict)
    class_watch: dict[str, set[str]] = field(default_factory=dict)
    workers: Workers | None = None
    """With several worker processes: who holds what, in Redis (``web/scaleout``); else ``None``."""
    forwarder: Forwarder | None = None
    socket_handlers: dict = field(default_factory=dict)
    """The socket events another worker may forward here, by name."""

    def close(self) -> None:
        """On the way out: stop broadcasting, stop every cluster (so no chroot is left behind in
        ZooKeeper), then end the app's own ZooKeeper session (and with it its claims)."""
        self.broadcaster.stop()
        self.load_guard.stop()
        self.classes.close()
        try:
            self.sandboxes.close_all()
        finally:
            self.zk_health.stop()
            if self.workers is not None:
                self.forwarder.stop()
                self.workers.stop()


def create_app(test_config: dict[str, Any] | None = None) -> Flask:
    app = Flask(__name__, static_folder=str(ROOT / "static"), static_url_path="/static")
    app.config.from_mapping(
        ZK_HOSTS=None,                     # required: "host:port[,...]" without chroot
        ZK_CONTROL=None,                   # our own launcher's server/ensemble, for quorum faults
        DATA_DIR=str(default_data_dir()),
        SANDBOX_IDLE_SECONDS=1800,
        RECORD_HISTORY=RECORD_HISTORY,     # records a sandbox keeps in memory for catch-up (record_bus.py)
        MAX_SANDBOXES=None,                # None: what the machine holds (web/capacity.py)
        MAX_SANDBOXES_PER_CLIENT=5,        # a client is an address (web/clients.py)
        FAULTS_PER_SECOND=5,               # per client, in bursts of up to FAULT_BURST
        FAULT_BURST=20,
        TRUSTED_PROXIES=0,                 # reverse proxies in front of the app (X-Forwarded-For)
        MAX_SOCKETS=None,                  # open page sockets (kclab serve sets it: web/socket_cap.py)
        SWEEP_EVERY_S=60,                  # look for chroots whose owner is gone (backend/zk/app_session.py)
        SWEEP_GRACE_S=60,                  # ... and that are at least this old
        MAX_CONTENT_LENGTH=64 * 1024,
        START_BROADCASTER=True,
        INSTRUCTOR_TOKEN=os.environ.get("KCLAB_INSTRUCTOR_TOKEN") or secrets.token_urlsafe(12),
        REDIS_URL=None,                    # several workers: their message queue and routing (web/scaleout)
        MAX_CLASSES=MAX_CLASSES,           # classes one worker keeps (web/classes.py)
        MAX_STUDENTS_PER_CLASS=MAX_STUDENTS_PER_CLASS,
        COPY_THREADS=COPY_THREADS,         # a hand-out's copies built at once, over the worker's classes
        SHED_AFTER_MS=DEFAULT_LIMIT_MS,    # a worker this far behind refuses students' new work (web/load_guard.py)
        SHED_ZK_AFTER_MS=DEFAULT_ZK_LIMIT_MS,  # ... and one whose ZooKeeper session loop is this late
    )
    if test_config:
        app.config.update(test_config)
    if not app.config["ZK_HOSTS"]:
        raise RuntimeError("create_app needs ZK_HOSTS (kclab serve starts an embedded ZooKeeper by default)")
    url = app.config["REDIS_URL"]
    # With a message queue an emit from any worker reaches every client (Flask-SocketIO's scale-out).
    socketio = SocketIO(app, async_mode="threading", max_http_buffer_size=app.config["MAX_CONTENT_LENGTH"],
                        json=sockets.BoundedJson, serializer=sockets.JsonPacket,
                        **({"client_manager": WorkerQueue(url)} if url else {}))
    app.wsgi_app = SocketPathsOnly(app.wsgi_app)  # engineio's middleware only where it is needed
    health = ZkHealth(app.config["ZK_HOSTS"], on_change=lambda status: socketio.emit("zookeeper", status))
    cap = capacity(app.config["MAX_SANDBOXES"], app.config["RECORD_HISTORY"])
    guard = LoadGuard(app.config["SHED_AFTER_MS"], zk_loop=SessionLoop.in_this_process,
                      zk_limit_ms=app.config["SHED_ZK_AFTER_MS"])
    workers = Workers(url, cap, app.config["MAX_SANDBOXES_PER_CLIENT"], on_gone=sandboxes_gone(socketio)) \
        if url else None
    manager = SandboxManager(app.config["ZK_HOSTS"], Path(app.config["DATA_DIR"]) / "replays",
                             idle_seconds=app.config["SANDBOX_IDLE_SECONDS"], max_sandboxes=cap,
                             zk_control=app.config["ZK_CONTROL"],
                             max_per_client=app.config["MAX_SANDBOXES_PER_CLIENT"], client_of=current_client,
                             health_check=health.require, busy_check=guard.require, owner=health.session,
                             places=workers, record_history=app.config["RECORD_HISTORY"])
    classes = ClassRegistry(manager, app.config["INSTRUCTOR_TOKEN"], app.config["MAX_CLASSES"],
                            app.config["MAX_STUDENTS_PER_CLASS"], app.config["COPY_THREADS"])
    if workers is not None:
        classes.on_created = lambda room: workers.hold_class(room.id, room.code)
    classes.notify = teaching_sockets.notifier(socketio)
    broadcaster = Broadcaster(socketio, manager, sweep_every=app.config["SWEEP_EVERY_S"],
                              sweep_grace=app.config["SWEEP_GRACE_S"])
    state = Kclab(manager, socketio, broadcaster, classes, health,
                  FaultRate(app.config["FAULTS_PER_SECOND"], app.config["FAULT_BURST"]), guard, workers=workers)
    app.extensions["kclab"] = state
    security.init_app(app)
    state.sockets = SocketCap(app.wsgi_app, app.config["MAX_SOCKETS"])
    app.wsgi_app = state.sockets
    app.register_blueprint(api.bp)
    app.register_blueprint(teaching_api.bp)
    api.register_error_handlers(app)
    app.register_blueprint(pages.bp)
    app.register_blueprint(stats_pages.bp)
    app.register_blueprint(teaching_pages.bp)  # /lessons, /join, /instructor
    replays_api.init_app(app)  # /replays and /api/replays: recorded sessions
    sockets.register(socketio, state.socket_handlers)
    teaching_sockets.register(socketio, sockets.guard, state.socket_handlers)
    if workers is not None:
        workers.describe_load = lambda: server_load.this_worker(state)
        app.before_request(routes.route_http)
        state.forwarder = Forwarder(workers.start(), app, routes.CALLS).start()
    health.start()
    guard.start()
    health.wait_connected(10)
    if app.config["START_BROADCASTER"]:
        state.broadcaster.start()
    return app
