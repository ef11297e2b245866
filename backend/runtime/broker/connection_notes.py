"""What a running broker says when its connection to ZooKeeper drops and comes back.

Kept beside the broker rather than in it: it is a small state machine of its own (one
``zk_disconnected`` record, then one ``zk_reconnected`` or nothing when the session is lost),
so that an ensemble losing one server shows as exactly one drop and one return per broker.
"""

from __future__ import annotations

from typing import Callable

from backend.zk.watches import SessionState


class ConnectionNotes:
    def __init__(self, broker_id: int, emit: Callable[[str, str], None]) -> None:
        """``emit(to_state, note)`` writes a broker record."""
        self.broker_id = broker_id
        self._emit = emit
        self._disconnected = False
        """A ``zk_disconnected`` record was emitted; its ``zk_reconnected`` is due."""

    def note(self, state: SessionState, running: bool, timeout_ms: int) -> None:
        """A frozen broker notices nothing (``running`` is false), so it says nothing."""
        broker = self.broker_id
        if state is SessionState.SUSPENDED and running and not self._disconnected:
            self._disconnected = True
            self._emit("zk_disconnected", f"Broker {broker} lost its connection to ZooKeeper. Its session (and "
                                          f"/brokers/ids/{broker}) lives on for up to {timeout_ms} ms while it "
                                          f"reconnects, to another server of the ensemble if there is one.")
        elif state is SessionState.CONNECTED and self._disconnected:
            self._disconnected = False
            self._emit("zk_reconnected", f"Broker {broker} reached ZooKeeper again within its session timeout: "
                                         f"its session and /brokers/ids/{broker} survived.")
        elif state is SessionState.LOST:
            self._disconnected = False
