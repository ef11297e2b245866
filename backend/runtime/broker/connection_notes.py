"""What a running broker says when its connection to ZooKeeper drops and comes back.

Kept beside the broker rather than in it: it is a small state machine of its own (one
``zk_disconnected`` record, then one ``zk_reconnected`` or nothing when the session is lost),
so that an ensemble losing one server shows as exactly one drop and one return per broker.
"""

from __future__ import annotations

from typing import Callable

from backend.zk.watches import SessionState


BUSY_MACHINE = "(on a busy machine its process waits for the CPU too)"


def unasked_cause(late_s: float, silent: bool = False, expired: bool = False) -> tuple[str, dict | None]:
    """The sentence and the record's ``detail`` that say why a running broker's connection
    dropped (or its session expired) when nobody asked for it. In a class the server is shared:
    a student whose broker drops should learn that it was the server's load — the lab's own,
    when its session loop ran ``late_s`` seconds late (``ZkSession.last_drop``), or
    ZooKeeper's, when the heart-beats went out on time and ZooKeeper did not answer them
    (``silent``) or expired the session all the same
    (``expired``) — not a fault of theirs; and that a real broker's long pause does the same
    (issue 14). Nothing to add for a connection ZooKeeper simply closed (a server stopped)."""
    if late_s:
        return (f" Nobody asked for this: the lab's server, busy with every sandbox it runs, sent this broker's "
                f"heart-beats {late_s:.1f} s late, and a connection that quiet is given up (by the broker after "
                f"two thirds of the session timeout, by ZooKeeper after all of it) — as a real broker's is after a "
                f"long pause (a garbage collection, a swapping machine)."), {"cause": "lab_server_late",
                                                                            "lab_server_late_ms": round(late_s * 1000)}
    if expired:
        return (f" Nobody asked for this, and its heart-beats went out on time: ZooKeeper expired the session all "
                f"the same, so ZooKeeper was away or running late itself {BUSY_MACHINE}."), {"cause": "zookeeper_late"}
    if silent:
        return (f" Nobody asked for this, and its heart-beats went out on time: ZooKeeper did not answer them for "
                f"two thirds of the session timeout — the server is down, cut off from the broker, or running late "
                f"itself {BUSY_MACHINE}."), {"cause": "zookeeper_silent"}
    return "", None


class ConnectionNotes:
    def __init__(self, broker_id: int, emit: Callable[..., None]) -> None:
        """``emit(to_state, note, detail=None)`` writes a broker record."""
        self.broker_id = broker_id
        self._emit = emit
        self._disconnected = False
        """A ``zk_disconnected`` record was emitted; its ``zk_reconnected`` is due."""

    def note(self, state: SessionState, running: bool, timeout_ms: int, late_s: float = 0.0,
             silent: bool = False) -> None:
        """A frozen broker notices nothing (``running`` is false), so it says nothing. ``late_s``
        and ``silent``: why the connection dropped (:func:`unasked_cause`)."""
        broker = self.broker_id
        if state is SessionState.SUSPENDED and running and not self._disconnected:
            self._disconnected = True
            why, detail = unasked_cause(late_s, silent)
            self._emit("zk_disconnected", f"Broker {broker} lost its connection to ZooKeeper. Its session (and "
                                          f"/brokers/ids/{broker}) lives on for up to {timeout_ms} ms while it "
                                          f"reconnects, to another server of the ensemble if there is one.{why}",
                       detail=detail)
        elif state is SessionState.CONNECTED and self._disconnected:
            self._disconnected = False
            self._emit("zk_reconnected", f"Broker {broker} reached ZooKeeper again within its session timeout: "
                                         f"its session and /brokers/ids/{broker} survived.")
        elif state is SessionState.LOST:
            self._disconnected = False
