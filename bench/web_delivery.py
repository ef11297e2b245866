"""Record delivery latency through the real web app: runtime emits a record -> a Socket.IO client has it.

Scenarios (see ``bench/README.md`` for the story and ``docs/performance.md`` for results):

* ``delivery`` — one sandbox (the app's default: 3 brokers, topic ``t`` of 3 partitions, RF 3)
  with a background ``produce`` fault at ``--produce-rate`` messages/s; ``--clients`` Socket.IO
  clients all join its room. Latency of every record a client receives = its receive time
  (wall clock, when the ``records`` handler runs) minus the record's ``ts_ms`` (wall clock when
  the record bus stamped it; same host, same clock). Also reported: the record rate the runtime
  actually emitted and the clients received (the target is 1,000 records/s).
* ``sandboxes`` — ``--sandboxes`` sandboxes of 3 brokers, one client each; every client crashes
  and restarts its brokers in turn (one fault every ``--fault-interval`` s, through the socket's
  ``fault`` event as the page sends it, or ``--fault-via http``). Latency of a fault = the time
  its client receives the record whose ``seq`` the fault's answer names (the fault record)
  minus the time the request was sent.

The app is the real one: ``kclab serve --zk <the bench's own ZooKeeper> --port <free>`` as a
child process (gunicorn, one gthread worker, records broadcast 15 times a second). Clients are
python-socketio clients (websocket transport) in ``--client-procs`` child processes. The server,
its sandboxes' chroots, the client processes and the ZooKeeper JVM are stopped/deleted at the
end, also when a run fails.

    .venv/bin/python bench/web_delivery.py --scenario delivery --clients 1 --runs 3
    .venv/bin/python bench/web_delivery.py --scenario delivery --clients 50 --runs 3
    .venv/bin/python bench/web_delivery.py --scenario sandboxes --sandboxes 30 --runs 3
"""

from __future__ import annotations

import argparse
import collections
import ctypes
import itertools
import json
import math
import multiprocessing
import os
import platform
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

_TICK = os.sysconf("SC_CLK_TCK")

from bench.quiet import wait_quiet  # noqa: E402


# -- small helpers ----------------------------------------------------------------------------------
def log(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def percentile(sorted_values: list[float], p: float) -> float | None:
    """Nearest-rank percentile of an ascending list (``None`` when empty)."""
    if not sorted_values:
        return None
    k = max(0, min(len(sorted_values) - 1, math.ceil(p / 100 * len(sorted_values)) - 1))
    return sorted_values[k]


def latency_stats(values: list[float]) -> dict[str, Any]:
    values = sorted(values)
    if not values:
        return {"n": 0}
    return {"n": len(values), "p50_ms": round(percentile(values, 50), 1), "p95_ms": round(percentile(values, 95), 1),
            "p99_ms": round(percentile(values, 99), 1), "max_ms": round(values[-1], 1),
            "mean_ms": round(statistics.fmean(values), 1)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime + stime


def children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except OSError:
            continue
        if ppid == pid:
            out.append(int(entry))
    return out


def machine_busy_seconds() -> float:
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    return (sum(values[:8]) - values[3] - values[4]) / _TICK


def cpu_fields(window, cpu0, cpu1, clients0, clients1, zk0, zk1, busy0, busy1, zk_pid) -> dict:
    """Where the window's CPU went: the server's processes, the clients, ZooKeeper, the machine
    and everything else on it (what explains a bad tail on a shared machine)."""
    return {
        "server_cpu_pct_of_one_core": {k: round(100 * (cpu1[k] - cpu0[k]) / window, 1) for k in cpu1},
        "clients_cpu_pct_of_one_core": round(100 * (clients1 - clients0) / window, 1),
        "zookeeper_cpu_pct_of_one_core": round(100 * (zk1 - zk0) / window, 1),
        "machine_busy_pct_of_all_cores": round(100 * (busy1 - busy0) / window / os.cpu_count(), 1),
        "other_processes_pct_of_all_cores": others_pct(busy1 - busy0, sum(cpu1.values()) - sum(cpu0.values()),
                                                       clients1 - clients0, zk_pid, zk1 - zk0, window),
    }


def others_pct(busy: float, server: float, clients: float, zk_pid: int | None, zk_s: float, window: float) -> float:
    """Other processes' CPU over the window, in % of all cores: the machine's busy time minus
    the server's, the clients' and our ZooKeeper's."""
    return round(100 * (busy - server - clients - zk_s) / window / os.cpu_count(), 1)


def zk_cpu(zk_pid: int | None) -> float:
    try:
        return cpu_seconds(zk_pid) if zk_pid else 0.0
    except OSError:
        return 0.0


def machine() -> dict[str, Any]:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), "?")
    mem_kb = next(int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                  if line.startswith("MemTotal"))
    from importlib.metadata import version
    debian = Path("/etc/debian_version").read_text().strip() if Path("/etc/debian_version").exists() else "?"
    return {"nproc": os.cpu_count(), "cpu": cpu, "ram_gb": round(mem_kb / 1024 / 1024, 1), "debian": debian,
            "python": platform.python_version(), "flask-socketio": version("flask-socketio"),
            "python-socketio": version("python-socketio"), "gunicorn": version("gunicorn")}


