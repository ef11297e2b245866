"""Replays end to end: a real lesson script runs against the test ZooKeeper, the real app
(``kclab serve``, started by tests/e2e/conftest.py, with Chromium) serves its replay directory, and Chromium lists the session, filters, plays it, scrubs to a seq (with
the slider and with a ``seq=`` link), exports and imports it — and a truncated copy plays up to
its damage and says so. At every stop the page's testable DOM must equal Python's
``cluster_view.fold`` of the records up to that seq.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from backend.view.cluster_view import fold
from backend.core.records import Record, SessionHeader
from backend.view.replay_check import TORN
from backend.runtime.replay import ReplayWriter
from tests.js.test_page_replay import dom_state, expected_state
from tests.support import record_script
from tests.e2e.conftest import INSTRUCTOR_TOKEN

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
LESSON = "zombie_controller_fenced"
BROKERS = (0, 1, 2)  # its cluster


@pytest.fixture(scope="module")
def site(kclab_server) -> str:
    """The real app (``kclab serve``, tests/e2e/conftest.py), without the trailing slash."""
    return kclab_server.url.rstrip("/")


@pytest.fixture(scope="module")
def data_dir(kclab_server) -> Path:
    return kclab_server.data_dir


@pytest.fixture(scope="module")
def session(zk_hosts, zk_root_client, data_dir):
    """(file name, records) of a finished lesson script, recorded in the app's replay directory,
    plus an unrelated class demo so that filtering has something to hide."""
    replays = data_dir / "replays"
    chroot = f"/kclab-test/replay-page-{uuid.uuid4().hex[:8]}"
    result = record_script(ROOT / "lessons" / "scripts" / f"{LESSON}.yaml", zk_hosts, zk_root_client, chroot, replays)
    other = ReplayWriter(replays, SessionHeader("other-class-demo", "class", 1_700_000_000_000, "0.1.0",
                                                {"brokers": [0]}, class_id="c-7"))
    other([Record(kind="broker", subject="broker:0", to_state="registered", broker_id=0)
           .stamped("other-class-demo", 0, 1_700_000_000_000)])
    other.close()
    lines = [json.loads(line) for line in result.replay_path.read_text().splitlines()]
    return result.replay_path.name, lines[1:]


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 1100}, accept_downloads=True, bypass_csp=True)
    # The instructor's browser (the logs of this module are a script's and a class demo's: the
    # instructor's to open); a student's view of /replays is in tests/hardening.
    context.add_init_script(f"sessionStorage.setItem('kclab.instructor.token', '{INSTRUCTOR_TOKEN}')")
    page = context.new_page()
    page.set_default_timeout(20_000)
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert not errors, f"the page threw: {errors}"


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"replay-{name}.png"), full_page=False)


def assert_shows(page, records, seq, mode):
    """The page rests at ``seq`` in ``mode`` and shows exactly what the records say."""
    page.wait_for_function(f"document.body.dataset.seq === '{seq}' && document.body.dataset.mode === '{mode}'")
    page.evaluate("() => new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(resolve)))")
    expected = expected_state(fold([r for r in records if r["seq"] <= seq]), mode)
    for broker in BROKERS:  # the session's configured brokers are drawn before their first record
        expected["brokers"].setdefault(str(broker), "stopped")
    assert dom_state(page) == expected


def scrub(page, seq: int) -> None:
    page.locator(".pb-scrub").evaluate(
        "(el, seq) => { el.value = String(seq); el.dispatchEvent(new Event('input')); }", seq)


def test_list_filter_play_scrub_and_share_a_seq(page, site, session):
    name, records = session
    last = records[-1]["seq"]
    page.goto(f"{site}/replays")
    page.wait_for_selector("body[data-state=ready]")
    rows = page.locator("tr.replay")
    assert {rows.nth(i).get_attribute("data-name") for i in range(rows.count())} == {name, "other-class-demo.jsonl"}
    row = page.locator(f'tr.replay[data-name="{name}"]')
    assert row.get_attribute("data-damaged") == "false" and row.get_attribute("data-live") == "false"
    assert row.locator("td.num").text_content() == str(len(records))

    # Filter by lesson: the address says so, the class demo is gone.
    page.select_option("select[name=lesson]", LESSON)
    page.wait_for_function(f"location.search === '?lesson={LESSON}'")
    page.wait_for_function("document.querySelectorAll('tr.replay').length === 1")
    assert page.locator("tr.replay").get_attribute("data-name") == name
    page.select_option("select[name=mode]", "script")
    page.fill("input[name=until]", "2020-01-01")
    page.locator("input[name=until]").dispatch_event("change")
    page.wait_for_function("document.querySelectorAll('tr.replay').length === 0")
    assert "No session matches" in page.locator("#replays-table tbody").text_content()
    page.click("button[type=reset]")
    page.wait_for_function("location.search === '' && document.querySelectorAll('tr.replay').length === 2")
    page.select_option("select[name=lesson]", LESSON)
    page.wait_for_function("document.querySelectorAll('tr.replay').length === 1")
    shot(page, "list")

    # Play: the main page replays it, record after record, with no live cluster.
    page.locator(f'tr.replay[data-name="{name}"] a.play').click()
    page.wait_for_url(f"**/?replay=/api/replays/{name}*")
    bar = page.locator("nav.replay-bar")
    assert "Script run · lesson zombie_controller_fenced" in bar.text_content()
    assert bar.locator("a.replay-back").get_attribute("href") == "/replays"
    page.wait_for_function("Number(document.body.dataset.seq) >= 30 && document.body.dataset.mode === 'live'")
    page.locator(".pb-play").click()  # pause
    page.wait_for_function("document.body.dataset.mode === 'paused'")
    paused_at = int(page.evaluate("document.body.dataset.seq"))
    assert 30 <= paused_at < last, "playing a recording goes one record at a time, not straight to the end"
    assert_shows(page, records, paused_at, "paused")

    # Faults are off, with the reason.
    buttons = page.locator(".palette button")
    assert buttons.count() > 0 and all(buttons.nth(i).is_disabled() for i in range(buttons.count()))
    assert "A recorded session cannot change" in page.locator(".palette").text_content()
    page.locator("button.broker").first.click()
    menu = page.locator(".broker-menu[role=menu]")
    assert "A recorded session cannot change" in menu.text_content()
    assert all(menu.locator("[role=menuitem]").nth(i).is_disabled() for i in range(menu.locator("[role=menuitem]").count()))
    page.keyboard.press("Escape")

    # Scrub with the slider to the moment the zombie froze; the address follows.
    frozen = next(r["seq"] for r in records if r["kind"] == "broker" and r.get("to_state") == "paused")
    scrub(page, frozen)
    assert_shows(page, records, frozen, "scrubbed")
    assert page.locator('[data-broker-id="0"]').get_attribute("data-state") == "paused"
    page.wait_for_function(f"new URLSearchParams(location.search).get('seq') === '{frozen}'")
    assert page.locator("a.replay-link").get_attribute("href").endswith(f"seq={frozen}")
    shot(page, "scrubbed")

    # Step, then slow motion from there.
    page.locator(".pb-step").click()
    assert_shows(page, records, frozen + 1, "scrubbed")
    page.select_option(".pb-speed", str(1 / 5))
    page.locator(".pb-play").click()
    page.wait_for_function(f"Number(document.body.dataset.seq) >= {frozen + 3}")
    page.locator(".pb-play").click()
    page.wait_for_function("document.body.dataset.mode === 'paused'")
    assert_shows(page, records, int(page.evaluate("document.body.dataset.seq")), "paused")
    page.locator(".pb-live").click()  # "End": the last record
    assert_shows(page, records, last, "live")

    # A shared link opens the session at that seq: the zombie's refused request.
    rejected = next(r for r in records if r["kind"] == "request" and r.get("outcome") == "rejected_stale_epoch")
    page.goto(f"{site}/?replay=/api/replays/{name}&seq={rejected['seq']}")
    assert_shows(page, records, rejected["seq"], "scrubbed")
    page.goto(f"{site}/?replay=/api/replays/{name}#seq={frozen}")
    assert_shows(page, records, frozen, "scrubbed")
    assert page.locator("#errors").text_content() == "", "an intact log raises no alarm"


def test_export_import_and_a_truncated_log_that_plays_up_to_its_damage(page, site, session, data_dir, tmp_path):
    name, records = session
    original = (data_dir / "replays" / name).read_bytes()
    page.goto(f"{site}/replays")
    page.wait_for_selector("body[data-state=ready]")

    with page.expect_download() as download:
        page.locator(f'tr.replay[data-name="{name}"] a.export').click()
    assert download.value.suggested_filename == name
    assert Path(download.value.path()).read_bytes() == original, "the export is the log, byte for byte"

    # Not a replay log: refused, with the server's reason.
    junk = tmp_path / "notes.jsonl"
    junk.write_text("my notes from class\n")
    page.set_input_files("#import-file", str(junk))
    page.wait_for_function("document.querySelector('#errors').textContent.includes('not a replay log')")
    assert "Could not import notes.jsonl: this is not a replay log: line 1" in page.locator("#errors").text_content()

    # A copy cut off in the middle of a line, as a crash mid-write leaves it.
    lines = original.splitlines(keepends=True)
    keep = len(lines) // 2
    truncated = b"".join(lines[:keep]) + lines[keep][: len(lines[keep]) // 2]
    damaged_line = keep + 1
    last_good = records[keep - 2]["seq"]
    copy = tmp_path / "cut.jsonl"
    copy.write_bytes(truncated)
    page.set_input_files("#import-file", str(copy))
    imported = page.locator('tr.replay[data-new="true"]')
    imported.wait_for()
    imported_name = imported.get_attribute("data-name")
    assert imported_name == name.replace(".jsonl", ".imported.jsonl")
    assert imported.get_attribute("data-damaged") == "true"
    assert f"damaged at line {damaged_line}" in imported.locator("td.state").text_content()
    assert (data_dir / "imported-replays" / imported_name).read_bytes() == truncated
    assert (data_dir / "replays" / name).read_bytes() == original, "the original is untouched"
    shot(page, "imported")

    imported.locator("a.play").click()
    page.wait_for_url(f"**/?replay=/api/replays/{imported_name}*")
    alert = page.locator("#errors[role=alert]")
    alert.filter(has_text="damaged").wait_for()
    assert (f"This log is damaged at line {damaged_line}: {TORN}; showing records up to seq {last_good}."
            in alert.text_content())
    page.locator(".pb-live").click()
    assert_shows(page, records, last_good, "live")
    assert page.evaluate("window.kclab.store.head") == last_good
    shot(page, "damaged")
