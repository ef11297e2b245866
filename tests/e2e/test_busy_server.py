"""A page opened on a server with no place for its sandbox waits for one instead of dying: it says
why and when it asks again (the server's Retry-After), and gets its sandbox once a place frees —
at once when the student presses "Try now" (static/js/busy-retry.js). The lessons page's
"Start the walkthrough" waits the same way."""

from __future__ import annotations

import json

from tests.e2e.conftest import page_errors, serving
from tests.e2e.teaching_support import open_sandbox_page
from tests.support import wait_until


def test_a_full_server_gives_the_waiting_page_its_sandbox_once_a_place_frees(new_page, zk_hosts, tmp_path):
    with serving(zk_hosts, tmp_path, "--max-sandboxes", "1") as server:
        first, first_id, first_token, _ = open_sandbox_page(new_page, server)
        second = new_page()
        second.goto(server.url)
        second.wait_for_selector("#busy:not([hidden])")
        waiting = second.locator("#busy .busy-text").text_content()
        assert "runs 1 sandboxes" in waiting and "asks again in" in waiting, waiting
        assert second.evaluate("localStorage.getItem('kclab.sandbox')") is None
        assert second.locator("button.broker").count() == 0

        first.close()  # the first student leaves, and their sandbox is closed
        status, answer = server.api("DELETE", f"/api/sandboxes/{first_id}", headers={"X-Sandbox-Token": first_token})
        assert status in (200, 204), answer
        wait_until(lambda: server.api("GET", "/healthz")[1]["sandboxes"] == 0, 20, "the place to free")
        second.locator("#busy .try-now").click()
        second.wait_for_function("document.querySelectorAll('button.broker[data-state=\"alive\"]').length === 3")
        assert second.locator("#busy").is_hidden()
        saved = json.loads(second.evaluate("localStorage.getItem('kclab.sandbox')"))
        assert saved["id"] != first_id
        assert not page_errors(second)

        # The lessons page waits the same way for a walkthrough's place.
        lessons = new_page()
        lessons.goto(f"{server.url}lessons")
        lessons.click('.lesson-card button[data-action="walkthrough"] >> nth=0')
        lessons.wait_for_selector("#busy:not([hidden])")
        assert "asks again in" in lessons.locator("#busy .busy-text").text_content()
        second.close()
        status, answer = server.api("DELETE", f"/api/sandboxes/{saved['id']}",
                                    headers={"X-Sandbox-Token": saved["token"]})
        assert status in (200, 204), answer
        lessons.locator("#busy .try-now").click()
        lessons.wait_for_url(server.url)  # the walkthrough started: the main page plays it
        assert not page_errors(lessons)
