"""The live page end to end: ``kclab serve`` (gunicorn), the real ZooKeeper, the system Chromium.

Every assertion about the cluster compares the page's testable DOM (the ``data-*`` attributes
of ``static/README.md``) with what ZooKeeper holds, read with kazoo in the sandbox's chroot —
so a page that draws something plausible but wrong fails. Actions go through the page (the
broker menu, the palette, the playback bar) the way a student clicks; only the set-up of the
zombie scenario uses the HTTP API, which the page itself uses too.
"""

from __future__ import annotations

import json
import re

import pytest
from kazoo.exceptions import NoNodeError

from tests.e2e.conftest import page_errors
from tests.e2e.teaching_support import broker_action, open_sandbox_page
from tests.support import close_client, started_client, wait_until

TOPIC = "t"

PAGE_STATE = """() => {
  const crown = document.querySelector('.crown');
  const brokers = {};
  for (const b of document.querySelectorAll('button.broker')) brokers[b.dataset.brokerId] = b.dataset.state;
  const partitions = {};
  for (const row of document.querySelectorAll('tr.partition')) {
    partitions[row.dataset.partition] = {leader: row.dataset.leader, isr: row.dataset.isr,
                                         leader_epoch: row.dataset.leaderEpoch};
  }
  const znodes = {};
  for (const z of document.querySelectorAll('li.znode[data-path]')) znodes[z.dataset.path] = z.dataset.version;
  return {seq: Number(document.body.dataset.seq), mode: document.body.dataset.mode,
          connection: document.getElementById('connection')?.textContent,
          controller: crown ? Number(crown.dataset.controller) : null,
          epoch: crown ? Number(crown.dataset.epoch) : null, brokers, partitions, znodes};
}"""


@pytest.fixture
def zk_of(zk_hosts):
    """``zk_of(chroot)`` -> a kazoo client inside a sandbox's chroot (closed after the test)."""
    clients = []

    def open_client(chroot):
        clients.append(started_client(zk_hosts + chroot))
        return clients[-1]

    yield open_client
    for client in clients:
        close_client(client)


def zk_state(client) -> dict:
    """What the page must show, as ZooKeeper holds it (DOM spelling: strings, ZooKeeper's ISR order)."""
    try:
        controller = json.loads(client.get("/controller")[0])["brokerid"]
    except NoNodeError:
        controller = None
    epoch = int(client.get("/controller_epoch")[0])
    partitions, znodes = {}, {}
    for p in client.get_children(f"/brokers/topics/{TOPIC}/partitions"):
        state = json.loads(client.get(f"/brokers/topics/{TOPIC}/partitions/{p}/state")[0])
        partitions[f"{TOPIC}-{p}"] = {"leader": str(state["leader"]), "isr": ",".join(map(str, state["isr"])),
                                      "leader_epoch": str(state["leader_epoch"])}
    for path in ("/controller", "/controller_epoch", *(f"/brokers/ids/{b}" for b in client.get_children("/brokers/ids"))):
        stat = client.exists(path)
        if stat is not None:
            znodes[path] = str(stat.version)
    return {"controller": controller, "epoch": epoch, "partitions": partitions, "znodes": znodes}


class Mismatch:
    """Falsy, so ``wait_until`` goes on waiting; its repr is what a timed-out wait reports.

    A bare ``None`` left a failure under the full suite's load undiagnosable ("last value:
    None"): this says what the page showed, what ZooKeeper held, and whether the page's socket
    was connected, at the last look.
    """

    def __init__(self, shown: dict, truth: dict):
        self.shown, self.truth = shown, truth

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return f"page showed {self.shown!r}; ZooKeeper held {self.truth!r}"


