"""What one ZooKeeper request costs kazoo's connection thread with our handler: CPU and system calls.

``fault_profile.py`` says kazoo's connection threads are the largest share of a fault's CPU; this
isolates one of them. A client with ``backend.zk.handler.PollingThreadingHandler`` (as every
broker's) against a ZooKeeper the bench starts (``--zk`` for another), timed two ways:

* ``sync``: ``get`` of a 100-byte znode in a loop — one request in flight, as most of a fault's
  are — the connection thread's CPU per round trip (``/proc/self/task/<tid>/schedstat``);
* ``burst``: 50 ``get_async`` under ``deferred_wakeups`` (one wake-up, as the controller's
  pipelined writes), waited for; the connection thread's CPU per request.

With ``--before COMMIT`` that commit's handler (``git archive`` of its ``backend/zk``, loaded
beside this tree's) drives a second client in the same process, and the two take turns in
blocks of ``--block`` requests, ``--rounds`` times: both see the same moments of a shared
machine, and the ratio of each pair of blocks is reported (its median) — on two shared cores
the CPU of one request moved by 2× from run to run, a paired block by a few per cent.

``--strace`` adds each variant's system calls per request by name (``strace -c`` attached to its
connection thread alone, in a pass of its own: traced CPU is not counted).

    .venv/bin/python bench/zk_round_trip.py --before 8887f86 --rounds 30 --strace
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
PATH = f"/kclab-bench-rt-{os.getpid()}"


def handler_of(commit: str, into: Path):
    """``backend/zk/handler.py`` of ``commit`` as a module of its own (with its ``buffered_io``
    if it has one), so both handlers live in one process."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", commit, "backend/zk"], check=True,
                             capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    ours = sys.modules.get("backend.zk.buffered_io")
    try:
        if (into / "backend/zk/buffered_io.py").exists():
            sys.modules["backend.zk.buffered_io"] = _load(f"buffered_io_{commit}", into / "backend/zk/buffered_io.py")
        return _load(f"handler_{commit}", into / "backend/zk/handler.py")
    finally:
        if ours is not None:
            sys.modules["backend.zk.buffered_io"] = ours


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _thread_cpu_ns(tid: int) -> int:
    with open(f"/proc/self/task/{tid}/schedstat") as f:
        return int(f.read().split()[0])


def _requests(zk, handler_module, mode: str, count: int) -> None:
    if mode == "sync":
        for _ in range(count):
            zk.get(PATH)
        return
    for _ in range(count // 50):
        with handler_module.deferred_wakeups(zk):
            pending = [zk.get_async(PATH) for _ in range(50)]
        for result in pending:
            result.get(timeout=10)


def _syscalls(zk, handler_module, tid: int, mode: str, count: int) -> dict:
    """``strace -c`` on the connection thread while ``count`` requests run; calls per request."""
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as out:
        tracer = subprocess.Popen(["strace", "-c", "-p", str(tid), "-o", out.name], stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while "TracerPid:\t0" in Path(f"/proc/self/task/{tid}/status").read_text():
            if time.monotonic() > deadline:
                raise RuntimeError("strace did not attach")
            time.sleep(0.01)
        _requests(zk, handler_module, mode, count)
        tracer.send_signal(signal.SIGINT)
        tracer.wait(10)
        calls = {}
        for line in out.read().splitlines():
            fields = line.split()
            if len(fields) >= 5 and fields[3].isdigit() and fields[-1] != "total":
                calls[fields[-1]] = round(int(fields[3]) / count, 2)
        return calls


def measure(hosts: str, variants: dict, rounds: int, block: int, trace: bool) -> dict:
    from kazoo.client import KazooClient

    clients = {name: KazooClient(hosts=hosts, handler=module.PollingThreadingHandler()) for name, module in variants.items()}
    names = list(clients)
    try:
        for zk in clients.values():
            zk.start(timeout=15)
        clients[names[0]].create(PATH, b"x" * 100)
        tids = {name: zk._connection._connection_routine.native_id for name, zk in clients.items()}
        result = {}
        for mode in ("sync", "burst"):
            per_request: dict[str, list[float]] = {name: [] for name in names}
            for name in names:  # warm up
                _requests(clients[name], variants[name], mode, 500)
            for r in range(rounds):
                for name in names[r % len(names):] + names[:r % len(names)]:  # who goes first alternates
                    before = _thread_cpu_ns(tids[name])
                    _requests(clients[name], variants[name], mode, block)
                    per_request[name].append((_thread_cpu_ns(tids[name]) - before) / block / 1e3)
            result[mode] = {f"{name}_conn_us_per_request": round(statistics.median(per_request[name]), 1) for name in names}
            for name in names[1:]:
                ratios = [b / a for a, b in zip(per_request[names[0]], per_request[name])]
                result[mode][f"{name}/{names[0]}"] = round(statistics.median(ratios), 3)
            if trace:
                for name in names:
                    result[mode][f"{name}_syscalls_per_request"] = _syscalls(clients[name], variants[name], tids[name],
                                                                            mode, 2000)
        return result
    finally:
        if clients[names[0]].connected:
            clients[names[0]].delete(PATH)
        for zk in clients.values():
            zk.stop()
            zk.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--before", metavar="COMMIT", help="also this commit's handler, in turns")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--block", type=int, default=300, help="requests per timed block")
    parser.add_argument("--strace", action="store_true", help="also count the system calls (strace)")
    parser.add_argument("--zk", help="an existing ZooKeeper (default: one started for the bench)")
    args = parser.parse_args()
    import backend.zk  # noqa: F401 - kazoo's jitter off the process's random, as in the app
    from backend.zk import handler
    from backend.zkserver.server import ZooKeeperServer

    with tempfile.TemporaryDirectory() as old_tree:
        variants = {"before": handler_of(args.before, Path(old_tree))} if args.before else {}
        variants["head"] = handler
        server = None if args.zk else ZooKeeperServer().start()
        try:
            result = measure(args.zk or server.hosts, variants, args.rounds, args.block, args.strace)
        finally:
            if server is not None:
                server.stop()
    result["load_at_end"] = os.getloadavg()[0]
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