# -- the app under test -------------------------------------------------------------------------------
def _term_with_parent():
    """``preexec_fn``: the server gets SIGTERM (and stops its sandboxes) if the bench dies."""
    prctl = ctypes.CDLL(None, use_errno=True).prctl
    parent = os.getpid()

    def preexec():
        prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGTERM)
    return preexec


class AppServer:
    """``kclab serve`` in a child process (gunicorn master + one worker), on a free port."""

    def __init__(self, zk_hosts: str, data_dir: Path, threads: int, source: Path = ROOT,
                 serve_args: tuple[str, ...] = ("--workers", "1")) -> None:
        """``source``: the tree whose app runs (bench/classroom.py runs an older commit's too)."""
        import requests
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.log_path = data_dir / "server.log"
        self._log = open(self.log_path, "w")
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "KCLAB_INSTRUCTOR_TOKEN": "bench-instructor-token",
               "PYTHONPATH": str(source)}
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
            raise RuntimeError(f"{method} {path} -> {response.status_code}: {response.text[:300]}")
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


# -- clients (in child processes) -----------------------------------------------------------------------
class Watcher:
    """One python-socketio client joined to one sandbox's room; notes when each record arrives."""

    def __init__(self, url: str, sandbox: dict, count_kinds: bool = False) -> None:
        import socketio
        self.sandbox, self.token = sandbox["id"], sandbox["token"]
        # websocket-client checks every text frame's UTF-8 in a pure-Python loop over its bytes;
        # a browser does that natively. Left on, 50 clients use more CPU than the server they measure.
        self.sio = socketio.Client(reconnection=False, websocket_extra_options={"skip_utf8_validation": True})
        self.received: dict[int, tuple[float, int]] = {}  # seq -> (receive ms, ts_ms), first arrival
        self.batches: list[tuple[float, int, int, int]] = []  # (receive ms, first seq, newest ts_ms, records)
        self.duplicates = 0
        self.kinds: collections.Counter | None = collections.Counter() if count_kinds else None
        self.sio.on("records", self._on_records)
        self.sio.connect(url, transports=["websocket"], wait_timeout=60,
                         headers={"X-Forwarded-For": sandbox["address"]} if sandbox.get("address") else {})
        self.address = sandbox.get("address")
        answer = self.sio.call("join", {"sandbox": self.sandbox, "token": self.token}, timeout=60)
        if not answer or not answer.get("ok"):
            raise RuntimeError(f"join refused: {answer}")

    def _on_records(self, payload) -> None:
        now = time.time() * 1000
        if payload.get("sandbox") != self.sandbox or "head" not in payload:
            return  # the catch-up batch sent on join holds old records: not deliveries
        received = self.received
        records = payload["records"]
        if records:
            self.batches.append((now, records[0]["seq"], max(r["ts_ms"] for r in records), len(records)))
        for record in records:
            seq = record["seq"]
            if seq in received:
                self.duplicates += 1
                continue
            received[seq] = (now, record["ts_ms"])
            if self.kinds is not None:
                self.kinds[record["kind"]] += 1

    def fault(self, op: str, broker: int, via: str, url: str, http) -> dict:
        body = {"op": op, "broker": broker}
        if via == "http":
            response = http.post(f"{url}api/sandboxes/{self.sandbox}/faults", json=body,
                                 headers={"X-Sandbox-Token": self.token, "X-Forwarded-For": self.address or ""},
                                 timeout=120)
            return response.json()
        return self.sio.call("fault", {"sandbox": self.sandbox, "token": self.token, **body}, timeout=120)

    def close(self) -> None:
        if self.sio.connected:
            try:
                self.sio.disconnect()
            except Exception:  # noqa: BLE001
                pass