def shown_equals_zookeeper(page, client):
    """The page's state if it shows exactly what ZooKeeper holds now, else a falsy ``Mismatch``."""
    shown, truth = page.evaluate(PAGE_STATE), zk_state(client)
    same = (shown["controller"] == truth["controller"] and shown["epoch"] == truth["epoch"]
            and shown["partitions"] == truth["partitions"]
            and all(shown["znodes"].get(path) == version for path, version in truth["znodes"].items()))
    return shown if same else Mismatch(shown, truth)


def test_a_controller_crash_moves_the_crown_and_the_leaders_as_zookeeper_says(new_page, kclab_server, zk_of):
    page, _, _, chroot = open_sandbox_page(new_page, kclab_server)
    zk = zk_of(chroot)
    before = wait_until(lambda: shown_equals_zookeeper(page, zk), 20, "the page to show what ZooKeeper holds")
    assert sorted(before["brokers"].items()) == [("0", "alive"), ("1", "alive"), ("2", "alive")]
    assert len(before["partitions"]) == 3 and all(p["leader"] in "012" for p in before["partitions"].values())
    old, led = before["controller"], [k for k, p in before["partitions"].items() if p["leader"] == str(before["controller"])]

    broker_action(page, old, "crash", server=kclab_server)

    # A crash is noticed when ZooKeeper expires the session: 18 s (Kafka's default timeout) of
    # silence, then an election and the leaders' moves. 30 s left too little of a loaded machine.
    after = wait_until(lambda: (s := shown_equals_zookeeper(page, zk)) and s["controller"] not in (None, old)
                       and all(s["partitions"][k]["leader"] != str(old) for k in led) and s, 60,
                       "a new controller and new leaders, on the page as in ZooKeeper")
    assert after["epoch"] == before["epoch"] + 1
    assert after["brokers"][str(old)] == "crashed"
    for key in led:  # the crashed broker's partitions moved, with a new leader epoch and it out of the ISR
        assert int(after["partitions"][key]["leader_epoch"]) > int(before["partitions"][key]["leader_epoch"])
        assert str(old) not in after["partitions"][key]["isr"].split(",")
    assert not page_errors(page)


def test_scrubbing_back_shows_the_earlier_cluster_and_going_live_returns(new_page, kclab_server, zk_of):
    page, _, _, chroot = open_sandbox_page(new_page, kclab_server)
    zk = zk_of(chroot)
    before = wait_until(lambda: shown_equals_zookeeper(page, zk), 20, "the page to show what ZooKeeper holds")
    victim = next(b for b in (0, 1, 2) if b != before["controller"])
    broker_action(page, victim, "crash", server=kclab_server)
    after = wait_until(lambda: (s := shown_equals_zookeeper(page, zk)) and s["brokers"][str(victim)] == "crashed"
                       and all(p["leader"] != str(victim) and str(victim) not in p["isr"].split(",")
                               for p in s["partitions"].values()) and s, 30,
                       "the crashed broker to lead nothing and be in no ISR")

    # Scrubbed to the crash: the broker and its registration count down as at that moment (the
    # crash record's time, not today's clock, which would say the timeout passed long ago).
    crashed = page.evaluate(f"""() => window.kclab.store.slice({before['seq']}, window.kclab.store.head + 1)
      .find((r) => r.kind === 'broker' && r.to_state === 'crashed' && r.broker_id === {victim}).seq""")
    scrub_to(page, crashed)
    meta = page.locator(f'button.broker[data-broker-id="{victim}"] .broker-meta').text_content()
    assert re.search(r"session expires in [1-4]\.\d s", meta), meta
    badge = page.locator(f'li.znode[data-path="/brokers/ids/{victim}"] .ephemeral').text_content()
    assert re.search(r"owner crashed: session expires in [1-4]\.\d s", badge), badge
    assert "Kafka's default is 18.0 s" in page.locator(".session-timeout-note").text_content()

    scrub_to(page, before["seq"])
    scrubbed = page.evaluate(PAGE_STATE)
    assert scrubbed["brokers"][str(victim)] == "alive"
    assert scrubbed["partitions"] == before["partitions"] and scrubbed["controller"] == before["controller"]

    # Acting while scrubbed back first asks to return to live.
    broker_action(page, before["controller"], "pause")
    dialog = page.locator("dialog[open]")
    assert "live" in dialog.inner_text().lower()
    dialog.get_by_role("button", name="Cancel").click()

    page.get_by_role("button", name="Go live").click()
    page.wait_for_function("document.body.dataset.mode === 'live'")
    live = wait_until(lambda: shown_equals_zookeeper(page, zk), 20, "the live view again")
    assert live["partitions"] == after["partitions"] and live["brokers"][str(victim)] == "crashed"


