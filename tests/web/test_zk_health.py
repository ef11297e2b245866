"""What a client is told when ZooKeeper does not answer: a 503 with the reason and when to try
again, never a 500 — whichever of kazoo's ways of saying so the request met. Pure tests."""

from __future__ import annotations

import pytest
from kazoo.exceptions import ConnectionLoss, NoNodeError, SessionExpiredError
from kazoo.retry import KazooRetry, RetryFailedError

from web.zk_health import as_api_error


def _exhausted_read():
    """What an operator's check raises when ZooKeeper stays away past its read's deadline."""
    def dropped():
        raise ConnectionLoss()
    with pytest.raises(RetryFailedError) as raised:
        KazooRetry(max_tries=2, delay=0.001, max_delay=0.001)(dropped)
    return raised.value


@pytest.mark.parametrize("error", [ConnectionLoss(), SessionExpiredError(), _exhausted_read()],
                         ids=["connection-loss", "session-expired", "retry-deadline"])
def test_zookeeper_not_answering_is_a_503_that_says_so_and_when_to_retry(error):
    refusal = as_api_error(error)
    assert refusal is not None and refusal.status == 503
    assert "ZooKeeper did not answer" in refusal.body()["error"] and refusal.headers["Retry-After"] == "5"


def test_an_answer_zookeeper_gave_is_not_an_outage():
    assert as_api_error(NoNodeError()) is None and as_api_error(ValueError("bad")) is None
