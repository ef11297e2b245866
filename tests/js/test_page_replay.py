"""The real page (static/index.html) in Chromium, fed a real replay log, against Python's fold.

A lesson script runs against the test ZooKeeper; its replay log is played to the page through
the page's replay source (``/?replay=...``), which speaks the server protocol's shapes. The
page's testable DOM (data-* attributes) must then show exactly what ``cluster_view.fold`` says:
after all records, when scrubbed back, after a step, and when batches come twice, out of order
and with records left out (the page fetches them again).
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from backend.view.cluster_view import fold
from tests.js.static_server import serve
from tests.support import record_script

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def replay(zk_hosts, zk_root_client, tmp_path_factory):
    """(replay directory, file name, records) of the zombie-controller lesson, run once."""
    directory = tmp_path_factory.mktemp("replays")
    chroot = f"/kclab-test/page-replay-{uuid.uuid4().hex[:8]}"
    result = record_script(ROOT / "lessons" / "scripts" / "zombie_controller_fenced.yaml", zk_hosts, zk_root_client,
                           chroot, directory)
    lines = [json.loads(line) for line in result.replay_path.read_text().splitlines() if line.strip()]
    return directory, result.replay_path.name, lines[1:]


@pytest.fixture(scope="module")
def site(replay):
    server = serve(0, replays=replay[0])
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture
def page(browser):
    page = browser.new_page(viewport={"width": 1400, "height": 1200})
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    page.close()
    assert not errors, f"the page threw: {errors}"


def dom_state(page) -> dict:
    """Everything the testable DOM says, in the view's terms."""
    return page.evaluate("""() => {
      const all = (sel, f) => Object.fromEntries([...document.querySelectorAll(sel)].map(f));
      const crown = document.querySelector('.crown');
      return {
        seq: document.body.dataset.seq, mode: document.body.dataset.mode,
        brokers: all('[data-broker-id]', (e) => [e.dataset.brokerId, e.dataset.state]),
        controller: crown ? [crown.dataset.controller, crown.dataset.epoch] : null,
        partitions: all('tr[data-partition]', (e) => [e.dataset.partition,
          [e.dataset.leader, e.dataset.isr, e.dataset.leaderEpoch, e.dataset.state]]),
        znodes: all('[data-path]', (e) => [e.dataset.path, e.dataset.version]),
      };
    }""")


def expected_state(view: dict, mode: str) -> dict:
    text = lambda value: "" if value is None else str(value)  # noqa: E731
    controller = view["controller"]
    return {
        "seq": str(view["seq"]), "mode": mode,
        "brokers": {k: b["state"] for k, b in view["brokers"].items()},
        "controller": None if controller is None else [text(controller["id"]), text(controller["epoch"])],
        "partitions": {k: [text(p["leader"]), ",".join(map(str, p["isr"] or [])), text(p["leader_epoch"]),
                           text(p["state"])] for k, p in view["partitions"].items()},
        "znodes": {path: text(z["version"]) for path, z in view["znodes"].items()},
    }


def assert_shows(page, records, seq, mode):
    page.wait_for_function(f"document.body.dataset.seq === '{seq}' && document.body.dataset.mode === '{mode}'")
    page.wait_for_timeout(100)  # one more frame: the views render on the animation frame after the fold
    expected = expected_state(fold([r for r in records if r["seq"] <= seq]), mode)
    assert dom_state(page) == expected


