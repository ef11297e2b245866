"""Bookkeeping of the rules' violations, shared by the checks (``backend.view.invariants``).

A *state* violation is opened under a key (``p:t-0``, ``dead:1``) while it lasts, updated in place
(``waiting`` may become ``broken``: that counts) and closed when repaired; an *event* violation
stays open, since what happened cannot be undone. Each rule keeps its newest ``KEEP`` open and
closed violations and the ``count`` of every one that broke it. Also the few ways the checks
put things in words, so the page's port (``static/js/invariants/violations.js``) says the same.
"""

from __future__ import annotations

from typing import Any

KEEP = 10


def open_violation(c: dict, rule_id: str, key: str, r: dict, text: str, status: str, subject: str | None,
                   cause_seq: int | None = None) -> None:
    rule = c["rules"][rule_id]
    found = next((v for v in rule["open"] if v["key"] == key), None)
    if found is None:
        rule["open"].append({"key": key, "seq": r["seq"], "cause_seq": cause_seq, "subject": subject,
                             "status": status, "text": text})
        rule["count"] += status == "broken"
    else:
        rule["count"] += found["status"] == "waiting" and status == "broken"
        found.update(status=status, text=text)
    _settle(rule)


def close_violation(c: dict, rule_id: str, key: str, r: dict) -> None:
    rule = c["rules"][rule_id]
    found = next((v for v in rule["open"] if v["key"] == key), None)
    if found is None:
        return
    rule["open"].remove(found)
    rule["closed"] = (rule["closed"] + [{**found, "until": r["seq"]}])[-KEEP:]
    _settle(rule)


def event_violation(c: dict, rule_id: str, r: dict, text: str, subject: str | None, cause_seq: int | None = None,
                    **extra: Any) -> None:
    """A violation that stays: what happened cannot be undone (the newest KEEP are kept)."""
    rule = c["rules"][rule_id]
    cause = cause_seq if cause_seq is not None else r.get("cause_seq")
    rule["open"] = (rule["open"] + [{"key": f"#{r['seq']}", "seq": r["seq"], "cause_seq": cause, "subject": subject,
                                     "status": "broken", "text": text, **extra}])[-KEEP:]
    rule["count"] += 1
    _settle(rule)


def _settle(rule: dict) -> None:
    states = {v["status"] for v in rule["open"]}
    rule["status"] = "broken" if "broken" in states else "waiting" if "waiting" in states else "holds"


def is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def brokers_text(brokers: list) -> str:
    return "[" + ", ".join(str(b) for b in brokers) + "]"


def and_text(brokers: list) -> str:
    return ", ".join(str(b) for b in brokers[:-1]) + f" and {brokers[-1]}"


def ranges(offsets: list[int]) -> str:
    """``[2, 3, 4, 7]`` as ``2–4, 7``: how a student reads a run of offsets."""
    if not offsets:
        return "none"
    out, start = [], offsets[0]
    for previous, current in zip(offsets, offsets[1:] + [None]):
        if current != previous + 1:
            out.append(f"{start}" if start == previous else f"{start}–{previous}")
            start = current
    return ", ".join(out)
