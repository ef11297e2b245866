"""What a thread's timed wake-up costs on this machine, alone and together with others.

An idle sandbox is threads waking on timers (its ZooKeeper sessions' pings, its brokers' idle
fetches), so its CPU is about wake-ups x the cost of one. This bench gives that cost with no
kazoo or lab code: ``--threads`` Python threads, each waking every ``--period`` s (less kazoo's
ping jitter of 10-400 ms) from a ``poll`` with a time-out and going straight back to sleep, in
two arrangements, alternated run by run:

* ``spread``: each thread's wake-ups fall where its own timer puts them, as kazoo's do;
* ``grid``: each wake-up is moved to the next multiple of ``--grid`` s of the monotonic clock, so
  the threads wake together.

Reported: the process's CPU per wake-up (user and system), and wake-ups per second. The twelfth
round of issue 14 (docs/performance.md) used it to tell the cost of a wake-up from the Python that
follows it.

    .venv/bin/python bench/timer_wakes.py --threads 400 --runs 3 --json
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import select
import statistics
import subprocess
import sys
import threading
import time


def measure(threads: int, period: float, grid: float, seconds: float) -> dict:
    """One arrangement, in this process (a child of the bench: its threads never stop)."""
    wakes = [0] * threads  # a slot per thread: a shared `+= 1` from 400 threads can lose counts

    def sleeper(slot: int) -> None:
        poller = select.poll()
        due = time.monotonic() + random.random() * period
        while True:
            ends = math.ceil(due / grid) * grid if grid else due
            poller.poll(max(0, math.ceil((ends - time.monotonic()) * 1000)))
            wakes[slot] += 1
            due = time.monotonic() + period - random.randint(1, 40) / 100

    for slot in range(threads):
        threading.Thread(target=sleeper, args=(slot,), daemon=True).start()
    time.sleep(2 * period)  # every thread asleep on its own timer
    w0, t0 = sum(wakes), os.times()
    time.sleep(seconds)
    w1, t1 = sum(wakes), os.times()
    n = max(1, w1 - w0)
    return {"us_per_wake": round(1e6 * ((t1.user - t0.user) + (t1.system - t0.system)) / n, 1),
            "user_us_per_wake": round(1e6 * (t1.user - t0.user) / n, 1),
            "system_us_per_wake": round(1e6 * (t1.system - t0.system) / n, 1),
            "wakes_per_s": round(n / seconds)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=400)
    parser.add_argument("--period", type=float, default=1.33, help="s between a thread's wake-ups (kazoo's ping at a 4 s session)")
    parser.add_argument("--grid", type=float, default=0.05, help="s, the grid of the 'grid' arrangement")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--child", choices=("spread", "grid"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        grid = args.grid if args.child == "grid" else 0.0
        print(json.dumps(measure(args.threads, args.period, grid, args.seconds)))
        return 0
    runs: dict[str, list[dict]] = {"spread": [], "grid": []}
    for run in range(args.runs):
        for arrangement in runs:
            load = [round(x, 2) for x in os.getloadavg()]
            out = subprocess.run([sys.executable, __file__, "--child", arrangement, "--threads", str(args.threads),
                                  "--period", str(args.period), "--grid", str(args.grid), "--seconds", str(args.seconds)],
                                 capture_output=True, text=True, check=True)
            result = {**json.loads(out.stdout), "loadavg_at_start": load}
            runs[arrangement].append(result)
            print(f"run {run + 1} {arrangement}: {result}", file=sys.stderr)
    medians = {name: statistics.median(r["us_per_wake"] for r in results) for name, results in runs.items()}
    if args.json:
        json.dump({"runs": runs, "median_us_per_wake": medians}, sys.stdout, indent=1)
        print()
    else:
        print(f"median CPU per wake-up: spread {medians['spread']} us, on a {args.grid} s grid {medians['grid']} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
