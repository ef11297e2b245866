"""Lesson authoring end to end (issue 6 item 5), on the instructor's page with ``kclab serve``.

The instructor types a broken lesson: the schema's error is marked on the right line — in the
gutter, after the line itself (at the same height), and in the list under the editor — with the
server's reason; fixing it clears every mark. A dry run plays the lesson headless on a real
cluster and says it passed; Save stores it for this instructor and it appears in the lesson
list; uploading a broken file of the same name and saving it is refused with the reason and the
good lesson stays; the saved lesson then runs for the class.
"""

from __future__ import annotations

from tests.e2e.conftest import page_errors
from tests.e2e.teaching_support import open_instructor, screenshot

GOOD = """name: My e2e lesson
description: A controller crash, written in the page.
minutes: 3
cluster:
  brokers: [0, 1, 2]
  topics:
    t: {partitions: 1, replication_factor: 3}
steps:
  - op: say
    text: Broker 0 is the **controller**.
    highlight: ["broker:0", "znode:/controller"]
  - op: pause
  - op: crash_broker
    broker: 0
  - op: await
    record: {kind: controller, to_state: elected}
    timeout_ms: 15000
    message: No other broker became the controller.
"""
TYPO_LINE = GOOD.splitlines().index("  - op: pause") + 1
BROKEN = GOOD.replace("  - op: pause", "  - op: pauze")


def line_top(page, selector: str) -> float:
    return page.locator(selector).bounding_box()["y"]


def test_write_check_dry_run_save_refuse_a_bad_upload_and_run(new_page, kclab_server):
    server = kclab_server
    page, _, _ = open_instructor(new_page, server, name="Ada")
    editor = page.locator(".editor-text")
    page.wait_for_selector('.editor-state[data-state="ok"]')  # the starting template is a valid lesson

    # A typo: marked on its line, with the server's reason, as one types.
    editor.fill(BROKEN)
    page.wait_for_selector(f'.editor-gutter li.problem[data-line="{TYPO_LINE}"]')
    mark = page.locator(f'.editor-mark[data-line="{TYPO_LINE}"]')
    assert "unknown op 'pauze'" in mark.inner_text() and "did you mean pause" in mark.inner_text()
    assert abs(line_top(page, f'.editor-gutter li[data-line="{TYPO_LINE}"]') - mark.bounding_box()["y"]) <= 2
    assert page.locator(".editor-gutter li.problem").count() == 1
    assert "unknown op 'pauze'" in page.get_attribute(f'.editor-gutter li[data-line="{TYPO_LINE}"]', "title")
    assert f"line {TYPO_LINE}" in page.inner_text(f'.editor-problems li[data-line="{TYPO_LINE}"]')
    assert page.get_attribute(".editor-state", "data-state") == "problems"
    screenshot(page, "authoring-error-on-its-line")

    # Fix it by typing: select the typo's "z" and type "s"; every mark goes.
    start = BROKEN.index("pauze") + 3
    editor.evaluate(f"(el) => {{ el.focus(); el.setSelectionRange({start}, {start + 1}); }}")
    page.keyboard.type("s")
    assert editor.input_value() == GOOD
    page.wait_for_selector('.editor-state[data-state="ok"]')
    assert page.locator(".editor-mark").count() == 0 and page.locator(".editor-gutter li.problem").count() == 0

    # Dry run: headless on a real cluster, as CI plays lessons.
    page.click('[data-action="dry-run"]')
    page.wait_for_selector('.editor-result[data-ok="true"]', timeout=90_000)
    assert "Dry run passed" in page.inner_text(".editor-result")

    # Save: stored for this instructor, listed at once.
    page.fill(".editor-id", "e2e_lesson")
    page.click('.editor-toolbar [data-action="save"]')
    page.wait_for_selector('.lesson-card[data-lesson-id="ada/e2e_lesson"]')
    assert page.inner_text('.lesson-card[data-lesson-id="ada/e2e_lesson"] .lesson-title') == "My e2e lesson"
    assert "Saved as ada/e2e_lesson" in page.inner_text(".editor-result")

    # A broken upload of the same lesson: shown with its problem, and refused on Save.
    page.set_input_files(".editor-file", files=[{"name": "e2e_lesson.yaml", "mimeType": "text/yaml",
                                                 "buffer": BROKEN.encode()}])
    page.wait_for_selector(f'.editor-gutter li.problem[data-line="{TYPO_LINE}"]')
    assert editor.input_value() == BROKEN and page.input_value(".editor-id") == "e2e_lesson"
    page.click('.editor-toolbar [data-action="save"]')
    page.wait_for_selector("#errors .message")
    assert "the lesson has problems; nothing was saved" in page.inner_text("#errors")
    status, stored = server.api("GET", "/api/lessons/ada/e2e_lesson")
    assert status == 200 and not stored["broken"] and stored["title"] == "My e2e lesson"
    assert [s["op"] for s in stored["steps"]][1] == "pause"  # the good version stayed
    assert page.inner_text('.lesson-card[data-lesson-id="ada/e2e_lesson"] .lesson-title') == "My e2e lesson"
    assert page.is_disabled('.editor-toolbar [data-action="run"]')  # what is in the editor is not what is saved
    screenshot(page, "authoring-bad-upload-refused")

    # Back to the good text, saved again, and run for the class.
    editor.fill(GOOD)
    page.wait_for_selector('.editor-state[data-state="ok"]')
    page.click('.editor-toolbar [data-action="save"]')
    page.wait_for_selector('.editor-toolbar [data-action="run"]:not([disabled])')
    page.click('.editor-toolbar [data-action="run"]')
    page.wait_for_selector('#lesson[data-role="instructor"][data-lesson-id="e2e_lesson"][data-status="waiting"]',
                           timeout=40_000)
    assert page.inner_text("#lesson .lesson-name") == "My e2e lesson"
    page.wait_for_selector('button.broker[data-broker-id="0"].lesson-highlight')
    assert not page_errors(page), page_errors(page)
