"""Walkthrough mode end to end (issue 6 item 3): ``kclab serve``, the real ZooKeeper, Chromium.

A student starts ``lessons/controller_failover.yaml`` from the lesson list, reads "step k of n",
sees what the lesson points at, answers its question, reloads (the lesson is still where it
was), continues through the pause and sees the answer graded against what the cluster did;
then Back (the lesson replays to its previous stop on a new cluster), Restart, and "Try it
yourself" (a private free-play copy where a crash really happens in ZooKeeper). ZooKeeper, read
with kazoo in each sandbox's chroot, is the judge of what the cluster did.
"""

from __future__ import annotations

import json

from backend.lessons.loader import load_lesson
from tests.e2e.conftest import page_errors
from tests.e2e.teaching_support import (ROOT, broker_action, screenshot, shown_source, wait_brokers_alive,
                                        zk_controller)
from tests.e2e.teaching_support import zk_of  # noqa: F401 (a fixture)
from tests.support import wait_until

def saved_sandbox(page) -> dict:
    return json.loads(page.evaluate("localStorage.getItem('kclab.sandbox')"))


def waiting_at_the_pause(page, lesson) -> None:
    pause = next(s.index for s in lesson.steps if s.op == "pause")
    page.wait_for_selector(f'#lesson[data-status="waiting"][data-step="{pause}"]', timeout=40_000)
    page.wait_for_function("text => document.querySelector('#lesson .lesson-progress').textContent === text",
                           arg=f"step {pause} of {len(lesson.steps)}")  # not "Going back…" any more


