"""How fast the page applies records: a replay log repeated to N records, streamed to the page
at R records/s (in 15 batches a second, as the server batches), frame times measured in Chromium.
It drives static/ through tests/js/static_server.py (the page's replay source), so no
ZooKeeper or server is needed: only the page's fold and drawing are measured.

    .venv/bin/python bench/page_render.py LOG.jsonl --records 50000 --rate 5000 --seconds 12
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

import sys

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.js.static_server import serve  # noqa: E402

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync"]
FRAMES = """window.__frames = []; let last = performance.now();
const tick = (t) => { window.__frames.push(t - last); last = t; requestAnimationFrame(tick); };
requestAnimationFrame(tick);"""


def repeated(log: Path, count: int, out: Path) -> None:
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    header, records = lines[0], lines[1:]
    with out.open("w") as f:
        f.write(json.dumps(header) + "\n")
        for seq in range(count):
            r = dict(records[seq % len(records)])
            shift = (seq // len(records)) * len(records)
            if r.get("cause_seq") is not None:
                r["cause_seq"] += shift
            r["seq"] = seq
            f.write(json.dumps(r) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path)
    parser.add_argument("--records", type=int, default=50000)
    parser.add_argument("--rate", default="5000", help="records per second, or 'all'")
    parser.add_argument("--seconds", type=float, default=12)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        repeated(args.log, args.records, Path(tmp) / "bench.jsonl")
        server = serve(0, replays=Path(tmp))
        url = f"http://127.0.0.1:{server.server_address[1]}/?replay=/replays/bench.jsonl&rate={args.rate}"
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
            page = browser.new_page(viewport={"width": 1500, "height": 1200})
            page.add_init_script(FRAMES)
            page.goto(url)
            time.sleep(args.seconds)
            frames = sorted(page.evaluate("window.__frames")[5:])
            stats = page.evaluate("window.kclab.stats")
            seq = page.evaluate("document.body.dataset.seq")
            browser.close()
        server.shutdown()
    n = len(frames)
    print(f"applied up to seq {seq} in {args.seconds:g} s at rate {args.rate}")
    print(f"frames {n}: median {frames[n // 2]:.1f} ms, p95 {frames[int(n * .95)]:.1f} ms, max {frames[-1]:.1f} ms, "
          f"{sum(f > 50 for f in frames)} over 50 ms")
    print(f"draws {stats['draws']}: {stats['drawMs'] / max(1, stats['draws']):.1f} ms each (max {stats['maxDrawMs']:.1f}); "
          f"ingest {stats['ingestMs']:.0f} ms in all (max batch {stats['maxIngestMs']:.1f})")


if __name__ == "__main__":
    main()