def scrub_to(page, seq):
    page.locator(".pb-scrub").evaluate("(el, seq) => { el.value = String(seq); el.dispatchEvent(new Event('input')); }",
                                       seq)
    page.wait_for_function(f"document.body.dataset.mode === 'scrubbed' && document.body.dataset.seq === '{seq}'")


def test_a_paused_controller_past_its_session_is_a_zombie_whose_requests_bounce(new_page, kclab_server, zk_of):
    # Without the automatic rebalance: its check (every 30 s in the lab) could move the leader back
    # before the student's election, which would then have nothing to write and no pause to strike.
    page, sandbox, token, chroot = open_sandbox_page(new_page, kclab_server, {"auto.leader.rebalance.enable": False})
    zk = zk_of(chroot)
    before = wait_until(lambda: shown_equals_zookeeper(page, zk), 20, "the page to show what ZooKeeper holds")
    controller = before["controller"]
    # Set-up through the API: move leadership off a follower and back into its ISR, so a
    # preferred election has a leader to move (and the controller something to write).
    other = next(b for b in (0, 1, 2) if b != controller and any(p["leader"] == str(b) for p in before["partitions"].values()))
    headers = {"X-Sandbox-Token": token}
    for op in ("shutdown_broker", "start_broker"):
        status, answer = kclab_server.api("POST", f"/api/sandboxes/{sandbox}/faults", {"op": op, "broker": other}, headers)
        assert status == 200 and answer["ok"], answer
        wait_until(lambda: (s := shown_equals_zookeeper(page, zk)) and s["brokers"][str(other)] ==
                   ("alive" if op == "start_broker" else "stopped"), 30, f"{op} {other} on the page")
    wait_until(lambda: (s := shown_equals_zookeeper(page, zk)) and all(
        str(other) in p["isr"].split(",") for p in s["partitions"].values()), 30, f"broker {other} back in every ISR")

    # The student's part: pause the controller during the election, elect, wait, resume.
    broker_action(page, controller, "pause_during")
    page.locator("dialog[open] select").select_option("ReplicaLeaderElection")
    page.locator("dialog[open]").get_by_role("button", name="Arm the pause").click()
    page.get_by_role("button", name="Preferred election…").click()
    page.locator("dialog[open]").get_by_role("button", name="Elect").click()
    page.wait_for_selector(f'button.broker[data-broker-id="{controller}"][data-state="paused"]')
    new = wait_until(lambda: (s := shown_equals_zookeeper(page, zk)) and s["controller"] not in (None, controller) and s,
                     30, "another broker to become controller once the paused one's session expired")
    assert new["epoch"] == before["epoch"] + 1
    # Operators watch ActiveControllerCount summed over the brokers: the frozen zombie still counts.
    summary = page.locator("p.ctl-summary")
    wait_until(lambda: summary.get_attribute("data-active-controller-count") == "2", 20,
               "the page to count the zombie beside the new controller")
    assert "zombie" in summary.text_content()

    # The live brokers have heard from the new controller (its requests, at the new epoch, applied):
    # a zombie request that reached a broker before them would be applied, not refused, as in Kafka.
    heard = """([from, epoch]) => new Set(Object.values(window.kclab.store.view.requests)
                 .filter((r) => r.from === from && r.epoch === epoch && r.state === 'applied').map((r) => r.to)).size"""
    wait_until(lambda: page.evaluate(heard, [new["controller"], new["epoch"]]) >= 2, 30,
               "both live brokers to apply the new controller's requests")
    broker_action(page, controller, "resume", server=kclab_server)
    # The zombie's LeaderAndIsr requests come back rejected (drawn bouncing, for a few seconds)...
    # (a leader's AlterIsr the zombie finds in its queue is refused too, NOT_CONTROLLER: not its request)
    page.wait_for_selector("g.request.rejected:not([data-request^='AlterIsr'])", timeout=20_000)
    rejected = page.evaluate("""() => Object.values(window.kclab.store.view.requests)
                                 .filter((r) => r.state === 'rejected' && r.name !== 'AlterIsr')""")
    assert rejected and all(r["from"] == controller and r["epoch"] == before["epoch"] for r in rejected)
    assert {r["outcome"] for r in rejected} == {"rejected_stale_epoch"}
    assert "STALE_CONTROLLER_EPOCH" in page.locator("g.request.rejected:not([data-request^='AlterIsr'])").first.text_content()
    # ... and ZooKeeper refused its write: the page says so, and nothing it tried changed ZooKeeper.
    page.wait_for_selector(".znode .badge.refused:not(.hidden), li.znode.ghost[data-refused-path]")
    final = wait_until(lambda: shown_equals_zookeeper(page, zk), 20, "the page to agree with ZooKeeper")
    assert final["controller"] == new["controller"] and final["epoch"] == new["epoch"]
    wait_until(lambda: summary.get_attribute("data-active-controller-count") == "1", 20, "the zombie to stop counting")
    assert page.locator(f'section.ctl-module[data-module-broker="{new["controller"]}"] '
                        f'div.metric[data-metric="ActiveControllerCount"]').get_attribute("data-value") == "1"
    assert not page_errors(page)


