"""Helpers for the lesson and class end-to-end tests: ZooKeeper as the truth (read with kazoo in
a sandbox's chroot), the pages' testable DOM, and the instructor's page."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import requests
from kazoo.exceptions import NoNodeError

from tests.support import close_client, started_client, wait_until

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture
def zk_of(zk_hosts):
    """``zk_of(sandbox_id)`` -> a kazoo client in that sandbox's chroot (/kclab/<id>), closed after."""
    clients = []

    def open_client(sandbox_id):
        clients.append(started_client(f"{zk_hosts}/kclab/{sandbox_id}"))
        return clients[-1]

    yield open_client
    for client in clients:
        close_client(client)


def zk_leaders(client, topic: str) -> dict[str, str]:
    """Every partition's leader as ZooKeeper holds it, spelled as the DOM's data-leader."""
    out = {}
    for p in client.get_children(f"/brokers/topics/{topic}/partitions"):
        state = json.loads(client.get(f"/brokers/topics/{topic}/partitions/{p}/state")[0])
        out[f"{topic}-{p}"] = str(state["leader"])
    return out


def zk_controller(client) -> tuple[int | None, int]:
    try:
        controller = json.loads(client.get("/controller")[0])["brokerid"]
    except NoNodeError:
        controller = None
    return controller, int(client.get("/controller_epoch")[0])


def page_leaders(page) -> dict[str, str]:
    return page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('tr.partition')]
      .map((row) => [row.dataset.partition, row.dataset.leader]))""")


def shown_source(page) -> str | None:
    """The sandbox (or class session) the page shows now."""
    return page.evaluate("window.kclab.source?.id ?? null")


def wait_brokers_alive(page, count: int = 3) -> None:
    page.wait_for_function(f"document.querySelectorAll('button.broker[data-state=\"alive\"]').length === {count}"
                           " && document.querySelector('.crown[data-controller]') !== null")


def open_sandbox_page(new_page, server, config=None):
    """A new visitor: the page creates its sandbox; returns (page, sandbox id, token, chroot).
    With ``config`` (Kafka settings) the sandbox is created through the API first and the page
    resumes it, as it resumes the sandbox it remembers after a reload."""
    page = new_page()
    if config is not None:
        status, created = server.api("POST", "/api/sandboxes", {"cluster": {"config": config}})
        assert status == 201, created
        saved = json.dumps({"id": created["id"], "token": created["token"]})
        page.add_init_script(f"localStorage.getItem('kclab.sandbox') "
                             f"|| localStorage.setItem('kclab.sandbox', {json.dumps(saved)})")
    page.goto(server.url)
    page.wait_for_function("document.querySelectorAll('button.broker[data-state=\"alive\"]').length === 3")
    page.wait_for_selector(".crown[data-controller]")
    saved = json.loads(page.evaluate("localStorage.getItem('kclab.sandbox')"))
    status, info = server.api("GET", f"/api/sandboxes/{saved['id']}", headers={"X-Sandbox-Token": saved["token"]})
    assert status == 200, info
    return page, saved["id"], saved["token"], info["cluster"]["chroot"]


def broker_action(page, broker, action: str, server=None, timeout_s: float = 60) -> None:
    """Open a broker's menu and click one of its actions, as a student does.

    With ``server``, wait for the page to show the server's answer, and click again as a student
    would while it answers that it is overloaded ("your action was not carried out; try again in
    2 s": ``web/load_guard.py``, which a loaded CI machine can set off; CI, stop 41), once
    ``/healthz`` says it caught up. Any other refusal fails. Earlier messages are dismissed first,
    so only this action's answer is read."""
    answered, refused = "#infos .message.info, #errors .message.error", "#errors .message.error"
    deadline = time.monotonic() + timeout_s
    while True:
        if server is not None:  # what the student's × does to each (an info also goes by itself)
            page.evaluate("() => document.querySelectorAll('#infos .message, #errors .message')"
                          ".forEach((m) => m.remove())")
        page.click(f'button.broker[data-broker-id="{broker}"]')
        page.click(f'[role="menu"] [role="menuitem"][data-action="{action}"]')
        if server is None:
            return
        page.wait_for_selector(answered, timeout=max(1, deadline - time.monotonic()) * 1000)
        if not page.locator(refused).count():
            return
        message = page.inner_text(refused)
        assert "overloaded" in message, message
        wait_until(lambda: not requests.get(f"{server.url}healthz", timeout=5).json()["load"]["shedding"],
                   max(1, deadline - time.monotonic()), "the server to catch up")


def open_instructor(new_page, server, name: str = "Ada"):
    """The instructor's page with a class open: (page, join code, class id)."""
    page = new_page(viewport={"width": 1400, "height": 1000})
    page.goto(f"{server.url}instructor#token={server.instructor_token}")
    page.fill("#instructor-name", name)
    page.click('[data-action="open-class"]')
    page.wait_for_selector(".join-code[data-code]")
    code = page.get_attribute(".join-code", "data-code")
    class_id = page.get_attribute(".class-panel", "data-class-id")
    assert len(code) == 6 and class_id
    return page, code, class_id


def screenshot(page, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)


ELECTION_STATES = {"elected", "resigned", "lost_election", "stopped_holding_back", "failover_failed",
                   "started", "stopped", "crashed", "shut_down", "session_expired"}


def election_history(data_dir: Path, lesson_id: str, last: int = 25) -> str:
    """The newest replay log of ``lesson_id``'s controller and broker lifecycle records, one per
    line: what a failed lesson's "expected controller N" needs to be read (who competed, who held
    back, who won, in which order). Best effort: a failure's message, never a test's verdict."""
    logs = sorted((data_dir / "replays").glob("**/*.jsonl"), key=lambda p: p.stat().st_mtime, reverse=True)
    for path in logs:
        lines = path.read_text(errors="replace").splitlines()
        try:
            header = json.loads(lines[0]) if lines else {}
        except ValueError:
            continue
        if header.get("lesson_id") != lesson_id:
            continue
        picked = []
        for line in lines[1:]:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if record.get("kind") in ("controller", "broker") and record.get("to_state") in ELECTION_STATES:
                picked.append(f"  #{record.get('seq', '?')} {record.get('subject')} {record.get('to_state')}: "
                              f"{record.get('note', '')}")
        return f"{path.name}, its last election records:\n" + "\n".join(picked[-last:])
    return f"no replay log of {lesson_id} in {data_dir / 'replays'}"
