"""One real ``kclab serve`` per module (see ``server.py``)."""

from __future__ import annotations

import pytest

from tests.hardening.server import serve


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    server = serve(tmp_path_factory.mktemp("served"), MAX_SANDBOXES_PER_CLIENT="40", FAULTS_PER_SECOND="1000")
    yield server
    server.stop()
