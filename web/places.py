"""Places for sandboxes: the machine's cap and each client's share, counted in one step.

A place is taken before a sandbox is built (building takes seconds, so requests arriving
together cannot pass a limit) and given back when it closes or fails to build. With one worker
process the places live here (:class:`LocalPlaces`); with several they live in Redis
(``web/scaleout/places.py``), so the cap counts every worker's sandboxes. Both refuse with
:class:`SandboxLimit`, which says how many run, why the cap is what it is, and when to retry.
"""

from __future__ import annotations

import threading

from web.capacity import Capacity

RETRY_AFTER_S = 60
"""When a full server is worth asking again: a student closes a sandbox or an idle one is
reclaimed (the broadcaster reaps every 30 s) at any moment, so a minute, not the idle timeout."""


class SandboxLimit(Exception):
    """No room for another sandbox: on this machine (503), or for this client (429)."""

    def __init__(self, message: str, status: int = 503, retry_after: int = RETRY_AFTER_S,
                 running: int | None = None) -> None:
        super().__init__(message)
        self.status, self.retry_after, self.running = status, retry_after, running


def full(running: int, capacity: Capacity) -> SandboxLimit:
    return SandboxLimit(f"this server runs {running} sandboxes, as many as it holds ({capacity.why}); "
                        f"try again in {RETRY_AFTER_S} s, when one has closed or been reclaimed", running=running)


def client_full(held: int, per_client: int) -> SandboxLimit:
    return SandboxLimit(f"you already have {held} sandboxes on this server (at most {per_client} each); close one "
                        f"or wait until an idle one is reclaimed", status=429, running=held)


class LocalPlaces:
    """One process's places: session id -> client (``None``: the server itself, e.g. a class's copies)."""

    def __init__(self, capacity: Capacity, per_client: int | None) -> None:
        self.capacity, self.per_client = capacity, per_client
        self._held: dict[str, str | None] = {}
        self._lock = threading.Lock()

    def take(self, session_id: str, client: str | None) -> None:
        with self._lock:
            if len(self._held) >= self.capacity.sandboxes:
                raise full(len(self._held), self.capacity)
            if client is not None and self.per_client is not None:
                held = sum(1 for c in self._held.values() if c == client)
                if held >= self.per_client:
                    raise client_full(held, self.per_client)
            self._held[session_id] = client

    def give_back(self, session_id: str) -> None:
        with self._lock:
            self._held.pop(session_id, None)

    def running(self) -> int:
        with self._lock:
            return len(self._held)
