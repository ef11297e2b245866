"""How long ``GET /api/replays`` takes to list a directory of replay logs: the first listing
(every line of every log checked), a listing after an app restart (the ``.kclab-index.json``
cache), a warm listing (nothing changed), and one after a single log grew.

    .venv/bin/python bench/replay_list.py --logs 1000 --records 300 --runs 3

Logs are synthetic (``backend.runtime.replay.ReplayWriter``, records shaped like a sandbox's:
znodes with JSON detail, partition transitions with notes) in a temporary directory. No
ZooKeeper is needed. Prints one line per measure: the median of the runs, in seconds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from backend.core.records import Record, SessionHeader  # noqa: E402
from backend.runtime.replay import ReplayWriter  # noqa: E402
from backend.runtime.replay_index import INDEX_FILE, ReplayIndex  # noqa: E402


def make_logs(directory: Path, logs: int, records: int) -> int:
    started = 1_795_219_200_000
    for i in range(logs):
        session = f"bench-{i:05d}"
        writer = ReplayWriter(directory, SessionHeader(session, ("sandbox", "lesson", "class")[i % 3], started + i,
                                                       "0.1.0", {"brokers": [0, 1, 2]}, class_id=f"c{i % 7}"))
        batch = []
        for seq in range(records):
            if seq % 2:
                r = Record(kind="zk", subject=f"znode:/brokers/topics/t/partitions/{seq % 3}/state", to_state="changed",
                           zk_version=seq, zxid=1000 + seq, detail={"data": {"controller_epoch": 1, "leader": seq % 3,
                                                                             "version": 1, "isr": [0, 1, 2]}})
            else:
                r = Record(kind="partition", subject=f"partition:t-{seq % 3}", from_state="OfflinePartition",
                           to_state="OnlinePartition", topic="t", partition=seq % 3, leader=seq % 3, isr=(0, 1, 2),
                           leader_epoch=seq, controller_id=0, controller_epoch=1, outcome="ok",
                           note="2 is the first live ISR member in assignment [2,0,1], so it leads.")
            batch.append(r.stamped(session, seq, started + seq))
        writer(batch)
        writer.close()
    return sum(p.stat().st_size for p in directory.glob("*.jsonl"))


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--logs", type=int, default=1000)
    parser.add_argument("--records", type=int, default=300)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    results: dict[str, list[float]] = {"first": [], "after_restart": [], "warm": [], "one_grew": []}
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        size = make_logs(directory, args.logs, args.records)
        grow = Record(kind="broker", subject="broker:0", to_state="crashed", broker_id=0)
        for run in range(args.runs):
            (directory / INDEX_FILE).unlink(missing_ok=True)
            index = ReplayIndex(directory)
            results["first"].append(timed(index.entries))
            results["after_restart"].append(timed(lambda: ReplayIndex(directory).entries()))  # loads the cache
            results["warm"].append(timed(index.entries))
            with open(directory / "bench-00000.jsonl", "a") as f:
                f.write(json.dumps(grow.stamped("bench-00000", args.records + run, 0).to_dict()) + "\n")
            results["one_grew"].append(timed(index.entries))
    print(f"{args.logs} logs x {args.records} records ({size / 1e6:.1f} MB), median of {args.runs} runs:")
    for name, values in results.items():
        print(f"  {name:14s} {statistics.median(values):8.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
