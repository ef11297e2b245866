"""A real ``kclab serve`` (gunicorn, embedded ZooKeeper) in a child process, for the hardening
tests: what a careless or mischievous student can do to it, over real HTTP."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from backend.zkserver.server import free_ports
from tests.support import LineReader, child_pids, kclab_command, wait_until


@dataclass
class Served:
    proc: subprocess.Popen
    url: str
    token: str
    data_dir: Path
    out: LineReader
    zk_hosts: str = ""

    def call(self, method: str, path: str, body=None, headers: dict | None = None, raw: bytes | None = None,
             timeout: float = 30.0) -> tuple[int, dict, dict]:
        """(status, JSON body or {}, headers); never raises for an HTTP error status."""
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        all_headers = {"Content-Type": "application/json", **(headers or {})}
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=all_headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                text, status, got = response.read(), response.status, dict(response.headers)
        except urllib.error.HTTPError as error:
            text, status, got = error.read(), error.code, dict(error.headers)
        try:
            parsed = json.loads(text) if text else {}
        except ValueError:
            parsed = {"raw": text[:200]}
        return status, parsed, got

    def call_as_student(self, method: str, path: str, body=None, headers: dict | None = None,
                        timeout: float = 30.0, attempts: int = 10) -> tuple[int, dict, dict]:
        """``call``, but a refusal as overloaded (web/load_guard.py) or because ZooKeeper did not
        answer (web/zk_health.py) is waited out as the page tells a student to: after its
        Retry-After, at most ``attempts`` times. A test that loads the server, or takes ZooKeeper
        away, on purpose must not fail because the server, rightly, said so."""
        for _ in range(attempts):
            status, parsed, got = self.call(method, path, body, headers, timeout=timeout)
            if not (status == 503 and (parsed.get("overloaded") or parsed.get("zookeeper") == "unreachable")):
                break
            retry_after = int(got["Retry-After"])
            assert retry_after > 0, (parsed, got)
            assert not parsed.get("overloaded") or parsed["retry_after"] == retry_after, (parsed, got)
            time.sleep(retry_after)  # the server's own Retry-After, not a guess at a duration
        return status, parsed, got

    def worker_pid(self) -> int:
        """gunicorn's worker: the master's child that is not the ZooKeeper JVM."""
        return wait_until(lambda: next(iter(set(child_pids(self.proc.pid, "kclab")) - set(self.zk_pids())), None),
                          30, "gunicorn's worker process")

    def zk_pids(self) -> list[int]:
        return child_pids(self.proc.pid, "QuorumPeerMain")

    def rss_kb(self, pid: int) -> int:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise AssertionError(f"no VmRSS for {pid}")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def serve(tmp: Path, *args: str, **env: str) -> Served:
    port = free_ports(1)[0]
    token = "hardening-instructor-token"
    environment = {**os.environ, "KCLAB_INSTRUCTOR_TOKEN": token, **{f"KCLAB_{k}": v for k, v in env.items()}}
    workers = [] if "--workers" in args else ["--workers", "1"]  # one process, as these tests look into it
    proc = subprocess.Popen([*kclab_command(), "serve", "--port", str(port), "--data-dir", str(tmp), *workers, *args],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=environment,
                            start_new_session=True)
    out = LineReader(proc.stdout)
    served = Served(proc, f"http://127.0.0.1:{port}", token, tmp, out)
    try:
        served.zk_hosts = out.wait_for(r"ZooKeeper: (\S+)", 60, proc).group(1)
        out.wait_for("is serving at", 60, proc)
        wait_until(lambda: served.call("GET", "/healthz")[0] == 200, 30, "the served app's /healthz to answer 200")
    except BaseException:
        served.stop()
        raise
    return served