def test_a_walkthrough_with_continue_grading_back_restart_and_try_it_yourself(new_page, kclab_server, zk_of):
    server = kclab_server
    lesson = load_lesson(ROOT / "lessons" / "controller_failover.yaml")  # as the server reads it now
    broken = server.data_dir / "lessons" / "e2e" / "broken.yaml"  # an uploaded lesson that does not load
    broken.parent.mkdir(parents=True, exist_ok=True)
    broken.write_text("name: Broken\nminutes: 3\ncluster: {brokers: [0]}\nsteps:\n  - op: sya\n    text: hi\n")

    page = new_page()
    page.goto(server.url)
    page.click("#lessons-link")  # the lesson list is one click from the main page's header
    page.wait_for_url(f"{server.url}lessons")
    card = page.locator('.lesson-card[data-lesson-id="controller_failover"]')
    assert card.locator(".lesson-title").inner_text() == lesson.title
    assert card.locator(".lesson-meta").inner_text().startswith(f"{lesson.minutes} min · {len(lesson.steps)} steps")
    assert "ephemeral znode" in card.locator(".lesson-summary").inner_text()
    bad = page.locator('.lesson-card[data-lesson-id="e2e/broken"][data-broken="true"]')
    problem = bad.locator("li.problem")
    assert problem.get_attribute("data-file") == "lessons/e2e/broken.yaml" and problem.get_attribute("data-line") == "5"
    assert "sya" in problem.inner_text() and bad.locator("button").count() == 0
    screenshot(page, "walkthrough-lesson-list")

    card.locator('button[data-action="walkthrough"]').click()
    page.wait_for_url(server.url)
    waiting_at_the_pause(page, lesson)
    first = saved_sandbox(page)
    assert shown_source(page) == first["id"]
    # The highlight points at broker 0 and the two znodes, and says so in words.
    page.wait_for_selector('button.broker[data-broker-id="0"].lesson-highlight')
    for path in ("/controller", "/controller_epoch"):
        page.wait_for_selector(f'li.znode[data-path="{path}"][data-lesson-highlight="znode:{path}"]')
    assert "/controller names broker 0" in page.inner_text("#lesson .lesson-note")
    assert "controller" in page.inner_text("#lesson .lesson-narration strong")  # Markdown, rendered

    # Answer the question (wrongly), reload: the lesson and the answer are still there.
    page.click('#lesson button.choice[data-choice="3"]')
    page.wait_for_selector('#lesson .lesson-question[data-state="answered"]')
    page.reload()
    waiting_at_the_pause(page, lesson)
    page.wait_for_selector('#lesson button.choice[data-choice="3"][aria-pressed="true"]')
    screenshot(page, "walkthrough-waiting")

    # Continue through the pause: broker 0 crashes, broker 2 takes over with epoch 2, the answer is graded.
    page.click('#lesson button[data-action="next"]')
    page.wait_for_selector('#lesson[data-status="finished"]', timeout=40_000)
    result = page.locator("#lesson .q-result")
    assert result.get_attribute("data-correct") == "false"
    assert "you said 3, the cluster says 2" in result.inner_text()
    assert "plus one" in page.inner_text("#lesson .q-revealed")  # the rule, on a wrong answer
    zk = zk_of(first["id"])
    assert wait_until(lambda: zk_controller(zk) == (2, 2), 10, "ZooKeeper to name controller 2 with epoch 2")
    page.wait_for_selector('.crown[data-controller="2"][data-epoch="2"]')
    screenshot(page, "walkthrough-graded")

    # Back: the previous stop is the pause, on a new cluster where broker 0 is the controller again.
    page.click('#lesson button[data-action="back"]')
    wait_until(lambda: saved_sandbox(page)["id"] != first["id"], 30, "Back to hand the page a new sandbox")
    back = saved_sandbox(page)
    waiting_at_the_pause(page, lesson)
    page.wait_for_selector('.crown[data-controller="0"][data-epoch="1"]')
    assert shown_source(page) == back["id"]
    assert zk_controller(zk_of(back["id"])) == (0, 1)
    assert server.api("GET", f"/api/sandboxes/{first['id']}", headers={"X-Sandbox-Token": first["token"]})[0] == 404

    # Restart: yet another cluster, the lesson from step 1, stopping at the same pause.
    page.click('#lesson button[data-action="restart"]')
    wait_until(lambda: saved_sandbox(page)["id"] != back["id"], 30, "Restart to hand the page a new sandbox")
    restarted = saved_sandbox(page)
    waiting_at_the_pause(page, lesson)
    assert page.get_attribute('#lesson .lesson-question', "data-state") == "open"  # a new run: no answer yet

    # Try it yourself: a private copy of the cluster at the pause, in free play; a crash really happens.
    page.click('#lesson button[data-action="try"]')
    wait_until(lambda: saved_sandbox(page)["id"] != restarted["id"], 30, "Try it yourself to hand the page a copy")
    copy = saved_sandbox(page)
    page.wait_for_selector('#lesson[data-role="copy"][data-status="finished"]', timeout=40_000)
    wait_brokers_alive(page)
    broker_action(page, 1, "crash")
    page.wait_for_selector('button.broker[data-broker-id="1"][data-state="crashed"]')
    copy_zk = zk_of(copy["id"])
    wait_until(lambda: copy_zk.exists("/brokers/ids/1") is None, 10, "broker 1's registration to go from ZooKeeper")
    assert zk_of(restarted["id"]).exists("/brokers/ids/1") is not None  # the lesson's own cluster is untouched
    screenshot(page, "walkthrough-try-it-yourself")

    # Back to the lesson: the walkthrough is where it was; the copy is deleted.
    page.click('#lesson button[data-action="return"]')
    wait_until(lambda: saved_sandbox(page)["id"] == restarted["id"], 30, "the page to return to the walkthrough")
    waiting_at_the_pause(page, lesson)
    wait_until(lambda: server.api("GET", f"/api/sandboxes/{copy['id']}",
                                  headers={"X-Sandbox-Token": copy["token"]})[0] == 404, 10, "the copy to be deleted")
    assert not page_errors(page), page_errors(page)
    assert page.locator("#errors .message").count() == 0, page.inner_text("#errors")
