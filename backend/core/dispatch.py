"""The one dispatch style of the lab: a table from name to function, built once, checked both ways.

Fault ops, script and teaching steps, controller events: each has a list of names that says
what exists (a vocabulary, the events), and a table that says what carries each one out. A
name without a function, or a function without a name, is a mistake that must not wait for a
student to click the button: :func:`dispatch_table` refuses both when the module is imported.
"""

from __future__ import annotations

from typing import Iterable, Mapping, TypeVar

F = TypeVar("F")


def dispatch_table(names: Iterable[str], functions: Mapping[str, F], what: str) -> dict[str, F]:
    """``{name: functions[name]}`` for exactly ``names``, in their order; ``what`` names the table
    in the error (e.g. "fault ops")."""
    names = list(names)
    missing = [n for n in names if n not in functions]
    extra = sorted(set(functions) - set(names))
    if missing or extra:
        raise ValueError(f"{what}: " + "; ".join(
            part for part in (f"no function for {', '.join(missing)}" if missing else "",
                              f"no such name for {', '.join(extra)}" if extra else "") if part))
    return {name: functions[name] for name in names}