def test_the_page_shows_what_the_python_fold_says(page, site, replay):
    _, name, records = replay
    last = records[-1]["seq"]
    page.goto(f"{site}/?replay=/replays/{name}&rate=all")
    assert_shows(page, records, last, "live")
    assert page.locator(".tl-count").text_content() == f"{len(records)} records"
    assert page.locator(".tl-scroll .entry").count() < 80, "the timeline renders only the rows in sight"

    # Scrub back to the moment the zombie froze, with the slider.
    paused = next(r["seq"] for r in records if r["kind"] == "broker" and r.get("to_state") == "paused")
    page.locator(".pb-scrub").evaluate(
        "(el, seq) => { el.value = String(seq); el.dispatchEvent(new Event('input')); }", paused)
    assert_shows(page, records, paused, "scrubbed")
    assert page.locator('[data-broker-id="0"]').get_attribute("data-state") == "paused"

    # A render between the slider moving and the next frame puts the unfocused slider back on
    # the cursor (records keep arriving live); the scrub still goes where the slider was moved.
    earlier = paused - 1
    page.locator(".pb-scrub").evaluate(
        "(el, seq) => { el.value = String(seq); el.dispatchEvent(new Event('input')); el.value = el.max; }", earlier)
    assert_shows(page, records, earlier, "scrubbed")
    page.locator(".pb-scrub").evaluate(
        "(el, seq) => { el.value = String(seq); el.dispatchEvent(new Event('input')); }", paused)
    assert_shows(page, records, paused, "scrubbed")

    # → steps one record; space plays again (back to the newest record).
    page.locator("#h-timeline").click()
    page.keyboard.press("ArrowRight")
    assert_shows(page, records, paused + 1, "scrubbed")
    page.keyboard.press("Space")
    assert_shows(page, records, last, "live")
    page.keyboard.press("Space")
    page.wait_for_function("document.body.dataset.mode === 'paused'")


def test_a_rejected_request_and_its_cause_are_a_click_apart(page, site, replay):
    _, name, records = replay
    rejected = next(r for r in records if r.get("outcome") == "rejected_stale_epoch" and r["kind"] == "request")
    page.goto(f"{site}/?replay=/replays/{name}&rate=all")
    page.wait_for_function(f"document.body.dataset.seq === '{records[-1]['seq']}'")
    page.select_option("#tl-kind", "request")
    page.evaluate("seq => window.kclab.store.scrubTo(seq)", rejected["seq"])
    entry = page.locator(f'.tl-scroll .entry[data-seq="{rejected["seq"]}"]')
    entry.click()
    detail = page.locator(".record-detail")
    assert "STALE_CONTROLLER_EPOCH" in detail.text_content()
    detail.locator(f'[data-target-seq="{rejected["cause_seq"]}"]').click()
    assert detail.get_attribute("data-selected-seq") == str(rejected["cause_seq"])


def test_batches_that_cross_repeat_and_leave_records_out_end_in_the_same_view(page, site, replay):
    _, name, records = replay
    middle = records[len(records) // 3]["seq"]
    page.goto(f"{site}/?replay=/replays/{name}&rate=400&chaos=1&snapshot={middle}")
    assert_shows(page, records, records[-1]["seq"], "live")
    page.wait_for_function(f"window.kclab.store.first === 0 && window.kclab.store.count === {len(records)}")
    assert page.evaluate("window.kclab.store.duplicates") > 0


def test_a_rejected_request_in_a_burst_too_big_to_animate_is_still_shown(page, site, replay):
    """A live page that gets more records in one frame than it animates (a batch of a busy
    server) draws them without motion, but a request answered in that burst just happened: the
    zombie's bounced request stays on the cluster for its few seconds, as when it is animated.
    (Only a jump — a scrub, a seek — makes answered requests history.)"""
    _, name, records = replay
    rejected = next(r for r in records if r.get("outcome") == "rejected_stale_epoch" and r["kind"] == "request")
    before = [r["seq"] for r in records if r["seq"] < rejected["seq"]][-40]
    # 1,500 records a second come as 100 a batch: more than a frame animates, fewer than a jump.
    page.goto(f"{site}/?replay=/replays/{name}&rate=1500&snapshot={before}")
    page.wait_for_selector("g.request.rejected", timeout=5_000)
    assert "STALE_CONTROLLER_EPOCH" in page.locator("g.request.rejected").first.text_content()
