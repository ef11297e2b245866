"""The statistics dashboard in the system Chromium, on the real server serving the end-to-end
run's replay logs and statistics: every chart draws (or says why it is empty), without a page
error, and the rules chart names Kafka's rules by the titles the invariant panel shows."""

from __future__ import annotations

import pytest

from backend.view.rules import BY_ID
from tests.e2e.conftest import page_errors, serving


@pytest.fixture(scope="module")
def dashboard(zk_hosts, stats_data):
    with serving(zk_hosts, stats_data()) as server:
        yield server


def open_stats(browser, server):
    context = browser.new_context(viewport={"width": 1400, "height": 1800})
    page = context.new_page()
    page.set_default_timeout(30_000)
    page.on("pageerror", lambda error: page.__dict__.setdefault("_kclab_errors", []).append(str(error)))
    page.goto(f"{server.url}stats#token={server.instructor_token}")
    return context, page


def test_every_chart_draws_and_the_rules_chart_names_the_broken_rules(browser, dashboard):
    context, page = open_stats(browser, dashboard)
    try:
        page.wait_for_selector("body[data-state=ready]")
        charts = page.locator(".plot[data-chart]")
        names = [charts.nth(i).get_attribute("data-chart") for i in range(charts.count())]
        assert "violations" in names
        for name in names:  # drawn: plotly's svg with rows, or an empty state that says why
            page.wait_for_selector(f".plot[data-chart={name}][data-rows]")
        violations = page.locator("#chart-violations")
        assert int(violations.get_attribute("data-rows")) >= 1
        # The end-to-end run's unclean election broke the data rule: its bar carries the title a
        # student reads in the invariant panel, not the id.
        violations.locator("svg.main-svg").first.wait_for()
        labels = violations.locator(".ytick text").all_text_contents()
        assert BY_ID["acked_not_lost"].title in labels, labels
        assert not any(label in BY_ID for label in labels), labels
        assert page_errors(page) == []
    finally:
        context.close()
