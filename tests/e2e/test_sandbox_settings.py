"""The sandbox settings form end to end: a sandbox created with inter.broker.protocol.version 2.6
really runs the older protocol (its brokers register at version 4, and its topics have no ids)."""

from __future__ import annotations

import json

from tests.e2e.conftest import page_errors
from tests.e2e.teaching_support import open_sandbox_page
from tests.e2e.test_live_page import zk_of  # noqa: F401 - a fixture
from tests.support import wait_until


def test_a_sandbox_with_protocol_2_6_registers_its_brokers_at_version_4(new_page, kclab_server, zk_of):  # noqa: F811
    page, first_id, _, _ = open_sandbox_page(new_page, kclab_server)
    page.click("#settings-button")
    assert page.input_value("#set-ibp") == "2.8"  # Kafka 2.8's default
    page.select_option("#set-ibp", "2.6")
    page.click("dialog.settings button[type=submit]")
    saved = wait_until(lambda: (s := json.loads(page.evaluate("localStorage.getItem('kclab.sandbox')")))
                       and s["id"] != first_id and s, 30, "the new sandbox")
    status, info = kclab_server.api("GET", f"/api/sandboxes/{saved['id']}", headers={"X-Sandbox-Token": saved["token"]})
    assert status == 200 and info["cluster"]["config"]["inter.broker.protocol.version"] == "2.6", info
    zk = zk_of(info["cluster"]["chroot"])
    wait_until(lambda: zk.exists("/brokers/ids/0"), 30, "broker 0 to register")
    registration = json.loads(zk.get("/brokers/ids/0")[0])
    assert registration["version"] == 4 and "features" not in registration
    wait_until(lambda: zk.get_children("/brokers/topics"), 30, "the sandbox's topic")
    topic = zk.get_children("/brokers/topics")[0]
    assert "topic_id" not in json.loads(zk.get(f"/brokers/topics/{topic}")[0])
    assert not page_errors(page)
