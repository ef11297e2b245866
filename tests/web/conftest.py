"""An app instance per test module (each with its own Socket.IO server and sandboxes), on the
session's real ZooKeeper, with replay logs in a temporary directory."""

from __future__ import annotations

import pytest

from tests.support import running_app


@pytest.fixture(scope="module")
def app(zk_hosts, tmp_path_factory, request):
    """A module adds or overrides settings with a module-level ``APP_CONFIG`` dict."""
    config = {"MAX_SANDBOXES": 6, **getattr(request.module, "APP_CONFIG", {})}
    with running_app(zk_hosts, tmp_path_factory.mktemp("data"), **config) as app:
        yield app


@pytest.fixture(scope="module")
def client(app):
    return app.test_client()


@pytest.fixture(scope="module")
def sandbox(client):
    """One sandbox shared by the module's read-mostly tests: {id, token}."""
    response = client.post("/api/sandboxes", json={})
    assert response.status_code == 201, response.get_json()
    return response.get_json()
