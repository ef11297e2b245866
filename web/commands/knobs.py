"""``kclab serve``'s settings from the environment (``KCLAB_<NAME>``), each with its bounds.

An operator sets these once for a term (the README lists them); a typo must not come back as a
traceback from a worker that has already started ZooKeeper and Redis, nor as a value the app
cannot live with (``COPY_THREADS=0`` stops every hand-out; ``nan`` compares false with
everything). So every value is checked before anything starts, and a wrong one is refused with
its name, its value and what it may be.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

from backend.runtime.record_bus import HISTORY


@dataclass(frozen=True)
class Knob:
    kind: type
    low: float
    high: float
    what: str
    """What it sets, for the refusal."""


KNOBS: dict[str, Knob] = {
    "MAX_SANDBOXES_PER_CLIENT": Knob(int, 1, 10_000, "sandboxes one computer may run at once"),
    "FAULTS_PER_SECOND": Knob(float, 0, 10_000, "faults one computer may apply a second (0: no limit)"),
    "FAULT_BURST": Knob(int, 1, 100_000, "faults one computer may apply in a burst"),
    "SWEEP_EVERY_S": Knob(float, 1, 86_400, "seconds between looks for sandboxes whose worker is gone"),
    "SWEEP_GRACE_S": Knob(float, 0, 86_400, "seconds such a sandbox's znodes are left before they go"),
    "MAX_CLASSES": Knob(int, 1, 10_000, "classes one worker keeps"),
    "MAX_STUDENTS_PER_CLASS": Knob(int, 1, 10_000, "students in one class"),
    "COPY_THREADS": Knob(int, 1, 64, "a hand-out's copies built at once"),
    "RECORD_HISTORY": Knob(int, 1_000, 1_000_000,
                           f"records a sandbox keeps in memory for pages that catch up (default {HISTORY:,}; "
                           "the sandbox cap counts them)"),
}


def settings_help() -> str:
    """The settings and their bounds, for ``kclab serve --help``."""
    lines = ["settings from the environment (unset: the default; out of bounds: refused at start):"]
    for name, knob in KNOBS.items():
        lines.append(f"  KCLAB_{name} ({knob.low:,}-{knob.high:,}): {knob.what}")
    return "\n".join(lines)


class KnobError(ValueError):
    """A ``KCLAB_`` setting out of its bounds or not a number; the message says which and why."""


def knobs_from(environ: Mapping[str, str]) -> dict[str, int | float]:
    """The app config that the ``KCLAB_`` variables set in ``environ`` ask for (unset or empty
    ones are left to the app's defaults)."""
    config: dict[str, int | float] = {}
    for name, knob in KNOBS.items():
        text = environ.get(f"KCLAB_{name}", "").strip()
        if text:
            config[name] = _parsed(name, knob, text)
    return config


def _parsed(name: str, knob: Knob, text: str) -> int | float:
    kind = "a whole number" if knob.kind is int else "a number"
    try:
        value = knob.kind(text) if len(text) <= 20 else None
    except ValueError:
        value = None
    if value is None or not math.isfinite(value) or not knob.low <= value <= knob.high:
        raise KnobError(f"KCLAB_{name}={text[:40]!r} is not {kind} from {knob.low:,} to {knob.high:,} "
                        f"({knob.what})")
    return value
