"""How fast the page applies records: a replay log repeated to N records, streamed to the page
at R records/s (in 15 batches a second, as the server batches), frame times measured in Chromium.
It drives static/ through tests/js/static_server.py (the page's replay source), so no
ZooKeeper or server is needed: only the page's fold and drawing are measured.

    .venv/bin/python bench/page_render.py LOG.jsonl --rate 5000 --seconds 10 --runs 3
    .venv/bin/python bench/page_render.py LOG.jsonl --rates 1000,2000,5000,10000 --runs 3 --json
    .venv/bin/python bench/page_render.py LOG.jsonl --diagram 100,10000 --runs 3

``--diagram N,M`` measures the space-time diagram instead, on logs of N and M records loaded at
once: its render time (the view's own ``data-render-ms``) and the page's frame times while the
diagram is scrolled from the first record to the last in 150 steps, at the default zoom and
zoomed out to 3 px a record (the most items in sight), and while the cursor is scrubbed to 40
seqs. The smallest log is the floor: a diagram that draws only what is in sight costs the same
at 10,000 records as at 100.

Frames are timed with ``requestAnimationFrame`` while the stream lasts (from the first record
applied to the last); a frame longer than 1.2 x 16.7 ms = 20 ms is a dropped frame. The
*achieved* rate is records applied per second over that stretch: when the page cannot keep up,
the replay source's timer fires late and the achieved rate falls below the asked one.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.quiet import wait_quiet  # noqa: E402
from tests.js.static_server import serve  # noqa: E402

ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync"]
# Each frame: [time, frame duration, the seq the page shows] — the seq tells which frames fell
# while records were streaming in.
FRAMES = """window.__frames = []; let last = performance.now();
const tick = (t) => { window.__frames.push([t, t - last, Number(document.body.dataset.seq ?? -1)]); last = t;
                      requestAnimationFrame(tick); };
