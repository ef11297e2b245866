"""The app under test: ``kclab serve`` as a child process on the bench's own ZooKeeper (stopped, its
chroots deleted, at the end, also when a run fails), and an optional profile of it."""

from __future__ import annotations

import collections
import ctypes
import itertools
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.measure import children, cpu_seconds, free_port, log

ROOT = Path(__file__).resolve().parent.parent


def _term_with_parent():
    """``preexec_fn``: the server gets SIGTERM (and stops its sandboxes) if the bench dies."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    parent = os.getpid()

    def preexec():
        prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGTERM)
    return preexec


class Refused(RuntimeError):
    """An API answer of 400 or more: its status and JSON body kept for a caller that tells one
    refusal from another (a worker behind, ``overloaded``, from the cap)."""

    def __init__(self, method: str, path: str, response) -> None:
        super().__init__(f"{method} {path} -> {response.status_code}: {response.text[:300]}")
        self.status = response.status_code
        try:
            self.body = response.json()
        except ValueError:
            self.body = {}

class AppServer:
    """``kclab serve`` in a child process (gunicorn master + one worker), on a free port."""

    def __init__(self, zk_hosts: str, data_dir: Path, threads: int, source: Path = ROOT,
                 serve_args: tuple[str, ...] = ("--workers", "1"), env: dict[str, str] | None = None) -> None:
        """``source``: the tree whose app runs (bench/classroom.py runs an older commit's too);
        ``env``: more of the server's environment."""
        import requests
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.log_path = data_dir / "server.log"
        self._log = open(self.log_path, "w")
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "KCLAB_INSTRUCTOR_TOKEN": "bench-instructor-token",
               "PYTHONPATH": str(source), **(env or {})}
        # Each simulated student is a computer of its own, as in a class: the server trusts one
        # proxy's X-Forwarded-For, which the bench sets per sandbox (a client's fair share, web/clients.py).
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "web.cli", "serve", "--zk", zk_hosts, "--port", str(self.port),
             "--data-dir", str(data_dir), "--threads", str(threads), "--trusted-proxies", "1", *serve_args],
            cwd=source, env=env, stdout=self._log, stderr=subprocess.STDOUT, start_new_session=True,
            preexec_fn=_term_with_parent())
        self.http = requests.Session()
        self.chroots: list[str] = []  # of every sandbox created, to check that none is left behind
        self.addresses = itertools.count(1)
        deadline = time.monotonic() + 60
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited ({self.proc.returncode}):\n{self.tail()}")
            try:
                if self.http.get(self.url + "healthz", timeout=2).ok:
                    break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"the server did not answer /healthz within 60 s:\n{self.tail()}")
            time.sleep(0.1)
        self.worker = self._find_worker()

    def _find_worker(self) -> int | None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            kids = children(self.proc.pid)
            if kids:
                return kids[0]
            time.sleep(0.05)
        return None

    def cpu(self) -> dict[str, float]:
        """CPU seconds so far of the gunicorn worker (where sandboxes and sockets live) and master."""
        out = {"master": cpu_seconds(self.proc.pid)}
        if self.worker is not None:
            out["worker"] = cpu_seconds(self.worker)
        return out

    def tail(self, lines: int = 30) -> str:
        self._log.flush()
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def api(self, method: str, path: str, body: Any = None, token: str | None = None, timeout: float = 120,
            address: str | None = None):
        headers = {"X-Sandbox-Token": token} if token else {}
        if address:
            headers["X-Forwarded-For"] = address
        response = self.http.request(method, self.url + path.lstrip("/"), json=body, headers=headers, timeout=timeout)
        if response.status_code >= 400:
            raise Refused(method, path, response)
        return response.json() if response.content else None

    def create_sandbox(self) -> dict:
        n = next(self.addresses)
        address = f"10.{n // 65536 % 256}.{n // 256 % 256}.{n % 256}"  # the student's computer
        sandbox = self.api("POST", "/api/sandboxes", {}, address=address)
        sandbox["address"] = address
        self.chroots.append(sandbox["cluster"]["chroot"])
        return sandbox

    def delete_sandbox(self, sandbox: dict) -> None:
        try:
            self.api("DELETE", f"/api/sandboxes/{sandbox['id']}", token=sandbox["token"])
        except Exception as exc:  # noqa: BLE001 - the server stops them all at the end anyway
            log(f"  (deleting sandbox {sandbox['id']} failed: {exc})")

    def next_seq(self, sandbox: dict) -> int:
        return self.api("GET", f"/api/sandboxes/{sandbox['id']}/snapshot", token=sandbox["token"])["seq"] + 1

    def stop(self) -> None:
        """SIGTERM: gunicorn stops its worker, whose exit hook closes every sandbox (chroots deleted)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(90)
            except subprocess.TimeoutExpired:
                log("the server did not stop within 90 s; killing it")
        if self.proc.poll() is None or (self.worker is not None and os.path.exists(f"/proc/{self.worker}")):
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(10)
        self.http.close()
        self._log.close()


# -- profiling the server -----------------------------------------------------------------------------------
class ServerProfile:
    """py-spy (an external sampling profiler: ``--py-spy PATH``) on the gunicorn worker over a
    window, sampling the thread that holds the GIL (20 times a second: with 30 sandboxes the
    worker has ~800 threads, and sampling them all falls minutes behind) — where its Python CPU goes."""

    def __init__(self, py_spy: str | None, out: Path | None, pid: int | None, seconds: float) -> None:
        self.proc = None
        self.out = out
        if py_spy and out and pid:
            self._log = open(f"{out}.log", "w")
            self.proc = subprocess.Popen([py_spy, "record", "--pid", str(pid), "--duration", str(int(seconds)),
                                          "--rate", "20", "--gil", "--nonblocking", "--format", "raw", "-o", str(out)],
                                         stdout=self._log, stderr=subprocess.STDOUT)

    def summary(self, top: int = 25) -> dict | None:
        if self.proc is None:
            return None
        try:
            self.proc.wait(120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(10)
        finally:
            self._log.close()
        if not Path(self.out).exists():
            log(f"  py-spy wrote no profile; see {self.out}.log")
            return None
        return summarize_collapsed(self.out, top)


def summarize_collapsed(path: Path, top: int = 25) -> dict:
    """Top functions of a collapsed-stack profile, by share of samples: inclusive and self."""
    inclusive: collections.Counter = collections.Counter()
    own: collections.Counter = collections.Counter()
    total = 0
    for line in Path(path).read_text().splitlines():
        if not line.strip():
            continue
        stack, n = line.rsplit(" ", 1)
        frames = [f for f in stack.split(";") if f]
        total += int(n)
        if frames:
            own[frames[-1]] += int(n)
        for frame in set(frames):
            inclusive[frame] += int(n)
    share = lambda c: {f: round(100 * n / max(1, total), 1) for f, n in c.most_common(top)}  # noqa: E731
    return {"samples": total, "inclusive_pct": share(inclusive), "self_pct": share(own)}
