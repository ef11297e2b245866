"""Keep an embedded ZooKeeper server running: the lab's answer to a JVM that dies under a class.

``kclab serve`` starts one :class:`Supervisor` next to its embedded server (in the gunicorn
master, which is the server's parent: a worker could neither see the JVM's exit nor restart it
without racing the master for the port).
"""

from __future__ import annotations

import threading

from backend.zkserver.server import ZooKeeperServer


class Supervisor:
    """Keeps one embedded server running: if its JVM dies (killed, out of memory), it is started
    again on the same port and data directory, so every client's address still works and the
    data — sessions included — is what it was. A server back within the session timeout keeps
    its clients' sessions (ephemeral znodes survive); after a longer outage they expire and the
    brokers re-register, as Kafka's do.

    The watching thread is the one that restarts the JVM, and ``PR_SET_PDEATHSIG`` ties a child
    to the thread that forked it: this thread lives as long as the app, never a short-lived one.
    """

    def __init__(self, server: ZooKeeperServer, interval: float = 0.5,
                 on_restart=lambda server, error: None) -> None:
        self.server = server
        self.interval = interval
        self.on_restart = on_restart
        """Called after each attempt: ``error`` is None when the server serves again."""
        self.restarts = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="zk-supervisor", daemon=True)

    def start(self) -> "Supervisor":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            if self.server.running or self.server.stopped:
                continue
            error = None
            try:
                self.server.start()
                self.restarts += 1
            except Exception as exc:  # noqa: BLE001 - try again at the next tick, say why meanwhile
                error = exc
            try:
                self.on_restart(self.server, error)
            except Exception:  # noqa: BLE001 - a report must never stop the supervisor
                pass
