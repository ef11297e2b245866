"""Fair shares: who a request comes from, and how much each one may take.

A class shares one server, so no single client — a student's runaway script, or a curious one —
may take every sandbox or flood the clusters with faults. A client is the request's address:
the peer's own, or — with ``TRUSTED_PROXIES`` = N (``kclab serve --trusted-proxies N``) — the one
the N reverse proxies in front of the app name in ``X-Forwarded-For`` (Werkzeug's ``ProxyFix``).
Nothing is trusted by default, so a client cannot claim another address by sending the header.
"""

from __future__ import annotations

import math
import threading
import time

from flask import has_request_context, request

from web.service import ApiError


def current_client() -> str | None:
    """The address of the request being handled (HTTP or Socket.IO), ``None`` outside one
    (a class's copies for its students are made by the server, not by a client)."""
    return request.remote_addr if has_request_context() else None


class FaultRate:
    """A token bucket per client: ``per_second`` faults, bursts of up to ``burst``."""

    def __init__(self, per_second: float, burst: int, clock=time.monotonic) -> None:
        self.per_second, self.burst, self.clock = per_second, burst, clock
        self._buckets: dict[str, tuple[float, float]] = {}  # client -> (tokens, when)
        self._lock = threading.Lock()

    def take(self, client: str | None) -> None:
        """One fault for ``client``, or a 429 that says when to try again (``Retry-After``)."""
        if client is None or self.per_second <= 0:
            return
        now = self.clock()
        with self._lock:
            tokens, when = self._buckets.get(client, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - when) * self.per_second)
            if tokens < 1:
                self._buckets[client] = (tokens, now)
                wait = math.ceil((1 - tokens) / self.per_second)
                raise ApiError(429, f"too many actions: at most {self.per_second:g} a second from one computer; "
                                    f"try again in {wait} s", retry_after=wait, headers={"Retry-After": str(wait)})
            self._buckets[client] = (tokens - 1, now)
            if len(self._buckets) > 10_000:  # forget the longest-idle clients: bounded memory
                for key in sorted(self._buckets, key=lambda k: self._buckets[k][1])[:5_000]:
                    del self._buckets[key]
