"""The worker's own view of a class while the bench runs it: how late it ran, for how long it
refused students' faults, its ZooKeeper sessions dropped and expired (``/healthz``'s ``load``,
``web/load_guard.py``), the machine's stolen time and the server's memory, every second
(``bench/classroom.py``)."""

from __future__ import annotations

import threading
import time

from bench.app_server import AppServer
from bench.measure import latency_stats, machine_stolen_seconds
from bench.process_tree import tree_rss_mb


class LoadWatch(threading.Thread):
    """The worker's own lateness (``/healthz``'s ``load``, ``web/load_guard.py``) read every
    second of the class: how far behind it ran, and for how long it refused students' faults.
    A tree without the guard answers without ``load``: the summary is then empty."""

    def __init__(self, server: AppServer, seconds: float) -> None:
        super().__init__(daemon=True)
        self.server, self.seconds, self.samples = server, seconds, []
        self.stolen: list[tuple[float, float]] = []
        """(wall ms, the machine's stolen CPU seconds so far) every second: ``by_minute``'s."""
        self.rss: list[tuple[float, float]] = []
        """(wall ms, the server's resident MB) every second: does a class's memory level off, or
        keep growing for as long as the class goes on (``by_minute``)?"""
        self.start()

    def run(self) -> None:
        end = time.monotonic() + self.seconds
        while time.monotonic() < end:
            self.stolen.append((time.time() * 1000, machine_stolen_seconds()))
            self.rss.append((time.time() * 1000, tree_rss_mb(self.server.proc.pid)))
            try:
                load = self.server.http.get(f"{self.server.url}healthz", timeout=5).json().get("load")
            except Exception:  # noqa: BLE001 - a missed sample; the class goes on
                load = None
            if load:
                self.samples.append({**load, "at_ms": time.time() * 1000})
            time.sleep(1)

    def summary(self) -> dict:
        if not self.samples:
            return {}
        return {"lag": latency_stats([s["lag_ms"] for s in self.samples]),
                "zk_lag": latency_stats([s["zk_lag_ms"] for s in self.samples if "zk_lag_ms" in s]),
                # The worker's sessions whose connection dropped, or that expired, over the class.
                **{f"zk_{what}": self.samples[-1][f"zk_{what}"] - self.samples[0][f"zk_{what}"]
                   for what in ("dropped", "expired") if f"zk_{what}" in self.samples[0]},
                "seconds_refusing": sum(1 for s in self.samples if s["shedding"]),
                "refused": self.samples[-1]["refused"] - self.samples[0]["refused"]}
