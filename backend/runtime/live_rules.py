"""The rules (``backend/view``) checked live beside a run, for ``expect: {rules: …}`` and a
lesson's "which rule will this fault break?".

The page's fold, applied to every record as it leaves the record bus (the bus calls sinks in
``seq`` order under its lock, so this sees every record once, in order). Only a run whose
script asks about rules keeps one: it costs a second fold of every record.
"""

from __future__ import annotations

import threading
from typing import Any

from backend.core.records import Record
from backend.runtime.record_bus import RecordBus
from backend.view import invariants, page


class LiveRules:
    def __init__(self, bus: RecordBus) -> None:
        self._view = page.empty_view()
        self._lock = threading.Lock()
        bus.subscribe(self._sink, replay_from=0)

    def _sink(self, records: list[Record]) -> None:
        with self._lock:
            for record in records:
                page.apply(self._view, record.to_dict())

    def verdicts(self) -> dict[str, dict[str, Any]]:
        with self._lock:
            return invariants.verdicts(self._view)

    def first_broken_since(self, seq: int) -> str | None:
        with self._lock:
            return invariants.first_broken_since(self._view, seq)
