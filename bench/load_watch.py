"""The worker's own view of a class while the bench runs it: how late it ran, for how long it
refused students' faults, its ZooKeeper sessions dropped and expired (``/healthz``'s ``load``,
``web/load_guard.py``), the machine's stolen time and the server's memory, every second; and
what the instructor's page said of it meanwhile (``bench/classroom.py``)."""

from __future__ import annotations

import json
import subprocess
import threading
import time
from collections import Counter
from pathlib import Path

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


class InstructorPage(threading.Thread):
    """The instructor's page over the class: ``GET /api/classes/<id>/load`` every
    ``POLL_MS`` (static/js/views/server-load.js), how long each answer took, and what the page
    said of each — decided by the page's own module under node, not a copy of its rules. A tree
    without the endpoint answers 404: the summary is then empty."""

    POLL_S = 5.0

    def __init__(self, server: AppServer, class_id: str, headers: dict, seconds: float) -> None:
        super().__init__(daemon=True)
        self.server, self.class_id, self.headers, self.seconds = server, class_id, headers, seconds
        self.samples: list[dict] = []
        self.answer_ms: list[float] = []
        self.start()

    def run(self) -> None:
        end = time.monotonic() + self.seconds
        while time.monotonic() < end:
            asked = time.monotonic()
            try:
                response = self.server.http.get(f"{self.server.url}api/classes/{self.class_id}/load",
                                                headers=self.headers, timeout=30)
                if response.status_code == 200:
                    self.answer_ms.append((time.monotonic() - asked) * 1000)
                    self.samples.append({"t": time.time() * 1000, "load": response.json()})
            except Exception:  # noqa: BLE001 - a missed poll, as a page's would be
                pass
            time.sleep(max(0.0, self.POLL_S - (time.monotonic() - asked)))

    def summary(self) -> dict:
        if not self.samples:
            return {}
        said = page_verdicts(self.samples)
        return {"polls": len(self.samples), "answer_ms": latency_stats(self.answer_ms),
                "said": dict(Counter(s["state"] for s in said)),
                "worst": max(said, key=lambda s: ("ok", "busy", "overloaded").index(s["state"]))["text"]}


def page_verdicts(samples: list[dict]) -> list[dict]:
    """``describeLoad`` of the page's module on every prefix of ``samples``: what it showed each time."""
    module = Path(__file__).resolve().parents[1] / "static" / "js" / "views" / "server-load.js"
    script = (f"import {{readFileSync}} from 'node:fs'; import {{describeLoad}} from {json.dumps(module.as_uri())};"
              "const samples = JSON.parse(readFileSync(0, 'utf8'));"  # stdin: an hour's polls outgrow an argument
              "console.log(JSON.stringify(samples.map((_, i) => describeLoad(samples.slice(0, i + 1)))));")
    done = subprocess.run(["node", "--input-type=module", "-e", script], input=json.dumps(samples),
                          capture_output=True, text=True, timeout=60)
    if done.returncode:
        raise RuntimeError(f"node could not run the page's module: {done.stderr[-500:]}")
    return json.loads(done.stdout)
