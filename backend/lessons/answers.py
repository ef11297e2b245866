"""What counts as an answer to a lesson's question, and how one is graded.

One spelling per answer (``canonical``), so "2", 2 and [2] compare as the cluster's 2 does; the
choices a student may pick are the question's own plus :data:`UNSURE`, which is recorded as
such — neither right nor wrong — so a class's statistics can tell "did not know" from "thought
the wrong thing". Pure: the loader, the runner, the web layer and the statistics agree on it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

UNSURE = "I'm not sure"
"""The answer every question also offers. A lesson may not use it as one of its choices."""


def canonical(value: Any) -> str:
    """One spelling per answer, so "2", 2 and [2] compare as the cluster's 2 does."""
    if isinstance(value, (list, tuple)):
        return ",".join(canonical(v) for v in value)
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    return str(value).strip()


@dataclass(frozen=True)
class Grade:
    """One student's answer as the cluster judged it. ``correct`` is ``None`` for :data:`UNSURE`."""

    answer: str
    correct: bool | None
    misconception: str | None


def grade(answer: str, actual: str, misconceptions: dict[str, str] | None = None) -> Grade:
    """``answer`` against the cluster's ``actual`` answer; a wrong choice brings the sentence
    the author attached to it (the misconception it reveals), if any."""
    if answer == UNSURE:
        return Grade(answer, None, None)
    correct = canonical(answer) == actual
    wrong_because = None if correct else (misconceptions or {}).get(canonical(answer))
    return Grade(answer, correct, wrong_because)


def allowed_answer(answer: Any, choices: list[str]) -> str | None:
    """The answer as recorded if it is one of ``choices`` or :data:`UNSURE`, else ``None``."""
    if not isinstance(answer, (str, int)) or isinstance(answer, bool):
        return None
    text = str(answer).strip()
    return text if text == UNSURE or text in choices else None


def matches(record: Any, wanted: dict) -> bool:
    """Does ``record`` (a Record) have every field of ``wanted``, as the cluster spells it?"""
    for name, value in wanted.items():
        found = getattr(record, name)
        if canonical(list(found) if isinstance(found, tuple) else found) != canonical(value):
            return False
    return True