def test_a_reload_in_the_middle_of_a_stream_loses_nothing_and_shows_nothing_twice(new_page, kclab_server, zk_of):
    page, sandbox, token, chroot = open_sandbox_page(new_page, kclab_server)
    headers = {"X-Sandbox-Token": token}
    status, answer = kclab_server.api("POST", f"/api/sandboxes/{sandbox}/faults",
                                      {"op": "produce", "topic": TOPIC, "partition": 0, "count": 300, "rate": 100},
                                      headers)
    assert status == 200 and answer["ok"], answer
    page.wait_for_function("window.kclab.store.headView.partitions['t-0']?.hw > 20")
    page.reload()  # records keep coming while the page is gone and while it joins again
    page.wait_for_selector(".crown[data-controller]")
    page.wait_for_function("window.kclab.store.headView.partitions['t-0']?.hw === 300", timeout=30_000)

    def settled():
        """The server's snapshot, the page's log and what the page shows, at one moment when
        they agree on the newest seq. The cluster keeps emitting the odd record after the
        stream (ISR and high-watermark news), so a later read could see one more."""
        status, snapshot = kclab_server.api("GET", f"/api/sandboxes/{sandbox}/snapshot", headers=headers)
        assert status == 200, snapshot
        log = page.evaluate("""() => { const s = window.kclab.store;
            return {first: s.minSeq, head: s.head, seqs: s.slice(s.minSeq + 1, s.head).map((r) => r.seq),
                    view: s.headView, duplicatesFolded: s.duplicates}; }""")
        shown = page.evaluate(PAGE_STATE)
        return (snapshot, log, shown) if snapshot["seq"] == log["head"] == shown["seq"] else None

    snapshot, log, shown = wait_until(settled, 30, "the page to have and show every record the server has")
    # Every seq once, in order, from where the page's log starts to the server's newest.
    assert log["seqs"] == list(range(log["first"] + 1, snapshot["seq"] + 1))
    assert log["view"] == snapshot["view"]
    assert (agrees := shown_equals_zookeeper(page, zk_of(chroot))), agrees
