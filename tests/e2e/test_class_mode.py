"""Class mode end to end (issue 6 item 4): ``kclab serve``, the real ZooKeeper, one Chromium with
an instructor page and three student pages, each in its own browser context (its own storage).

The instructor opens a class, the students join with its code and follow a free demo; the
instructor crashes the leader's broker from the page and every student page shows the new
leaders ZooKeeper holds; a student cannot act on the class cluster (the controls are locked and
the server refuses a forced attempt, with the reason shown); the instructor pauses the class;
then runs a lesson whose question the students answer — the instructor's chart counts them as
they arrive, a student who reloads is still in the lesson, the answers are graded when the
cluster reveals its answer — and finally gives every student a private copy to break (built in
the background; the instructor's page shows the hand-out's progress).
"""

from __future__ import annotations

import re

from tests.e2e.conftest import page_errors
from tests.e2e.teaching_support import (broker_action, open_instructor, page_leaders, screenshot, shown_source,
                                        wait_brokers_alive, zk_leaders)
from tests.e2e.teaching_support import zk_of  # noqa: F401 (a fixture)
from tests.support import wait_until

TOPIC = "t"  # the demo's default cluster: brokers 0, 1, 2 and topic t (3 partitions, RF 3)
STUDENTS = ("Ann", "Bo", "Cy")


WAITING = "() => {const l = document.querySelector('#lesson'); return ['waiting', 'finished'].includes(l.dataset.status)" \
          " && !l.querySelector('.lesson-progress').textContent.endsWith('…')}"


def continue_to_the_question(instructor, question: str) -> None:
    """The instructor presses Continue at every narration until the class waits at ``question``."""
    while True:
        instructor.wait_for_function(WAITING, timeout=40_000)
        if instructor.locator(f'#lesson .lesson-question[data-question="{question}"]').count():
            return
        stop = instructor.get_attribute("#lesson", "data-stop")
        instructor.click('#lesson button[data-action="next"]')
        instructor.wait_for_function("(stop) => document.querySelector('#lesson').dataset.stop !== stop", arg=stop)


def continue_to_the_end(instructor) -> None:
    while True:
        instructor.wait_for_function(WAITING, timeout=40_000)
        if instructor.get_attribute("#lesson", "data-status") == "finished":
            return
        stop = instructor.get_attribute("#lesson", "data-stop")
        instructor.click('#lesson button[data-action="next"]')
        instructor.wait_for_function("(stop) => {const l = document.querySelector('#lesson');"
                                     " return l.dataset.stop !== stop || l.dataset.status === 'finished'}", arg=stop)


def join(new_page, server, code: str, name: str):
    page = new_page(viewport={"width": 1280, "height": 900})
    page.goto(f"{server.url}join")
    page.fill("#join-code", code.lower())  # codes are read aloud: case does not matter
    page.fill("#join-name", name)
    page.click('.join-form button[type="submit"]')
    page.wait_for_selector('.student-bar[data-following="waiting"]')
    return page