def client_process(url: str, sandboxes: list[dict], conn, count_kinds: bool) -> None:
    """A child process hosting one client per entry of ``sandboxes``; talks to the bench over ``conn``.

    Messages: -> ("ready", n) once every client has joined; <- ("stop", s0, s1) -> ("result", ...)
    for a delivery run; <- ("faults", seconds, interval, via, seed) -> ("result", ...) for a fault run.
    """
    watchers: list[Watcher] = []
    try:
        for i, sandbox in enumerate(sandboxes):
            watchers.append(Watcher(url, sandbox, count_kinds and i == 0))
        conn.send(("ready", len(watchers)))
        command = conn.recv()
        if command[0] == "stop":
            _, s0, s1 = command
            for watcher in watchers:  # stop receiving before counting
                watcher.close()
            conn.send(("result", _delivery_result(watchers, s0, s1)))
        elif command[0] == "faults":
            _, seconds, interval, via, seed = command
            faults = _drive_faults(url, watchers, seconds, interval, via, seed)
            time.sleep(2.0)  # the last faults' records are on their way
            for watcher in watchers:
                watcher.close()
            conn.send(("result", _fault_result(watchers, faults)))
    except Exception as exc:  # noqa: BLE001 - the bench reports it and cleans up
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        for watcher in watchers:
            watcher.close()


def _delivery_result(watchers: list[Watcher], s0: int, s1: int) -> dict:
    clients = []
    for w in watchers:
        lat = [recv - ts for seq, (recv, ts) in w.received.items() if s0 <= seq < s1]
        batches = [b for b in w.batches if s0 <= b[1] < s1]
        clients.append({"received": len(lat), "duplicates": w.duplicates, "latencies": lat,
                        "kinds": dict(w.kinds) if w.kinds is not None else None,
                        # how old the newest record of each batch was on arrival (the broadcast's own
                        # delay, without the wait for the next batch), and the gaps between batches
                        "newest_in_batch": [recv - newest for recv, _, newest, _ in batches],
                        "batch_gaps": [b[0] - a[0] for a, b in zip(batches, batches[1:])],
                        "batch_sizes": [n for *_, n in batches]})
    return {"clients": clients}


