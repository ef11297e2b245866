"""The page says when ZooKeeper is unreachable, and since when, and greys out its actions with
that reason; when ZooKeeper is back the banner goes and the actions work again. The real server
(gunicorn, its embedded ZooKeeper, which the test freezes with SIGSTOP) and the system Chromium;
its headers (CSP, framing) are in force and the page runs under them without an error."""

from __future__ import annotations

import os
import signal

import pytest

from tests.e2e.conftest import ARTIFACTS
from tests.hardening.server import serve


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    server = serve(tmp_path_factory.mktemp("banner"))
    yield server
    server.stop()


def test_the_banner_says_zookeeper_is_unreachable_and_actions_are_greyed_out(served, browser):
    context = browser.new_context(viewport={"width": 1400, "height": 900})  # the CSP in force (no bypass)
    page = context.new_page()
    violations = []
    page.on("console", lambda message: violations.append(message.text)
            if "Content Security Policy" in message.text else None)
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    try:
        check_banner(served, page)
        page.screenshot(path=str(ARTIFACTS / "zookeeper-banner-after.png"))
    finally:
        context.close()
    assert violations == [] and errors == []


def check_banner(served, page):
    response = page.goto(served.url + "/")
    assert "frame-ancestors 'none'" in response.headers["content-security-policy"]
    page.wait_for_selector("#app[data-zookeeper='up']")
    page.wait_for_selector("#palette button")
    page.wait_for_selector("#connection:text('live')")
    [jvm] = served.zk_pids()
    os.kill(jvm, signal.SIGSTOP)
    try:
        page.wait_for_selector("#app[data-zookeeper='down']", timeout=30_000)
        banner = page.locator("#zk-banner")
        assert banner.is_visible() and "ZooKeeper unreachable since" in banner.inner_text()
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "zookeeper-banner-down.png"))
        assert page.locator("#palette button").first.evaluate("b => getComputedStyle(b).pointerEvents") == "none"
    finally:
        os.kill(jvm, signal.SIGCONT)
    page.wait_for_selector("#app[data-zookeeper='up']", timeout=30_000)
    assert not page.locator("#zk-banner").is_visible()
