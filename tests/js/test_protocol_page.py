"""The invariant panel and the space-time diagram in Chromium, on the recorded zombie-controller
and unclean-election scripts played as replays (the page's own replay source).

The diagram must show the zombie's epoch-1 LeaderAndIsr bouncing off both brokers and ZooKeeper
refusing its epoch-1 write; clicking an arrow opens its record in the timeline, and a record
opened elsewhere is marked in the diagram; the panel names the zombie, fenced. In the unclean
run the data rule is holding up to the unclean election and broken right after, naming the lost
messages; scrubbed back, the rules are as they stood then (Python's fold says what they were).
"""

from __future__ import annotations

import pytest

from backend.view.page import fold
from tests.js.static_server import serve
from tests.view.breaking import BREAKS, read_records, write_log

ZOMBIE, UNCLEAN = "zombie_controller_fenced", "unclean_election_loses_acks1"


@pytest.fixture(scope="module")
def site(protocol_logs):
    directory = protocol_logs[ZOMBIE].parent
    assert protocol_logs[UNCLEAN].parent == directory
    server = serve(0, replays=directory)
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.fixture
def page(browser):
    page = browser.new_page(viewport={"width": 1500, "height": 1300}, accept_downloads=True)
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    page.close()
    assert not errors, f"the page threw: {errors}"


def open_replay(page, site, log, records):
    page.goto(f"{site}/?replay=/replays/{log.name}&rate=all")
    page.wait_for_function(f"document.body.dataset.seq === '{records[-1]['seq']}'")


def scrub(page, seq):
    page.locator(".pb-scrub").evaluate(
        "(el, seq) => { el.value = String(seq); el.dispatchEvent(new Event('input')); }", seq)
    page.wait_for_function(f"document.body.dataset.seq === '{seq}' && document.body.dataset.mode === 'scrubbed'")
    page.locator(".spacetime-panel").scroll_into_view_if_needed()  # the diagram draws only while on screen
    page.wait_for_timeout(150)  # the views draw on the next animation frame


