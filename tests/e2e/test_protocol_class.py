"""Kafka's rules and the space-time diagram in class mode: a student follows the instructor's
demo on ``kclab serve`` (real ZooKeeper), and the student's panel and diagram — folded from the
class's records, starting from the server's snapshot — tell the same story as the instructor's.
"""

from __future__ import annotations

from tests.e2e.conftest import page_errors
from tests.e2e.teaching_support import broker_action, open_instructor, wait_brokers_alive, zk_leaders
from tests.e2e.teaching_support import zk_of  # noqa: F401 (a fixture)
from tests.support import wait_until

RULES_SHOWN = """() => Object.fromEntries([...document.querySelectorAll('li.rule')]
  .map((li) => [li.dataset.rule, li.dataset.status + '/' + li.dataset.count]))"""


def test_a_student_follows_the_instructors_rules_and_diagram(new_page, kclab_server, zk_of):
    instructor, code, _ = open_instructor(new_page, kclab_server)
    student = new_page(viewport={"width": 1400, "height": 1000})
    student.goto(f"{kclab_server.url}join")
    student.fill("#join-code", code)
    student.fill("#join-name", "Ann")
    student.click('.join-form button[type="submit"]')
    instructor.wait_for_selector('.student-count[data-count="1"]')
    instructor.click('[data-action="free-demo"]')
    instructor.wait_for_function("document.querySelector('.class-panel').dataset.session !== ''")
    demo = instructor.get_attribute(".class-panel", "data-session")
    for page in (instructor, student):
        wait_brokers_alive(page)
    zk = zk_of(demo)
    leaders = wait_until(lambda: (l := zk_leaders(zk, "t")) and "-1" not in l.values() and len(l) == 3 and l, 20,
                         "the demo's partitions to have leaders")
    victim = leaders["t-0"]
    instructor.wait_for_selector(f'tr.partition[data-partition="t-0"][data-leader="{victim}"]')
    broker_action(instructor, victim, "crash")

    # Both pages fold the class's records into the same rules and draw the same lanes.
    for page in (instructor, student):
        page.locator(".spacetime-panel").scroll_into_view_if_needed()  # the diagram draws only while on screen
        page.wait_for_selector(f'text.st-lane-name[data-lane="broker:{victim}"]:text("(crashed)")')
        page.wait_for_selector('li.rule[data-rule="leader_in_isr"][data-status="holds"]')
        page.wait_for_function("Number(document.querySelector('#spacetime').dataset.items) > 0")
    wait_until(lambda: instructor.inner_text("ol.rules") == student.inner_text("ol.rules"), 10,
               "the student's panel to say what the instructor's says")
    assert set(student.evaluate(RULES_SHOWN).values()) == {"holds/0"}
    lanes = "() => [...document.querySelectorAll('text.st-lane-name')].map((t) => t.textContent)"
    assert instructor.evaluate(lanes) == student.evaluate(lanes)
    assert not page_errors(instructor) and not page_errors(student)
