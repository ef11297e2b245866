"""The page's whole view: the cluster fold plus the rules checked on it, record by record.

What a joining page gets as its snapshot (``web/sandboxes.py``) and what ``static/js/model.js``
folds in the browser: ``backend.view.cluster_view`` first (what the cluster looks like after the
record), then ``backend.view.invariants`` (which rules hold after it). ``kclab check``, a
script's ``expect: {rules: …}`` and the statistics' violations use the same fold.
"""

from __future__ import annotations

import copy
from typing import Any, Iterable

from backend.view import cluster_view
from backend.view import invariants


def empty_view() -> dict[str, Any]:
    view = cluster_view.empty_view()
    view["invariants"] = invariants.empty_checks()
    return view


def apply(view: dict, r: dict) -> None:
    """Apply one record (a dict, as on the wire) to ``view`` in place, in ``seq`` order."""
    if r["seq"] <= view["seq"]:
        return  # already folded: a reconnecting page may see a record twice
    cluster_view.apply(view, r)
    invariants.check(view, r)


def fold(records: Iterable[dict], view: dict | None = None) -> dict[str, Any]:
    """Apply ``records`` in order to a copy of ``view`` (default: the empty view)."""
    view = copy.deepcopy(view) if view is not None else empty_view()
    for record in records:
        apply(view, record)
    return view


def broken_rules(records: Iterable[dict]) -> dict[str, int]:
    """``{rule: violations}`` of one session's records (in seq order), for the rules that broke:
    the statistics count with the panel's own fold, so there is no second definition to drift."""
    return {rule: v["count"] for rule, v in invariants.verdicts(fold(records)).items() if v["count"]}
