"""Run the app under gunicorn from inside ``kclab serve`` (so the embedded ZooKeeper and Redis stay
our children): ``workers`` processes, each holding its own sandboxes (with more than one, they
meet in Redis: ``web/scaleout``), and many threads each, because each open websocket holds one
(Flask-SocketIO's threading mode): the socket cap plus a reserve for HTTP (``web/socket_cap.py``)."""

from __future__ import annotations

import faulthandler
import os
import signal

from gunicorn.app.base import BaseApplication

DUMP_SIGNAL = signal.SIGUSR2
"""``kill -USR2 <worker>`` prints its threads' Python stacks (the newest 100) to the server's output."""


def dump_threads_on_signal() -> None:
    """Let an operator see where a stuck worker's threads are, without a profiler: py-spy cannot
    read every machine's processes (it could not on the lab's own bench machine, docs/performance.md,
    issue 14, seventeenth round). ``faulthandler`` writes from the signal handler itself, so it
    answers even when the interpreter's lock is out of reach. Called in the worker after gunicorn
    has set its own signals, which reset USR2 (gunicorn's master uses it; a worker does not)."""
    faulthandler.register(DUMP_SIGNAL, all_threads=True)


class _Application(BaseApplication):
    def __init__(self, config: dict, options: dict, banner: str) -> None:
        self._config, self._options, self._banner = config, options, banner
        self._app = None
        super().__init__()

    def load_config(self) -> None:
        for key, value in self._options.items():
            self.cfg.set(key, value)

    def load(self):
        from web.app import create_app
        if os.environ.get("KCLAB_GC_PAUSES"):  # bench/classroom.py: every collection, per worker
            from backend.runtime import heap
            heap.log_pauses(f"{os.environ['KCLAB_GC_PAUSES']}.{os.getpid()}")
        app = create_app(self._config)
        self._app = app
        dump_threads_on_signal()
        print(self._banner, flush=True)
        return app

    def close_sandboxes(self, *_) -> None:
        """On the way out, stop every cluster so no chroot is left behind in ZooKeeper."""
        app = getattr(self, "_app", None)
        if app is not None:
            app.extensions["kclab"].close()


def serve(config: dict, host: str, port: int, threads: int, banner: str, workers: int = 1) -> int:
    # KCLAB_GUNICORN_WORKER=gevent is for bench/sockets.py's comparison only (gevent is no dependency).
    worker = os.environ.get("KCLAB_GUNICORN_WORKER", "gthread")
    options = {"bind": f"{host}:{port}", "workers": workers, "worker_class": worker, "threads": threads,
               # connections beyond the threads wait, idle, in keep-alive (gthread's own limit)
               "worker_connections": threads + 256,
               "timeout": 0, "graceful_timeout": 5, "accesslog": None, "loglevel": "warning"}
    application = _Application(config, options, banner)
    application.cfg.set("worker_exit", lambda server, worker: application.close_sandboxes())
    application.run()
    return 0
