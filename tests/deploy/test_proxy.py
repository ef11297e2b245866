"""deploy/Caddyfile, run for real: Debian's caddy in front of a real ``kclab serve``, on loopback
ports, with the environment docker-compose.yml gives it. The page, the API and a Socket.IO
websocket work over HTTPS with a certificate from Caddy's own CA (``KCLAB_TLS=internal``), plain
HTTP is redirected, and the app prints its links with the public address.

The websocket is the part a wrong proxy breaks: Socket.IO accepts it only from the page's own
origin, https://HOST, which the app learns from the proxy's X-Forwarded-Proto.

Debian 12 has caddy 2.6; the compose file runs the caddy 2.11 image. Both pass the upgrade and
set X-Forwarded-* by default (since 2.5), and the file uses nothing newer than 2.6.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
import socketio

from backend.zkserver.server import free_ports
from tests.deploy.conftest import ROOT, start, stop
from tests.support import LineReader, wait_until

CADDYFILE = ROOT / "deploy" / "Caddyfile"
TOKEN = "proxy-test-instructor-token"


@dataclass
class Proxied:
    url: str          # https://localhost:PORT/, through Caddy
    http_url: str     # http://localhost:PORT/, Caddy's redirect
    root_ca: Path     # Caddy's own CA, which signed the certificate
    app_output: LineReader


@pytest.fixture(scope="module")
def proxied(zk_hosts, tmp_path_factory):
    caddy = shutil.which("caddy")
    assert caddy, "caddy is not installed: make setup installs Debian's caddy"
    work = tmp_path_factory.mktemp("proxy")
    app_port, https_port, http_port = free_ports(3)
    public = f"https://localhost:{https_port}/"
    app, app_output = start([sys.executable, "-m", "web.cli", "serve", "--zk", zk_hosts, "--port", str(app_port),
                             "--data-dir", str(work / "data"), "--threads", "16"],
                            {"KCLAB_INSTRUCTOR_TOKEN": TOKEN, "KCLAB_PUBLIC_URL": public}, ROOT)
    proxy, proxy_output = start(
        [caddy, "run", "--config", str(CADDYFILE), "--adapter", "caddyfile"],
        {"KCLAB_PUBLIC_HOST": "localhost", "KCLAB_TLS": "internal", "KCLAB_UPSTREAM_HOST": "127.0.0.1",
         "KCLAB_UPSTREAM_PORT": str(app_port),
         "KCLAB_HTTPS_PORT": str(https_port), "KCLAB_HTTP_PORT": str(http_port), "CADDY_ADMIN": "off",
         "XDG_DATA_HOME": str(work / "caddy-data"), "XDG_CONFIG_HOME": str(work / "caddy-config")}, work)
    try:
        app_output.wait_for(r"serving at ", 60, app)
        root_ca = work / "caddy-data" / "caddy" / "pki" / "authorities" / "local" / "root.crt"
        wait_until(lambda: root_ca.exists() or proxy.poll() is not None, 30, "Caddy to create its CA")
        assert proxy.poll() is None, f"caddy exited: {proxy_output.text()}"
        yield Proxied(public, f"http://localhost:{http_port}/", root_ca, app_output)
    finally:
        stop(proxy)
        stop(app)


def get(proxied: Proxied, path: str) -> requests.Response:
    return requests.get(proxied.url + path.lstrip("/"), verify=str(proxied.root_ca), timeout=10,
                        allow_redirects=False)


def test_the_page_and_the_api_are_served_over_https_with_a_verified_certificate(proxied):
    health = wait_until(lambda: get(proxied, "/healthz"), 30, "the app to answer through the proxy",
                        retry_on=(requests.ConnectionError,))
    assert health.status_code == 200 and health.json()["ok"] is True
    page = get(proxied, "/join")
    assert page.status_code == 200 and "<html" in page.text.lower()


def test_plain_http_is_redirected_to_https(proxied):
    response = requests.get(proxied.http_url + "join", allow_redirects=False, timeout=10)
    assert response.status_code in (301, 308) and response.headers["Location"].startswith("https://localhost")


def test_a_socketio_websocket_is_accepted_through_the_proxy(proxied):
    session = requests.Session()
    session.verify = str(proxied.root_ca)
    # Both loggers on: pytest shows the client's side of the handshake if this ever fails
    # (it failed once in CI with "Unexpected connection error" and nothing else to go on).
    client = socketio.Client(http_session=session, reconnection=False, logger=True, engineio_logger=True)
    try:
        client.connect(proxied.url, transports=["websocket"], wait_timeout=15)  # Origin: https://localhost:PORT
        assert client.transport() == "websocket"
    except socketio.exceptions.ConnectionError as error:
        raise AssertionError(f"{error}; the app printed:\n{proxied.app_output.text()[-4000:]}") from error
    finally:
        client.disconnect()


def test_the_printed_links_use_the_public_address(proxied):
    proxied.app_output.wait_for(r"Students join a class at ", 10)
    text = proxied.app_output.text()
    assert f"Instructor (keep this link to yourself): {proxied.url}instructor#token={TOKEN}" in text
    assert f"Students join a class at {proxied.url}join" in text


def serve_refuses(env: dict[str, str], *args: str) -> str:
    result = subprocess.run([sys.executable, "-m", "web.cli", "serve", "--zk", "127.0.0.1:1", *args], cwd=ROOT,
                            env={**os.environ, **env}, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    return result.stderr


def test_a_malformed_public_url_or_a_short_token_is_refused_with_the_reason():
    assert "is not a public URL like https://lab.example.edu/" in serve_refuses({}, "--public-url", "ftp://lab")
    assert "--public-url" in serve_refuses({"KCLAB_PUBLIC_URL": "https://lab.example.edu/?x=1"})
    assert "KCLAB_INSTRUCTOR_TOKEN is 8 characters; use 16 or more" in serve_refuses(
        {"KCLAB_INSTRUCTOR_TOKEN": "changeme"})
