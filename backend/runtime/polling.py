"""Waiting for a condition that no watch announces (a record, an idle queue, a broker's status)."""

from __future__ import annotations

import time
from typing import Any, Callable


def poll_until(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.02) -> Any:
    """``predicate()``'s first truthy value, polled every ``interval`` s; ``TimeoutError``
    naming ``what`` after ``timeout`` s. (Watches would be exact, but what we wait on — a
    record, an idle queue — is not a znode.)"""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(interval)
