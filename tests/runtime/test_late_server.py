"""A broker whose connection the lab's own server was too late to keep says so, and one whose
ZooKeeper stopped answering says that instead (issue 14: in a class, the server is shared, and a
student's broker can drop for nothing the student did).

The real ZooKeeper; the process's session loop held still for longer than a connection's read
time-out, as a server busy with a class's sandboxes holds it; or a broker's cable blackholed,
as a ZooKeeper that stopped answering looks to a broker whose loop is on time."""

from __future__ import annotations

import threading
import time

from backend.runtime.faults import apply_fault
from backend.zk import paths
from backend.zk.io_loop import SessionLoop
from tests.support import wait_until

STALL_S = 3.5
"""Past the read time-out (2.67 s at the lab's 4 s session timeout) plus the ping's 1.33 s: every
broker's connection times out at the loop's next turn, each by the loop's lateness alone."""

LONG_STALL_S = 6.0
"""Past the 4 s session timeout with room to spare: ZooKeeper's session tracker expires on its
ticks (0.5 s here), so a session can live up to a tick beyond its timeout."""


class _Stall:
    """A timer of the loop's that holds it still. Stalled in a timer, the loop reads its sockets at
    its next turn before any broker's timer is due again (the timers due are those due when the
    turn began), so it meets ZooKeeper's hang-ups before its own time-outs."""

    timer_token = None

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def on_timer(self) -> None:
        threading.Event().wait(self.seconds)


def _lab_caused(record) -> bool:
    detail = record.detail or {}
    return detail.get("cause") == "lab_server_late" and "Nobody asked for this" in record.note


def test_a_connection_dropped_because_the_lab_ran_late_names_the_lab_as_the_cause(start_cluster):
    cluster, recorder = start_cluster(brokers=(0, 1))
    released = threading.Event()
    SessionLoop.shared().call(lambda: released.wait(STALL_S))  # the loop stalls, as under a class's load
    dropped = wait_until(lambda: (lambda r: r if len({x.broker_id for x in r}) == 2 else None)(
        recorder.of("broker", to_state="zk_disconnected")), 20, "both brokers to tell of their dropped connection")
    for record in dropped:
        assert _lab_caused(record), record.note
        late_ms = record.detail["lab_server_late_ms"]
        assert 500 <= late_ms <= STALL_S * 1000 + 3000, late_ms  # a stall's lateness (plus a ping's wait at most)
        assert f"{late_ms / 1000:.1f} s late" in record.note
    # An expiry that followed the same drop is told the same cause.
    wait_until(lambda: all(recorder.of("broker", broker_id=b, to_state="zk_reconnected")
                           or recorder.of("broker", broker_id=b, to_state="session_lost") for b in (0, 1)),
               20, "each broker to be back, or to learn that its session expired")
    for record in recorder.of("broker", to_state="session_lost"):
        assert _lab_caused(record), record.note


def test_sessions_zookeeper_expired_because_the_lab_ran_late_name_the_lab_as_the_cause(start_cluster):
    """A stall past the session timeout: ZooKeeper expires both sessions and hangs up before the
    loop runs again, so the connections end by ZooKeeper's hang-up, not by their own time-out —
    and the expiry is still the lab's, because nothing was sent for all that time (without
    ``drop_cause.sent_too_late`` these records name nothing: checked)."""
    cluster, recorder = start_cluster(brokers=(0, 1))
    loop = SessionLoop.shared()
    loop.call(lambda: loop.set_timer(_Stall(LONG_STALL_S), time.monotonic()))
    lost = wait_until(lambda: (lambda r: r if len({x.broker_id for x in r}) == 2 else None)(
        recorder.of("broker", to_state="session_lost")), 30, "both brokers to learn that their sessions expired")
    for record in lost + recorder.of("broker", to_state="zk_disconnected"):
        assert _lab_caused(record), record.note
        assert record.detail["lab_server_late_ms"] >= 2000, record.detail


def test_an_expiry_that_zookeeper_was_asked_for_does_not_blame_the_lab(start_cluster):
    """The ``expire_session`` fault: ZooKeeper ends the session and tells the broker at once; the
    loop was on time, so neither record names the lab (a note that blamed the lab for every drop fails here)."""
    cluster, recorder = start_cluster(brokers=(0, 1))
    assert apply_fault(cluster, "expire_session", {"broker": 1}).ok
    lost = wait_until(lambda: recorder.of("broker", broker_id=1, to_state="session_lost"), 15,
                      "broker 1 to learn that its session expired")
    told = lost + recorder.of("broker", broker_id=1, to_state="zk_disconnected")
    assert not any(record.detail and "cause" in record.detail for record in told), [r.note for r in told]
    assert not any("Nobody asked" in record.note for record in told), [r.note for r in told]


def test_a_zookeeper_that_stops_answering_is_told_apart_from_a_late_lab(start_cluster, zk_client):
    """A running broker cut off from ZooKeeper (its cable blackholed: a network cut, not a pause):
    the loop pings on time and hears nothing, the connection times out on its own clock, and the
    record says the heart-beats went out on time (``zookeeper_silent``); ZooKeeper then expires the
    session, and the loss the broker learns when the cable is back says the same (``zookeeper_late``)."""
    cluster, recorder = start_cluster(brokers=(0, 1))
    broker = cluster.brokers[1]
    broker.cable.pause()
    [dropped] = wait_until(lambda: recorder.of("broker", broker_id=1, to_state="zk_disconnected"), 15,
                           "broker 1 to time out its silent connection")
    assert (dropped.detail or {}).get("cause") == "zookeeper_silent" and "went out on time" in dropped.note, dropped
    wait_until(lambda: zk_client.exists(paths.broker_path(1)) is None, 15, "ZooKeeper to expire broker 1's session")
    broker.cable.resume()
    [lost] = wait_until(lambda: recorder.of("broker", broker_id=1, to_state="session_lost"), 15,
                        "broker 1 to learn that its session expired")
    assert (lost.detail or {}).get("cause") == "zookeeper_late" and "went out on time" in lost.note, lost
    assert not any(_lab_caused(r) for r in recorder.of("broker", broker_id=1))