def rules_shown(page) -> dict:
    return page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('li.rule')]
      .map((li) => [li.dataset.rule, [li.dataset.status, Number(li.dataset.count)]]))""")


def rules_folded(records, seq) -> dict:
    rules = fold([r for r in records if r["seq"] <= seq])["invariants"]["rules"]
    return {rule: [v["status"], v["count"]] for rule, v in rules.items()}


def test_the_zombies_requests_bounce_and_zookeeper_refuses_its_write(page, site, protocol_logs):
    records = read_records(protocol_logs[ZOMBIE])
    open_replay(page, site, protocol_logs[ZOMBIE], records)
    bounced = [r for r in records if r["kind"] == "request" and r.get("outcome") == "rejected_stale_epoch"
               and r.get("op") == "LeaderAndIsr"]
    refused = next(r for r in records if r.get("to_state") == "write_refused")
    assert {r["broker_id"] for r in bounced} == {1, 2} and all(r["controller_epoch"] == 1 for r in bounced)
    scrub(page, refused["seq"])

    for r in bounced:
        arrow = page.locator(f'g.st-item[data-kind="request"][data-subject="{r["subject"]}"]')
        assert arrow.get_attribute("data-outcome") == "rejected" and arrow.get_attribute("data-refused") == ""
        assert "LeaderAndIsr · epoch 1 ✗ STALE_CONTROLLER_EPOCH" in arrow.get_attribute("aria-label")
        assert arrow.locator("path.st-line").count() == 2, "the request and its bounce back"
        assert arrow.locator("path.st-line.back.bad").count() == 1 and arrow.locator("text.st-cross").count() == 1
    write = page.locator(f'g.st-item[data-kind="zk"][data-refused][data-seq="{refused["seq"]}"]')
    assert "ZooKeeper refused the write of /admin/preferred_replica_election" in write.get_attribute("aria-label")
    new = next(r["broker_id"] for r in records if r.get("to_state") == "elected" and r.get("controller_epoch") == 2)
    assert page.locator(f'text.st-lane-name[data-lane="broker:{new}"]').text_content() == f"broker {new} ♛2"

    # The panel names the zombie, fenced; its link opens the fencing record, marked in the diagram.
    zombie = page.locator('li.rule[data-rule="one_controller"] li.zombie.fenced')
    assert "Broker 0 still believes it is the controller, with epoch 1" in zombie.text_content()
    assert rules_shown(page) == rules_folded(records, refused["seq"])
    fenced_at = int(zombie.locator("button").get_attribute("data-target-seq"))
    fencing = next(r for r in records if r["seq"] == fenced_at)
    # Fenced by whichever came first: a broker refusing its epoch-1 request, or (Kafka 2.8's zombie,
    # whose session expired while it was frozen) its write that never reached ZooKeeper.
    assert refused["detail"]["error"] == "SESSIONEXPIRED" and refused["controller_id"] == 0
    assert fencing == min([refused, *bounced], key=lambda r: r["seq"])
    zombie.locator("button").click()  # a record opened elsewhere is marked in the diagram
    page.wait_for_selector(f'.record-detail[data-selected-seq="{fenced_at}"]')
    selected = page.locator("g.st-item.selected")
    page.wait_for_function("document.querySelectorAll('g.st-item.selected').length === 1")
    assert selected.get_attribute("data-subject") == fencing["subject"]

    # Clicking an arrow opens its record in the timeline.
    arrow = page.locator(f'g.st-item[data-subject="{bounced[0]["subject"]}"]')
    page.locator(".spacetime-panel").scroll_into_view_if_needed()
    x, y = arrow.locator("path.st-line").first.evaluate("""(path) => {  // a point of it no other arrow covers
      for (let f = 0.95; f > 0.05; f -= 0.05) {
        const p = path.getPointAtLength(path.getTotalLength() * f).matrixTransform(path.getScreenCTM());
        if (path.parentNode.contains(document.elementFromPoint(p.x, p.y))) return [p.x, p.y];
      }
      return null; }""")
    page.mouse.click(x, y)
    sent = int(arrow.get_attribute("data-seq"))
    page.wait_for_selector(f'.record-detail[data-selected-seq="{sent}"]')
    assert page.locator(".record-detail h3").text_content().startswith(f"#{sent} request {bounced[0]['subject']}")
    assert "selected" in arrow.get_attribute("class")


def test_the_diagram_filters_zooms_and_exports_what_is_in_sight(page, site, protocol_logs):
    records = read_records(protocol_logs[ZOMBIE])
    open_replay(page, site, protocol_logs[ZOMBIE], records)
    refused = next(r for r in records if r.get("to_state") == "write_refused")
    scrub(page, refused["seq"])
    page.select_option("select.st-kind", "request")
    page.wait_for_timeout(100)
    kinds = set(page.locator("g.st-item").evaluate_all("els => els.map(e => e.dataset.kind)"))
    assert kinds == {"request"}
    page.select_option("select.st-kind", "")
    page.select_option("select.st-broker", "2")
    page.wait_for_timeout(100)
    lanes = page.locator("g.st-item").evaluate_all(
        "els => els.map(e => e.getAttribute('aria-label'))")
    assert lanes and page.locator('g.st-item[data-subject="request:LeaderAndIsr#1"]').count() == 0
    page.select_option("select.st-broker", "")
    before = int(page.get_attribute("#spacetime", "data-items"))
    page.click('[data-action="zoom-out"]')
    page.click('[data-action="zoom-out"]')
    page.wait_for_timeout(150)
    assert int(page.get_attribute("#spacetime", "data-items")) > before, "zoomed out, more records are in sight"
    with page.expect_download() as download:
        page.click('[data-action="export"]')
    svg = download.value.path().read_text()
    assert svg.startswith("<svg") and 'xmlns="http://www.w3.org/2000/svg"' in svg
    assert "STALE_CONTROLLER_EPOCH" in svg and "ZooKeeper" in svg and "<style>" in svg
    assert download.value.suggested_filename.startswith("kclab-diagram-")


def test_the_unclean_election_turns_the_data_rule_red_and_names_the_lost_messages(page, site, protocol_logs):
    records = read_records(protocol_logs[UNCLEAN])
    open_replay(page, site, protocol_logs[UNCLEAN], records)
    election = next(r for r in records if r.get("election") == "offline_unclean")
    lost = next(r for r in records if r.get("to_state") == "lost")
    data_rule = page.locator('li.rule[data-rule="acked_not_lost"]')

    scrub(page, election["seq"] - 1)
    assert data_rule.get_attribute("data-status") == "holds"
    assert rules_shown(page) == rules_folded(records, election["seq"] - 1)
    scrub(page, lost["seq"])
    assert data_rule.get_attribute("data-status") == "broken"
    assert data_rule.evaluate("(li) => getComputedStyle(li).borderLeftColor") == "rgb(198, 40, 40)"
    assert "✗" in data_rule.locator(".rule-icon").text_content()
    assert "broken" in data_rule.locator(".rule-status").text_content()
    violation = data_rule.locator("li.violation")
    assert "5 acknowledged message(s) of t-0 lost: offset(s) 2–6 (acks=1)" in violation.text_content()
    assert violation.locator(".v-cause").get_attribute("data-target-seq") == str(election["seq"])
    violation.locator(".v-cause").click()
    page.wait_for_selector(f'.record-detail[data-selected-seq="{election["seq"]}"]')



def test_a_controller_that_forgets_a_dead_leader_is_shown_breaking_the_leader_rule(page, site, protocol_logs):
    """The unclean run changed as a bug would change it (tests/view/breaking.py): the controller
    never moves t-0 off its dead leader. The page says what Python's fold says, record by record
    where it matters: broken (or waiting first) from the leader's death until the election."""
    _, mutate, _ = BREAKS["leader_left_behind"]
    records = mutate(read_records(protocol_logs[UNCLEAN]))
    log = write_log(protocol_logs[UNCLEAN].parent / "leader-left-behind.jsonl", records, like=protocol_logs[UNCLEAN])
    open_replay(page, site, log, records)
    statuses = {r["seq"]: rules_folded(records, r["seq"])["leader_in_isr"][0] for r in records}
    broken = min(seq for seq, status in statuses.items() if status == "broken")
    for seq in sorted({min(s for s, status in statuses.items() if status != "holds"), broken}):
        scrub(page, seq)
        leader_rule = page.locator('li.rule[data-rule="leader_in_isr"]')
        assert leader_rule.get_attribute("data-status") == statuses[seq]
        assert rules_shown(page) == rules_folded(records, seq)
    words = leader_rule.locator("li.violation").text_content()
    assert "has handled a broker change since, and did not move them" in words