requestAnimationFrame(tick);"""
DROPPED_MS = 1.2 * 1000 / 60


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


def pct(values: list[float], p: float) -> float:
    return values[min(len(values) - 1, int(len(values) * p))]


def measure(browser, url: str, records: int, seconds: float) -> dict:
    page = browser.new_page(viewport={"width": 1500, "height": 1200})
    page.add_init_script(FRAMES)
    page.goto(url)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:  # until the stream ends (or the time is up)
        time.sleep(0.5)
        if page.evaluate("Number(document.body.dataset.seq ?? -1)") >= records - 1:
            break
    time.sleep(0.5)
    frames = page.evaluate("window.__frames")
    stats = page.evaluate("window.kclab.stats")
    seq = page.evaluate("Number(document.body.dataset.seq)")
    page.close()
    streaming = [(t, dt, s) for t, dt, s in frames if 0 <= s < records - 1]
    if len(streaming) < 2:
        raise RuntimeError(f"the page applied no records (it shows seq {seq})")
    # The frame that shows the last record closes the stream too.
    end = next(((t, dt, s) for t, dt, s in frames if s >= records - 1), None)
    stretch = streaming[1:] + ([end] if end else [])
    times = sorted(dt for _, dt, _ in stretch)
    first_t, first_seq = streaming[0][0], streaming[0][2]
    last_t, last_seq = (end[0], end[2]) if end else (streaming[-1][0], streaming[-1][2])
    n = len(times)
    return {
        "applied_up_to_seq": seq, "finished": end is not None,
        "achieved_records_per_s": round((last_seq - first_seq) / ((last_t - first_t) / 1000)),
        "frames": n, "frame_median_ms": round(times[n // 2], 1), "frame_p95_ms": round(pct(times, 0.95), 1),
        "frame_p99_ms": round(pct(times, 0.99), 1), "frame_max_ms": round(times[-1], 1),
        "dropped_frames": sum(t > DROPPED_MS for t in times), "frames_over_50ms": sum(t > 50 for t in times),
        "draws": stats["draws"], "draw_ms_mean": round(stats["drawMs"] / max(1, stats["draws"]), 2),
        "draw_ms_max": round(stats["maxDrawMs"], 1), "ingest_ms_total": round(stats["ingestMs"]),
        "ingest_ms_max_batch": round(stats["maxIngestMs"], 1),
        "view_ms_total": [round(v) for v in stats.get("views", [])],
        "loadavg_1min": round(os.getloadavg()[0], 2),
    }


SCROLL = """async ([steps]) => {
  const scroller = document.querySelector('.st-scroll');
  const frame = () => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
  const out = [];
  for (let i = 0; i <= steps; i += 1) {
    const t = performance.now();
    scroller.scrollTop = (scroller.scrollHeight - scroller.clientHeight) * i / steps;
    await frame();
    out.push([performance.now() - t, Number(document.querySelector('#spacetime').dataset.renderMs),
              Number(document.querySelector('#spacetime').dataset.items)]);
  }
  return out;
}"""
SCRUB = """async ([seqs]) => {
  const frame = () => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)));
  const out = [];
  for (const seq of seqs) {
    const t = performance.now();
    await window.kclab.store.scrubTo(seq);
    await frame();
    out.push([performance.now() - t, Number(document.querySelector('#spacetime').dataset.renderMs),
              Number(document.querySelector('#spacetime').dataset.items)]);
  }
  return out;
}"""


def summarise(samples: list[list[float]]) -> dict:
    frames, renders, items = (sorted(x[i] for x in samples) for i in range(3))
    return {"steps": len(samples), "render_median_ms": round(renders[len(renders) // 2], 2),
            "render_p95_ms": round(pct(renders, 0.95), 2), "render_max_ms": round(renders[-1], 2),
            "frame_median_ms": round(frames[len(frames) // 2], 1), "frame_p95_ms": round(pct(frames, 0.95), 1),
            "items_median": items[len(items) // 2], "items_max": items[-1]}


def measure_diagram(browser, url: str, records: int) -> dict:
    """The diagram on a log of ``records`` records, all loaded: scrolled through, zoomed out, scrubbed."""
    page = browser.new_page(viewport={"width": 1500, "height": 1400})
    page.goto(url)
    page.wait_for_function(f"Number(document.body.dataset.seq) >= {records - 1}", timeout=120_000)
    page.locator(".spacetime-panel").scroll_into_view_if_needed()  # the diagram draws only while on screen
    page.wait_for_timeout(500)
    out = {"scroll": summarise(page.evaluate(SCROLL, [150]))}
    for _ in range(3):
        page.click('[data-action="zoom-out"]')
    out["scroll_zoomed_out"] = summarise(page.evaluate(SCROLL, [150]))
    step = max(1, records // 40)
    out["scrub"] = summarise(page.evaluate(SCRUB, [list(range(records - 1, -1, -step))[:40]]))
    out["loadavg_1min"] = round(os.getloadavg()[0], 2)
    page.close()
    return out


def run_diagram(args) -> None:
    sizes = [int(n) for n in args.diagram.split(",")]
    results = {"command": " ".join([".venv/bin/python", "bench/page_render.py", *sys.argv[1:]]), "log": str(args.log),
               "diagram": {}}
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        server = serve(0, replays=Path(tmp))
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        try:
            for n in sizes:
                repeated(args.log, n, Path(tmp) / f"diagram-{n}.jsonl")
            for i in range(args.runs):  # the sizes side by side in every run
                for n in sizes:
                    wait_quiet(args.wait_quiet, args.wait_max)
                    url = f"http://127.0.0.1:{server.server_address[1]}/?replay=/replays/diagram-{n}.jsonl&rate=all"
                    run = measure_diagram(browser, url, n)
                    results["diagram"].setdefault(str(n), []).append(run)
                    print(f"{n} records, run {i + 1}: " + "; ".join(
                        f"{k} render {v['render_median_ms']}/{v['render_p95_ms']} ms (median/p95), frame "
                        f"{v['frame_median_ms']}/{v['frame_p95_ms']} ms, {v['items_median']} items"
                        for k, v in run.items() if isinstance(v, dict)) + f" (load {run['loadavg_1min']})",
                          file=sys.stderr, flush=True)
        finally:
            browser.close()
            server.shutdown()
    for n, runs in results["diagram"].items():
        for key in ("scroll", "scroll_zoomed_out", "scrub"):
            med = {k: statistics.median(r[key][k] for r in runs) for k in
                   ("render_median_ms", "render_p95_ms", "frame_median_ms", "frame_p95_ms", "items_median")}
            print(f"{n:>6} records {key:>18}: render {med['render_median_ms']} ms (p95 {med['render_p95_ms']}), "
                  f"frame {med['frame_median_ms']} ms (p95 {med['frame_p95_ms']}), {med['items_median']} items "
                  f"(median of {len(runs)})")
    if args.json:
        json.dump(results, sys.stdout, indent=2)
        print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path)
    parser.add_argument("--records", type=int, default=None,
                        help="records to stream (default: enough for --seconds at the rate; 50,000 for 'all')")
    parser.add_argument("--rate", default="5000", help="records per second, or 'all'")
    parser.add_argument("--rates", default=None, help="several rates, comma-separated (overrides --rate)")
    parser.add_argument("--seconds", type=float, default=10, help="how long the stream lasts at the asked rate")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--wait-quiet", type=float, metavar="PCT",
                        help="before each run, wait (up to --wait-max s) until the machine is at most PCT %% busy")
    parser.add_argument("--wait-max", type=float, default=300, metavar="S", help="see --wait-quiet (default 300)")
    parser.add_argument("--json", action="store_true", help="every number of every run as JSON on stdout")
    parser.add_argument("--diagram", metavar="N,M", help="measure the space-time diagram on logs of these sizes")
    args = parser.parse_args()
    # SIGTERM (and SIGINT, which a background job may have ignored) unwind through the
    # ``finally`` blocks, so the server, the browser and ZooKeeper are stopped and chroots deleted.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if args.diagram:
        run_diagram(args)
        return
    rates = args.rates.split(",") if args.rates else [args.rate]
    results = {"command": " ".join([".venv/bin/python", "bench/page_render.py", *sys.argv[1:]]),
               "log": str(args.log), "chromium": "/usr/bin/chromium", "rates": {}}
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        server = serve(0, replays=Path(tmp))
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        try:
            for rate in rates:
                count = args.records or (max(100, int(float(rate) * args.seconds)) if rate != "all" else 50000)
                name = f"bench-{rate}.jsonl"
                repeated(args.log, count, Path(tmp) / name)
                url = f"http://127.0.0.1:{server.server_address[1]}/?replay=/replays/{name}&rate={rate}"
                runs = []
                for i in range(args.runs):
                    quiet = wait_quiet(args.wait_quiet, args.wait_max)
                    run = measure(browser, url, count, args.seconds * 3 + 10)
                    run["machine_before_run"] = quiet
                    runs.append(run)
                    print(f"rate {rate} run {i + 1}/{args.runs}: achieved {run['achieved_records_per_s']}/s, "
                          f"frames median {run['frame_median_ms']} ms p95 {run['frame_p95_ms']} ms "
                          f"max {run['frame_max_ms']} ms, {run['dropped_frames']}/{run['frames']} over 20 ms; "
                          f"draw {run['draw_ms_mean']} ms mean (load {run['loadavg_1min']})",
                          file=sys.stderr, flush=True)
                keys = ("achieved_records_per_s", "frame_median_ms", "frame_p95_ms", "frame_max_ms", "dropped_frames",
                        "draw_ms_mean")
                results["rates"][rate] = {"records": count, "runs": runs,
                                          "median": {k: statistics.median(r[k] for r in runs) for k in keys}}
        finally:
            browser.close()
            server.shutdown()
    if args.json:
        json.dump(results, sys.stdout, indent=2)
        print()
    else:
        for rate, r in results["rates"].items():
            m = r["median"]
            print(f"rate {rate:>6}: achieved {m['achieved_records_per_s']:>7}/s  frame median {m['frame_median_ms']} ms "
                  f"p95 {m['frame_p95_ms']} ms max {m['frame_max_ms']} ms  dropped {m['dropped_frames']}  "
                  f"draw {m['draw_ms_mean']} ms  (median of {len(r['runs'])})")


if __name__ == "__main__":
    main()
