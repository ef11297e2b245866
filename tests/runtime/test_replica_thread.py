"""When a follower fetches, on the real ZooKeeper: as Kafka's parked fetch, it waits for its
``replica.fetch.wait.max.ms`` or for its leader to append — whichever comes first — and the
leader's own timers (the ISR-shrink check, AlterIsr answers, ISR-change notifications) do not
wait for a follower's wait-max. Every test sets the wait-max to 60 s (the page's largest): what
happens within the tests' timeouts can only have happened through a wake-up."""

from __future__ import annotations

import threading

import pytest

from backend.core.model import TopicPartition
from backend.runtime.broker.replica_thread import ReplicaThread
from backend.runtime.lab_clock import LabClock
from backend.runtime.polling import poll_until

PARKED = {"replica.fetch.wait.max.ms": 60_000, "replica.lag.time.max.ms": 120_000}
T0, U0 = TopicPartition("t", 0), TopicPartition("u", 0)


def _idle(cluster, brokers):
    """Every broker in ``brokers`` has fetched once since it started (its first round) and the
    cluster has settled."""
    poll_until(lambda: all(cluster.brokers[b].data.fetch_rounds for b in brokers), 20, "the first fetches")
    assert cluster.wait_stable()


def test_a_leaders_append_wakes_its_followers_and_no_one_else(start_cluster):
    cluster, recorder = start_cluster(brokers=(0, 1, 2), topics={"t": {"assignment": {0: [0, 1, 2]}}, "u": {"assignment": {0: [2, 0]}}},
                                      config=PARKED)
    _idle(cluster, (0, 1, 2))
    # acks=all is answered only once the followers fetched the messages *and* fetched again (that
    # fetch tells the leader how far they got): two fetches each within the 5 s request time-out
    result = cluster.producer.produce(T0, 3, "all")
    assert result.error == "NONE"
    for follower in (1, 2):
        poll_until(lambda: cluster.brokers[follower].data.logs[T0].log_end_offset == 3, 10,
                   f"follower {follower} to have the messages")
    assert cluster.brokers[0].data.logs[T0].high_watermark == 3
    rounds = cluster.brokers[1].data.fetch_rounds
    # broker 1 does not follow u-0: an append there wakes broker 0 only
    assert cluster.producer.produce(U0, 2, "all").error == "NONE"
    poll_until(lambda: cluster.brokers[0].data.logs[U0].log_end_offset == 2, 10, "follower 0 to have u-0's messages")
    assert cluster.brokers[1].data.fetch_rounds == rounds
    fetched = recorder.of("log", to_state="fetched", broker_id=1)
    assert [r.count for r in fetched if r.topic == "t" and r.count] == [3]


@pytest.mark.parametrize("ibp", ["2.8", "2.6"])
def test_a_leader_drops_a_stalled_follower_without_waiting_for_its_fetch_wait(start_cluster, ibp):
    # Kafka checks for followers to drop every replica.lag.time.max.ms / 2, whatever the fetch wait
    config = {**PARKED, "replica.lag.time.max.ms": 1000, "kclab.isr.change.propagation.interval.ms": 100,
              "inter.broker.protocol.version": ibp}
    cluster, recorder = start_cluster(brokers=(0, 1, 2), topics={"t": {"assignment": {0: [0, 1]}}}, config=config)
    _idle(cluster, (0, 1))
    cluster.brokers[1].data.stalled.add(None)
    poll_until(lambda: recorder.of("isr", to_state="shrunk", outcome="ok"), 20, "the ISR to shrink")
    # 2.8: the controller's AlterIsr answer wakes the leader, which believes the new ISR
    poll_until(lambda: cluster.brokers[0].partitions()[T0].isr == (0,), 10, "the leader to believe the new ISR")
    if ibp == "2.6":  # the leader announces its change after the propagation interval, not its fetch wait
        poll_until(lambda: recorder.of("controller_event", op="IsrChangeNotification", to_state="processed"), 10,
                   "the controller to hear of the ISR change")


def test_an_idle_leaders_side_waits_for_its_deadline_not_for_every_fetch(start_cluster):
    """The leader side (ISR checks, high watermark, purgatory) ran after every fetch: for an idle
    healthy leader, twice a second for nothing. It runs when woken, at its deadline (the lag check
    every ``replica.lag.time.max.ms / 2``), or once a follower may have fallen out of sync."""
    config = {"replica.fetch.wait.max.ms": 200, "replica.lag.time.max.ms": 120_000}
    cluster, recorder = start_cluster(brokers=(0, 1), topics={"t": {"assignment": {0: [0, 1]}}}, config=config)
    _idle(cluster, (0, 1))
    thread, leads = cluster.brokers[0].data._thread, []
    lead = thread._lead
    thread._lead = lambda now: leads.append(now) or lead(now)
    start = thread.fetch_rounds
    poll_until(lambda: thread.fetch_rounds >= start + 10, 20, "ten more fetch rounds of the leader's broker")
    assert len(leads) <= 2, f"the leader side ran {len(leads)} times in 10 idle fetch rounds"
    # and it still drops a follower that stops fetching, on a round soon after its lag passed:
    cluster.set_broker_config("replica.lag.time.max.ms", 1000)  # a changed setting wakes the leader side
    cluster.brokers[1].data.stalled.add(None)
    poll_until(lambda: recorder.of("isr", to_state="shrunk", outcome="ok"), 20, "the ISR to shrink")
    assert len(leads) > 2


def test_a_round_runs_the_leader_side_when_due_or_overdue_and_else_only_fetches():
    """The rule itself, on a thread that is never started: ``_round(fetch_now, lead_now)``."""
    fetches, leads, overdue = [], [], [False]

    def failed(exc):
        raise exc
    thread = ReplicaThread("t", LabClock(), fetch=lambda now: fetches.append(now) and False,
                           lead=lambda now: leads.append(now) or now + 60_000, wait_max_ms=lambda: 500,
                           may_run=lambda: True, gate=threading.Event(), on_error=failed,
                           lead_overdue=lambda now: overdue[0])
    thread._round(fetch_now=True, lead_now=True)
    assert (len(fetches), len(leads)) == (1, 1)
    thread._round(fetch_now=True, lead_now=False)  # an idle fetch round: the leader side is not due
    assert (len(fetches), len(leads)) == (2, 1)
    overdue[0] = True  # a follower may have fallen out of sync since: this round looks
    thread._round(fetch_now=True, lead_now=False)
    assert (len(fetches), len(leads)) == (3, 2)
