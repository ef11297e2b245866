"""End to end: the real server (``kclab serve`` under gunicorn, as a class runs it) on the test
ZooKeeper, and the system Chromium driven by Playwright.

``kclab_server`` starts one server per test module in a child process, with its own data
directory and a known instructor token, and waits until it answers. ``browser`` (in
``tests/conftest.py``) is one Chromium for the whole session; ``new_page`` opens a page in a fresh browser context (a fresh
localStorage: a new visitor) and saves a screenshot of every page it opened to
``test-artifacts/<test>-<n>.png`` when the test ends, passed or failed.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import LineReader, wait_until

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"
INSTRUCTOR_TOKEN = "e2e-instructor-token"


@dataclass
class Server:
    url: str
    data_dir: Path
    instructor_token: str
    output: LineReader

    def api(self, method: str, path: str, body: dict | None = None, headers: dict | None = None):
        """(status, JSON) of one API call, 4xx/5xx included."""
        request = urllib.request.Request(self.url + path.lstrip("/"), method=method,
                                         data=None if body is None else json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json", **(headers or {})})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def kclab_server(zk_hosts, tmp_path_factory):
    with serving(zk_hosts, tmp_path_factory.mktemp("kclab-data")) as server:
        yield server


@contextmanager
def serving(zk_hosts: str, data_dir: Path, *options: str):
    """``kclab serve`` on ``data_dir`` (and ``options``) in a child process until the block ends
    (SIGTERM, then kill)."""
    port = free_port()
    env = {**os.environ, "KCLAB_INSTRUCTOR_TOKEN": INSTRUCTOR_TOKEN, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "web.cli", "serve", "--zk", zk_hosts, "--port", str(port),
                             "--data-dir", str(data_dir), "--threads", "64", "--workers", "1", *options],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = LineReader(proc.stdout)
    try:
        output.wait_for(r"serving at http://", 60, proc)
        server = Server(f"http://127.0.0.1:{port}/", data_dir, INSTRUCTOR_TOKEN, output)
        wait_until(lambda: server.api("GET", "/healthz")[0] == 200, 30, "the server to answer /healthz")
        yield server
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


@pytest.fixture
def new_page(browser, request):
    """``new_page()`` -> a page in its own browser context; screenshots of each at the end."""
    contexts, pages = [], []
    ARTIFACTS.mkdir(exist_ok=True)

    def make(viewport=None):
        # Playwright's wait_for_function evaluates its predicate with eval, which the app's CSP
        # forbids (script-src 'self'); test_zookeeper_banner.py checks the page under the CSP.
        context = browser.new_context(viewport=viewport or {"width": 1400, "height": 900}, bypass_csp=True)
        page = context.new_page()
        page.set_default_timeout(20_000)
        page.on("pageerror", lambda error: page.__dict__.setdefault("_kclab_errors", []).append(str(error)))
        contexts.append(context)
        pages.append(page)
        return page

    yield make
    for n, page in enumerate(pages):
        try:
            page.screenshot(path=str(ARTIFACTS / f"{request.node.name}-{n}.png"), full_page=True)
        except Exception:  # noqa: BLE001 - a closed page has no screenshot; the test result stands
            pass
    for context in contexts:
        context.close()


def page_errors(page) -> list[str]:
    """Uncaught exceptions the page threw (a page that throws is broken even if it looks fine)."""
    return page.__dict__.get("_kclab_errors", [])
