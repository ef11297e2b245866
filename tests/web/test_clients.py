"""Fair shares per client: a client is its address — the peer's, or the one trusted reverse
proxies name in X-Forwarded-For (never a header anybody could send)."""

from __future__ import annotations

import pytest

from tests.support import running_app
from web.clients import FaultRate
from web.service import ApiError

ONE_BROKER = {"cluster": {"brokers": [0]}}


def one_each(zk_hosts, tmp_path, **config):
    """An app that gives each client one sandbox."""
    return running_app(zk_hosts, tmp_path, START_BROADCASTER=False, MAX_SANDBOXES_PER_CLIENT=1, **config)


@pytest.mark.parametrize("proxies,separate", [(1, True), (0, False)])
def test_behind_a_trusted_proxy_each_forwarded_address_gets_its_own_share(zk_hosts, tmp_path, proxies, separate):
    with one_each(zk_hosts, tmp_path, TRUSTED_PROXIES=proxies) as app:
        client = app.test_client()
        post = lambda who: client.post("/api/sandboxes", json=ONE_BROKER,  # noqa: E731
                                       headers={"X-Forwarded-For": who})
        assert post("10.0.0.1").status_code == 201
        assert post("10.0.0.1").status_code == 429
        other = post("10.0.0.2")
        assert other.status_code == (201 if separate else 429), other.get_json()


def test_the_fault_rate_refuses_beyond_the_burst_and_refills_with_time():
    now = [100.0]
    rate = FaultRate(per_second=2, burst=3, clock=lambda: now[0])
    for _ in range(3):
        rate.take("a")
    with pytest.raises(ApiError) as refused:
        rate.take("a")
    assert refused.value.status == 429 and refused.value.headers["Retry-After"] == "1"
    rate.take("b")  # another client's share is its own
    now[0] += 0.5  # one more fault's worth
    rate.take("a")
    with pytest.raises(ApiError):
        rate.take("a")
