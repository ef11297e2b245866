"""Two worker processes of one app, as two machines would run them: each a real ``kclab serve
--workers 1`` on its own port, sharing a real Redis (started here by the app's own launcher) and
the session's real ZooKeeper, so that a test picks which process each client talks to."""

from __future__ import annotations

import pytest
import redis

from tests.hardening.server import serve
from web.scaleout.redis_server import RedisServer

CAP = 6


@pytest.fixture(scope="module")
def redis_server():
    with RedisServer() as server:
        yield server


@pytest.fixture(scope="module")
def shared(redis_server):
    return redis.Redis.from_url(redis_server.url, decode_responses=True)


@pytest.fixture(scope="module")
def pair(zk_hosts, redis_server, tmp_path_factory):
    """Worker A and worker B (``Served``), one data directory as on a shared volume."""
    data = tmp_path_factory.mktemp("scaleout")
    args = ("--zk", zk_hosts, "--redis", redis_server.url, "--workers", "1", "--max-sandboxes", str(CAP))
    first = serve(data, *args, MAX_SANDBOXES_PER_CLIENT="40", FAULTS_PER_SECOND="1000")
    try:
        second = serve(data, *args, MAX_SANDBOXES_PER_CLIENT="40", FAULTS_PER_SECOND="1000")
    except BaseException:
        first.stop()
        raise
    yield first, second
    for worker in (first, second):
        worker.stop()
