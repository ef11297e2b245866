"""Walkthrough mode end to end: ``kclab serve``, the real ZooKeeper, Chromium.

A student starts ``lessons/controller_failover.yaml`` from the course (/lessons), reads "stop k of
n" and what the lesson points at, goes on stop by stop, looks back at an earlier stop (the page
rebuilds it from the records: the live cluster is untouched), cannot go on from a question
without an answer, answers, reloads (the lesson and the answer are still there), and sees the
answer graded against what the cluster did, with the misconception of the wrong choice. Then
"Try it from here" (the lesson replayed on a new cluster up to a stop), Restart, and "Try it
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

READY = "(step) => {const l = document.querySelector('#lesson'); return l.dataset.status === 'waiting'" \
        " && l.dataset.stop === step && l.dataset.lookBack === 'false'" \
        " && !l.querySelector('.lesson-progress').textContent.endsWith('…')}"


def saved_sandbox(page) -> dict:
    return json.loads(page.evaluate("localStorage.getItem('kclab.sandbox')"))


def waiting_at(page, step: int) -> None:
    page.wait_for_function(READY, arg=str(step), timeout=40_000)


def go_on(page, step: int) -> None:
    page.click('#lesson button[data-action="next"]')
    waiting_at(page, step)


def test_a_walkthrough_stop_by_stop_with_look_back_answers_replay_restart_and_try_it_yourself(
        new_page, kclab_server, zk_of):
    server = kclab_server
    lesson = load_lesson(ROOT / "lessons" / "controller_failover.yaml")  # as the server reads it now
    stops = [s.index for s in lesson.steps if s.op in ("predict", "pause") or (s.op == "say" and not s.args["caption"])]
    question = next(s.index for s in lesson.steps if s.op == "predict")
    broken = server.data_dir / "lessons" / "e2e" / "broken.yaml"  # an uploaded lesson that does not load
    broken.parent.mkdir(parents=True, exist_ok=True)
    broken.write_text("name: Broken\nminutes: 3\ncluster: {brokers: [0]}\nsteps:\n  - op: sya\n    text: hi\n")

    page = new_page()
    page.goto(server.url)
    page.click("#lessons-link")  # the course is one click from the main page's header
    page.wait_for_url(f"{server.url}lessons")
    card = page.locator('.lesson-card[data-lesson-id="controller_failover"]')
    assert card.locator(".lesson-title").inner_text() == lesson.title
    assert card.locator(".lesson-meta").inner_text() == f"{lesson.minutes} min · {len(stops)} stops · 2 questions"
    assert "After: The controller election race." in card.locator(".lesson-course").inner_text()
    first = page.locator(".lesson-card").first
    assert first.get_attribute("data-lesson-id") == "zookeeper_sessions_and_watches"
    assert first.get_attribute("data-start") == "true"  # a first visit starts at the first lesson
    bad = page.locator('.lesson-card[data-lesson-id="e2e/broken"][data-broken="true"]')
    problem = bad.locator("li.problem")
    assert problem.get_attribute("data-file") == "lessons/e2e/broken.yaml" and problem.get_attribute("data-line") == "5"
    assert "sya" in problem.inner_text() and bad.locator("button").count() == 0
    screenshot(page, "walkthrough-course")

    card.locator('button[data-action="walkthrough"]').click()
    page.wait_for_url(server.url)
    waiting_at(page, stops[0])
    first_sandbox = saved_sandbox(page)
    assert shown_source(page) == first_sandbox["id"]
    assert page.inner_text("#lesson .lesson-progress") == f"stop 1 of {len(stops)}"
    # The narration points at broker 0 and the two znodes; Markdown is rendered.
    page.wait_for_selector('button.broker[data-broker-id="0"].lesson-highlight')
    for path in ("/controller", "/controller_epoch"):
        page.wait_for_selector(f'li.znode[data-path="{path}"][data-lesson-highlight="znode:{path}"]')
    assert "controller" in page.inner_text("#lesson .lesson-narration strong")
    go_on(page, stops[1])

    # Back looks at the first stop as it was — from the records, nothing changes on the server.
    page.click('#lesson button[data-action="back"]')
    page.wait_for_selector(f'#lesson[data-look-back="true"][data-stop="{stops[0]}"]')
    assert "Three brokers" in page.inner_text("#lesson .lesson-narration")
    assert "Looking back" in page.inner_text("#lesson .lesson-lookback")
    assert page.get_attribute("body", "data-mode") == "scrubbed"
    page.click('#lesson button[data-action="next"]')  # Continue from a look back: back to now
    waiting_at(page, stops[1])

    # The question: no going on without an answer; a wrong one, kept across a reload.
    go_on(page, question)
    assert page.is_disabled('#lesson button[data-action="next"]')
    page.click('#lesson .lesson-question[data-question="next_epoch"] button.choice[data-choice="3"]')
    page.wait_for_selector('#lesson .lesson-question[data-question="next_epoch"][data-state="answered"]')
    page.reload()
    waiting_at(page, question)
    page.wait_for_selector('#lesson button.choice[data-choice="3"][aria-pressed="true"]')
    assert page.is_enabled('#lesson button[data-action="next"]')
    screenshot(page, "walkthrough-question")
    go_on(page, question + 1)
    page.click('#lesson .lesson-question[data-question="new_leader"] button.choice[data-choice="I\'m not sure"]')
    page.wait_for_selector('#lesson .lesson-question[data-question="new_leader"][data-state="answered"]')
    page.click('#lesson button[data-action="next"]')

    # The reveal: the student's answer beside the cluster's, the rule, and why 3 was tempting.
    revealed = page.locator('#lesson .lesson-question[data-question="next_epoch"][data-state="revealed"]')
    revealed.wait_for(timeout=40_000)
    assert revealed.locator(".q-result").get_attribute("data-correct") == "false"
    assert "you said 3, the cluster says 2" in revealed.locator(".q-result").inner_text()
    assert "plus one" in revealed.locator(".q-revealed").inner_text()
    assert "One election, one increment" in revealed.locator(".q-misconception").inner_text()
    unsure = page.locator('#lesson .lesson-question[data-question="new_leader"][data-state="revealed"] .q-result')
    unsure.wait_for(timeout=40_000)
    assert "You were not sure; the cluster says 1" in unsure.inner_text()
    zk = zk_of(first_sandbox["id"])
    assert wait_until(lambda: zk_controller(zk) == (2, 2), 10, "ZooKeeper to name controller 2 with epoch 2")
    page.wait_for_selector('.crown[data-controller="2"][data-epoch="2"]')
    screenshot(page, "walkthrough-graded")

    # Look back at the question's stop (the outline of stops), then "Try it from here": the lesson
    # replays on a new cluster up to there, where broker 0 is the controller again.
    page.click('#lesson details.lesson-outline summary')
    page.click(f'#lesson .lesson-outline li[data-step="{question}"] button.o-stop')
    page.wait_for_selector(f'#lesson[data-look-back="true"][data-stop="{question}"]')
    page.click('#lesson button[data-action="replay"]')
    wait_until(lambda: saved_sandbox(page)["id"] != first_sandbox["id"], 30, "a new sandbox for the replay")
    replayed = saved_sandbox(page)
    waiting_at(page, question)
    page.wait_for_selector('.crown[data-controller="0"][data-epoch="1"]')
    assert shown_source(page) == replayed["id"] and zk_controller(zk_of(replayed["id"])) == (0, 1)
    assert page.get_attribute('#lesson .lesson-question[data-question="next_epoch"]', "data-state") == "open"
    assert server.api("GET", f"/api/sandboxes/{first_sandbox['id']}",
                      headers={"X-Sandbox-Token": first_sandbox["token"]})[0] == 404

    # Restart: yet another cluster, the lesson from its first stop.
    page.click('#lesson button[data-action="restart"]')
    wait_until(lambda: saved_sandbox(page)["id"] != replayed["id"], 30, "Restart to hand the page a new sandbox")
    restarted = saved_sandbox(page)
    waiting_at(page, stops[0])

    # Try it yourself: a private copy of the cluster here, in free play; a crash really happens.
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
    waiting_at(page, stops[0])
    wait_until(lambda: server.api("GET", f"/api/sandboxes/{copy['id']}",
                                  headers={"X-Sandbox-Token": copy["token"]})[0] == 404, 10, "the copy to be deleted")
    assert not page_errors(page), page_errors(page)
    assert page.locator("#errors .message").count() == 0, page.inner_text("#errors")