def _drive_faults(url: str, watchers: list[Watcher], seconds: float, interval: float, via: str, seed: int) -> list:
    """Every client, in its own thread: crash broker b, restart it, next broker, ... one fault every
    ``interval`` s (started at a random offset so the sandboxes do not act in lock step)."""
    import requests
    faults: list[tuple] = []
    lock = threading.Lock()
    end = time.monotonic() + seconds

    def drive(index: int, watcher: Watcher) -> None:
        rng = random.Random(seed * 1000 + index)
        http = requests.Session() if via == "http" else None
        next_at = time.monotonic() + rng.uniform(0, interval)
        step = 0
        while True:
            delay = min(next_at, end) - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            if time.monotonic() >= end:
                break
            broker = (step // 2) % 3
            op = "crash_broker" if step % 2 == 0 else "start_broker"
            sent = time.time() * 1000
            try:
                answer = watcher.fault(op, broker, via, url, http) or {}
            except Exception as exc:  # noqa: BLE001 - counted as a failed fault
                answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
            answered = time.time() * 1000
            with lock:
                faults.append((index, op, broker, sent, answered, answer.get("seq"), bool(answer.get("ok")),
                               answer.get("error")))
            step += 1
            next_at += interval
            if next_at < time.monotonic():  # the fault took longer than the interval: go on at once
                next_at = time.monotonic()

    threads = [threading.Thread(target=drive, args=(i, w), daemon=True) for i, w in enumerate(watchers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 180)
    return faults


def _fault_result(watchers: list[Watcher], faults: list) -> dict:
    out = []
    for index, op, broker, sent, answered, seq, ok, error in faults:
        got = watchers[index].received.get(seq) if seq is not None else None
        out.append({"op": op, "ok": ok, "error": error, "answer_ms": answered - sent,
                    "latency_ms": (got[0] - sent) if got else None})
    delivery = [recv - ts for w in watchers for recv, ts in w.received.values()]
    return {"faults": out, "delivery_latencies": delivery, "records": sum(len(w.received) for w in watchers)}


class ClientPool:
    """``procs`` child processes sharing the clients; each sandbox entry is one client."""

    def __init__(self, url: str, sandboxes: list[dict], procs: int, count_kinds: bool = False, target=None) -> None:
        """``target``: what each child runs (``client_process``; bench/classroom.py's students follow a class too)."""
        ctx = multiprocessing.get_context("spawn")
        procs = max(1, min(procs, len(sandboxes)))
        self.workers = []
        for i in range(procs):
            mine = sandboxes[i::procs]
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=target or client_process, args=(url, mine, child, count_kinds and i == 0),
                               daemon=True,
                               name=f"clients-{i}")
            proc.start()
            self.workers.append((proc, parent))

    def _recv(self, conn, timeout: float):
        if not conn.poll(timeout):
            raise TimeoutError(f"a client process did not answer within {timeout:.0f} s")
        message = conn.recv()
        if message[0] == "error":
            raise RuntimeError(f"a client process failed: {message[1]}")
        return message

    def cpu(self) -> float:
        """CPU seconds so far of all client processes together."""
        total = 0.0
        for proc, _ in self.workers:
            try:
                total += cpu_seconds(proc.pid)
            except OSError:
                pass
        return total

    def wait_ready(self, timeout: float = 300) -> int:
        return sum(self._recv(conn, timeout)[1] for _, conn in self.workers)

    def command(self, *message, timeout: float = 300) -> list[dict]:
        for _, conn in self.workers:
            conn.send(message)
        return [self._recv(conn, timeout)[1] for _, conn in self.workers]

    def close(self) -> None:
        for proc, conn in self.workers:
            proc.join(15)
            if proc.is_alive():
                proc.kill()
                proc.join(5)
            conn.close()


# -- scenarios ----------------------------------------------------------------------------------------------
def run_delivery(server: AppServer, args) -> dict:
    sandbox = server.create_sandbox()
    pool = None
    try:
        pool = ClientPool(server.url, [sandbox] * args.clients, args.client_procs, count_kinds=True)
        joined = pool.wait_ready()
        count = int(args.produce_rate * (args.warmup + args.seconds + 5))
        server.api("POST", f"/api/sandboxes/{sandbox['id']}/faults",
                   {"op": "produce", "topic": "t", "partition": 0, "count": count, "rate": args.produce_rate},
                   token=sandbox["token"], address=sandbox["address"])
        time.sleep(args.warmup)
        load = os.getloadavg()
        s0, t0, cpu0, busy0 = server.next_seq(sandbox), time.monotonic(), server.cpu(), machine_busy_seconds()
        clients_cpu0, zk0 = pool.cpu(), zk_cpu(args.zk_pid)
        profile = ServerProfile(args.py_spy, args.profile, server.worker, args.seconds) if args.first_run else None
        time.sleep(args.seconds)
        s1, t1, cpu1, busy1 = server.next_seq(sandbox), time.monotonic(), server.cpu(), machine_busy_seconds()
        clients_cpu1, zk1 = pool.cpu(), zk_cpu(args.zk_pid)
        time.sleep(1.5)  # the window's last records are on their way
        results = pool.command("stop", s0, s1)
        profiled = profile.summary() if profile is not None else None
    finally:
        if pool is not None:
            pool.close()
        server.delete_sandbox(sandbox)
    clients = [c for r in results for c in r["clients"]]
    latencies = [v for c in clients for v in c["latencies"]]
    window = t1 - t0
    emitted = s1 - s0
    kinds = next((c["kinds"] for c in clients if c["kinds"]), {})
    return {
        "clients": joined, "produce_rate": args.produce_rate, "window_s": round(window, 2),
        "records_emitted": emitted, "emitted_per_s": round(emitted / window, 1),
        "received_per_client_per_s": round(statistics.median(c["received"] for c in clients) / window, 1),
        "clients_missing_records": sum(1 for c in clients if c["received"] < emitted),
        "duplicates": sum(c["duplicates"] for c in clients),
        "latency": latency_stats(latencies),
        "per_client_p99_ms": {"median": round(statistics.median(percentile(sorted(c["latencies"]), 99) or 0
                                                                 for c in clients), 1),
                              "max": round(max(percentile(sorted(c["latencies"]), 99) or 0 for c in clients), 1)},
        "newest_record_in_batch": latency_stats([v for c in clients for v in c["newest_in_batch"]]),
        "gap_between_batches": latency_stats([v for c in clients for v in c["batch_gaps"]]),
        "records_per_batch_median": statistics.median([n for c in clients for n in c["batch_sizes"]] or [0]),
        "record_kinds_whole_run_client_0": dict(sorted(kinds.items(), key=lambda kv: -kv[1])),
        **cpu_fields(window, cpu0, cpu1, clients_cpu0, clients_cpu1, zk0, zk1, busy0, busy1, args.zk_pid),
        "loadavg_at_start": [round(x, 2) for x in load],
        **({"server_profile": profiled} if profiled else {}),
    }


def run_sandboxes(server: AppServer, args) -> dict:
    created: list[dict] = []
    lock = threading.Lock()
    errors: list[str] = []
    started = time.monotonic()

    def create(n: int) -> None:
        for _ in range(n):
            try:
                sandbox = server_api_clone(server).create_sandbox()
            except Exception as exc:  # noqa: BLE001
                errors.append(str(exc))
                return
            with lock:
                created.append(sandbox)
            log(f"  sandbox {len(created)}/{args.sandboxes} up")

    per_thread = [args.sandboxes // args.create_threads + (1 if i < args.sandboxes % args.create_threads else 0)
                  for i in range(args.create_threads)]
    threads = [threading.Thread(target=create, args=(n,)) for n in per_thread]
    pool = None
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise RuntimeError(f"creating sandboxes failed: {errors[0]}")
        create_s = time.monotonic() - started
        pool = ClientPool(server.url, created, args.client_procs)
        joined = pool.wait_ready()
        time.sleep(2.0)  # settle after joins
        load = os.getloadavg()
        t0, cpu0, busy0, clients_cpu0 = time.monotonic(), server.cpu(), machine_busy_seconds(), pool.cpu()
        zk0 = zk_cpu(args.zk_pid)
        profile = ServerProfile(args.py_spy, args.profile, server.worker, args.seconds) if args.first_run else None
        results = pool.command("faults", args.seconds, args.fault_interval, args.fault_via, args.seed,
                               timeout=args.seconds + 400)
        t1, cpu1, busy1, clients_cpu1 = time.monotonic(), server.cpu(), machine_busy_seconds(), pool.cpu()
        zk1 = zk_cpu(args.zk_pid)
        profiled = profile.summary() if profile is not None else None
    finally:
        if pool is not None:
            pool.close()
        for sandbox in created:
            server.delete_sandbox(sandbox)
    faults = [f for r in results for f in r["faults"]]
    latencies = [f["latency_ms"] for f in faults if f["latency_ms"] is not None]
    by_op = {op: latency_stats([f["latency_ms"] for f in faults if f["op"] == op and f["latency_ms"] is not None])
             for op in ("crash_broker", "start_broker")}
    window = t1 - t0
    return {
        "sandboxes": len(created), "clients": joined, "create_all_s": round(create_s, 1),
        "fault_interval_s": args.fault_interval, "fault_via": args.fault_via, "window_s": round(window, 1),
        "faults": len(faults), "faults_refused": sum(1 for f in faults if not f["ok"]),
        "faults_without_record_received": sum(1 for f in faults if f["latency_ms"] is None),
        "refusals": collections.Counter(f["error"] for f in faults if not f["ok"]).most_common(3),
        "fault_latency": latency_stats(latencies), "fault_latency_by_op": by_op,
        "fault_answer": latency_stats([f["answer_ms"] for f in faults]),
        "records_received": sum(r["records"] for r in results),
        "delivery_latency_all_records": latency_stats([v for r in results for v in r["delivery_latencies"]]),
        **cpu_fields(window, cpu0, cpu1, clients_cpu0, clients_cpu1, zk0, zk1, busy0, busy1, args.zk_pid),
        "server_cpu_ms_per_fault": round(1000 * (cpu1.get("worker", 0) - cpu0.get("worker", 0)) / max(1, len(faults))),
        "loadavg_at_start": [round(x, 2) for x in load],
        **({"server_profile": profiled} if profiled else {}),
    }


def server_api_clone(server: AppServer) -> AppServer:
    """``requests.Session`` is not thread-safe: a shallow copy with its own session per thread."""
    import copy
    import requests
    clone = copy.copy(server)
    clone.http = requests.Session()
    return clone


# -- the driver ------------------------------------------------------------------------------------------------
SUMMARY = {
    "delivery": ["emitted_per_s", "received_per_client_per_s", "latency.p50_ms", "latency.p95_ms", "latency.p99_ms",
                 "latency.max_ms", "newest_record_in_batch.p99_ms", "gap_between_batches.p99_ms",
                 "server_cpu_pct_of_one_core.worker", "clients_cpu_pct_of_one_core", "other_processes_pct_of_all_cores"],
    "sandboxes": ["fault_latency.p50_ms", "fault_latency.p95_ms", "fault_latency.p99_ms", "fault_latency.max_ms",
                  "fault_answer.p50_ms", "fault_answer.p99_ms", "delivery_latency_all_records.p99_ms",
                  "server_cpu_pct_of_one_core.worker", "clients_cpu_pct_of_one_core", "other_processes_pct_of_all_cores",
                  "create_all_s"],
}


def dig(run: dict, key: str) -> Any:
    for part in key.split("."):
        run = run.get(part) if isinstance(run, dict) else None
    return run


def summarize(values: list) -> dict:
    values = [v for v in values if v is not None]
    if not values:
        return {}
    return {"median": round(statistics.median(values), 1), "min": round(min(values), 1),
            "max": round(max(values), 1), "runs": values}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenario", choices=("delivery", "sandboxes"), default="delivery")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--clients", type=int, default=1, help="delivery: clients watching the one sandbox")
    parser.add_argument("--produce-rate", type=int, default=950,
                        help="delivery: background produce, messages/s (each acknowledged message is one record; "
                             "follower fetches and HW moves add ~20 records/s)")
    parser.add_argument("--seconds", type=float, default=None,
                        help="measured window (default: delivery 10 s, sandboxes 60 s)")
    parser.add_argument("--warmup", type=float, default=3.0, help="delivery: seconds of producing before measuring")
    parser.add_argument("--sandboxes", type=int, default=30)
    parser.add_argument("--fault-interval", type=float, default=2.0, help="sandboxes: seconds between faults per sandbox")
    parser.add_argument("--fault-via", choices=("socket", "http"), default="socket")
    parser.add_argument("--create-threads", type=int, default=3, help="sandboxes: parallel sandbox creation")
    parser.add_argument("--client-procs", type=int, default=None,
                        help="processes hosting the clients (default: 1 per 10 clients, at most 5)")
    parser.add_argument("--threads", type=int, default=200, help="gunicorn worker threads (kclab serve's default)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--zk", metavar="HOST:PORT", help="use this ZooKeeper instead of starting the bench's own")
    parser.add_argument("--wait-quiet", type=float, metavar="PCT",
                        help="before each run, wait (up to --wait-max s) until the machine is at most PCT %% busy")
    parser.add_argument("--wait-max", type=float, default=300, metavar="S", help="see --wait-quiet (default 300)")
    parser.add_argument("--py-spy", metavar="PATH", help="py-spy executable: profile the server worker in run 1")
    parser.add_argument("--profile", type=Path, metavar="FILE",
                        help="with --py-spy: write run 1's collapsed stacks here (top functions go into the JSON)")
    parser.add_argument("--json", action="store_true", help="print every number of every run as JSON on stdout")
    args = parser.parse_args(argv)
    # SIGTERM (and SIGINT, which a background job may have ignored) unwind through the
    # ``finally`` blocks, so the server, the browser and ZooKeeper are stopped and chroots deleted.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if args.seconds is None:
        args.seconds = 10.0 if args.scenario == "delivery" else 60.0
    n_clients = args.clients if args.scenario == "delivery" else args.sandboxes
    if args.client_procs is None:
        args.client_procs = max(1, min(5, math.ceil(n_clients / 10)))

    import logging
    logging.getLogger("kazoo").setLevel(logging.ERROR)
    from backend.zkserver import server as zk_server

    results: dict[str, Any] = {
        "command": " ".join([".venv/bin/python", "bench/web_delivery.py", *(argv if argv is not None else sys.argv[1:])]),
        "scenario": args.scenario, "machine": machine(), "runs": []}
    zk = None
    server = None
    with tempfile.TemporaryDirectory(prefix="kclab-web-bench-") as tmp:
        try:
            if args.zk:
                hosts = args.zk
            else:
                zk = zk_server.ZooKeeperServer(force_sync=False).start()
                hosts = zk.hosts
            args.zk_pid = zk.pid if zk is not None else None
            log(f"ZooKeeper at {hosts}; starting kclab serve ...")
            server = AppServer(hosts, Path(tmp), args.threads)
            log(f"serving at {server.url} (gunicorn worker pid {server.worker})")
            for i in range(args.runs):
                args.first_run = i == 0
                quiet = wait_quiet(args.wait_quiet, args.wait_max)
                run = run_delivery(server, args) if args.scenario == "delivery" else run_sandboxes(server, args)
                run["machine_before_run"] = quiet
                results["runs"].append(run)
                log(f"run {i + 1}/{args.runs}: " + json.dumps({k: dig(run, k) for k in SUMMARY[args.scenario]}))
        finally:
            if server is not None:
                server.stop()
                leftovers = _delete_leftover_chroots(hosts, server.chroots)
                if leftovers:
                    log(f"the server left {len(leftovers)} sandbox chroot(s) behind; deleted them")
            if zk is not None:
                zk.stop()
    results["summary"] = {k: summarize([dig(r, k) for r in results["runs"]]) for k in SUMMARY[args.scenario]}
    if args.json:
        json.dump(results, sys.stdout, indent=2)
        print()
    else:
        for key, s in results["summary"].items():
            print(f"{key:45s} median {s.get('median')!s:>8} min {s.get('min')!s:>8} max {s.get('max')!s:>8}")
    return 0


def _delete_leftover_chroots(hosts: str, chroots: list[str]) -> list[str]:
    """The sandboxes' chroots that are still there (a clean stop deletes them all): delete them."""
    from bench.zk_tools import close, delete_tree, started_client
    client = started_client(hosts)
    try:
        return [chroot for chroot in chroots if delete_tree(client, chroot)]
    finally:
        close(client)


if __name__ == "__main__":
    raise SystemExit(main())