def test_a_class_follows_the_instructor_answers_and_gets_private_copies(new_page, kclab_server, zk_of):
    server = kclab_server
    instructor, code, class_id = open_instructor(new_page, server)
    assert instructor.locator(".join-code").inner_text() == code
    students = [join(new_page, server, code, name) for name in STUDENTS]
    instructor.wait_for_selector(f'.student-count[data-count="{len(STUDENTS)}"]')
    assert instructor.locator(".class-students li").all_inner_texts() == list(STUDENTS)
    # The instructor sees whether the server keeps up (static/js/views/server-load.js): the API
    # answered this page's token (a refusal would say "unknown"), in words.
    instructor.wait_for_selector('#server-load[data-state]:not([hidden])')
    load_state = instructor.get_attribute("#server-load", "data-state")
    load_text = instructor.locator("#server-load").inner_text()
    assert load_state in ("ok", "busy", "overloaded") and re.search(r"\d+ of \d+ sandboxes running", load_text), \
        (load_state, load_text)

    # A free demo on the shared cluster: every page follows it.
    instructor.click('[data-action="free-demo"]')
    instructor.wait_for_function("document.querySelector('.class-panel').dataset.session !== ''")
    demo = instructor.get_attribute(".class-panel", "data-session")
    for page in (instructor, *students):
        wait_brokers_alive(page)
        assert shown_source(page) == demo
    for page in students:
        page.wait_for_selector('.student-bar[data-following="class"]')

    # The instructor crashes the broker that leads t-0, from the page.
    zk = zk_of(demo)
    before = wait_until(lambda: (l := zk_leaders(zk, TOPIC)) and len(l) == 3 and "-1" not in l.values() and l, 20,
                        "the demo's partitions to have leaders")
    victim = before[f"{TOPIC}-0"]
    instructor.wait_for_selector(f'tr.partition[data-partition="{TOPIC}-0"][data-leader="{victim}"]')
    broker_action(instructor, victim, "crash")
    after = wait_until(lambda: (l := zk_leaders(zk, TOPIC)) and victim not in l.values() and "-1" not in l.values() and l,
                       20, f"ZooKeeper to elect new leaders for broker {victim}'s partitions")
    for page in (instructor, *students):
        page.wait_for_selector(f'tr.partition[data-partition="{TOPIC}-0"][data-leader="{after[f"{TOPIC}-0"]}"]')
        wait_until(lambda: page_leaders(page) == after, 10, "the page to show every leader ZooKeeper holds")
        page.wait_for_selector(f'button.broker[data-broker-id="{victim}"][data-state="crashed"]')
    screenshot(students[0], "class-student-follows-the-crash")

    # A student cannot act on the class cluster: the menu says why, and a forced fault is refused.
    ann = students[0]
    target = next(b for b in ("0", "1", "2") if b != victim)
    ann.click(f'button.broker[data-broker-id="{target}"]')
    crash = ann.locator('[role="menu"] [role="menuitem"][data-action="crash"]')
    assert crash.is_disabled()
    assert "only the instructor acts on it" in ann.locator('[role="menu"] .why-not.locked').inner_text()
    ann.keyboard.press("Escape")
    refused = ann.evaluate(f"window.kclab.act('crash_broker', {{broker: {target}}}, 'Crash broker {target}')")
    assert refused["ok"] is False and refused["status"] == 403
    ann.wait_for_selector("#errors .message")
    assert "only the instructor acts on the class cluster" in ann.inner_text("#errors")
    assert zk.exists(f"/brokers/ids/{target}") is not None  # nothing happened to the cluster
    screenshot(ann, "class-student-refused")

    # Pause: every student's view freezes (the cluster goes on); unpause: live again.
    instructor.click('[data-action="pause-class"]')
    for page in students:
        page.wait_for_selector('.student-bar[data-paused="true"]')
        page.wait_for_function("document.body.dataset.mode === 'paused'")
    instructor.click('[data-action="pause-class"]')
    for page in students:
        page.wait_for_selector('.student-bar[data-paused="false"]')
        page.wait_for_function("document.body.dataset.mode === 'live'")

    # A lesson with a question: the students answer, the chart counts, the cluster grades.
    instructor.click('.lesson-card[data-lesson-id="controller_failover"] button[data-action="run-lesson"]')
    continue_to_the_question(instructor, "next_epoch")
    for page in (instructor, *students):
        page.wait_for_selector('#lesson[data-status="waiting"] .lesson-question[data-question="next_epoch"]',
                               timeout=40_000)
    lesson_session = instructor.get_attribute(".class-panel", "data-session")
    assert lesson_session != demo and all(shown_source(p) == lesson_session for p in students)
    answers = dict(zip(STUDENTS, ("2", "2", "3")))
    for page, name in zip(students, STUDENTS):
        page.click(f'#lesson button.choice[data-choice="{answers[name]}"]')
        page.wait_for_selector('#lesson .lesson-question[data-state="answered"]')
    instructor.wait_for_selector('.answers-panel[data-question="next_epoch"][data-total="3"]')
    assert instructor.get_attribute('.answer-counts tr[data-answer="2"]', "data-count") == "2"
    assert instructor.get_attribute('.answer-counts tr[data-answer="3"]', "data-count") == "1"
    assert instructor.get_attribute('.answer-counts tr[data-answer="1"]', "data-count") == "0"
    instructor.wait_for_selector("#answers-chart .main-svg")  # plotly drew the bars
    assert "3 answers so far" in instructor.inner_text(".answers-panel")
    screenshot(instructor, "class-instructor-answers")

    cy = students[2]  # a reload (or a late join) catches up from the snapshot: still in the lesson
    cy.reload()
    cy.wait_for_selector('#lesson[data-status="waiting"] .lesson-question[data-state="answered"]', timeout=30_000)
    assert shown_source(cy) == lesson_session

    continue_to_the_question(instructor, "new_leader")
    instructor.click('#lesson button[data-action="next"]')  # nobody answered this one: the instructor goes on
    for page, name in zip(students, STUDENTS):  # graded at the next stop, beside the cluster's answer
        revealed = page.locator('#lesson .lesson-question[data-question="next_epoch"][data-state="revealed"]')
        revealed.wait_for(timeout=40_000)
        assert revealed.locator(".q-result").get_attribute("data-correct") == str(answers[name] == "2").lower()
        assert "2 of 3 answered right" in revealed.locator(".q-tally").inner_text()
    instructor.wait_for_selector('.answer-counts tr[data-answer="2"][data-right="true"]')
    continue_to_the_end(instructor)
    for page in students:
        page.wait_for_selector('#lesson[data-status="finished"]', timeout=40_000)

    # Every student gets a private copy: a sandbox of their own, where acting works.
    instructor.click('[data-action="fork"]')
    copies = []
    for page in students:
        page.wait_for_selector('.student-bar[data-following="copy"]', timeout=60_000)
        wait_until(lambda: shown_source(page) not in (None, lesson_session), 30, "the page to show its copy")
        copies.append(shown_source(page))
        page.wait_for_function("document.querySelectorAll('button.broker').length === 3")
    assert len(set(copies)) == len(STUDENTS) and lesson_session not in copies
    instructor.wait_for_function(f"document.querySelectorAll('.class-students li:not([data-sandbox=\"\"])').length"
                                 f" === {len(STUDENTS)}")
    # The hand-out ran in the background; its progress ends on the instructor's page, in words.
    instructor.wait_for_selector(f'.handout[data-status="done"][data-built="{len(STUDENTS)}"][data-failed="0"]')
    assert instructor.inner_text(".handout-status") == \
        f"Hand-out finished: {len(STUDENTS)} of {len(STUDENTS)} students got a private copy."
    assert instructor.is_enabled('[data-action="fork"]')  # a finished hand-out lets the next one start
    # Latecomers would be counted here; everyone has a copy, so there is nobody to give one to.
    missing = instructor.locator('[data-action="fork-missing"]')
    assert missing.is_visible() and missing.is_disabled() and missing.inner_text() == "Give a copy to the 0 without one"
    for page, copy in zip(students, copies):
        live = next(b for b in ("0", "1", "2")
                    if page.get_attribute(f'button.broker[data-broker-id="{b}"]', "data-state") == "alive")
        broker_action(page, live, "crash", server=kclab_server)
        page.wait_for_selector(f'button.broker[data-broker-id="{live}"][data-state="crashed"]')
        copy_zk = zk_of(copy)
        wait_until(lambda: copy_zk.exists(f"/brokers/ids/{live}") is None, 10,
                   f"broker {live} of copy {copy} to leave ZooKeeper")
    screenshot(students[1], "class-student-private-copy")
    for page in (instructor, *students):
        assert not page_errors(page), page_errors(page)
