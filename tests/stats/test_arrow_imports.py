"""pyarrow looks up ``dateutil.relativedelta`` each time it turns a Python value into an Arrow
scalar (``pc.equal(column, 3)``, ``pa.scalar``): with the module missing, every call made Python
search ``sys.path`` for it again — thousands of searches in a warm Run, half its aggregation's
time (docs/performance.md, issue 16). With python-dateutil installed the first lookup is kept."""

from __future__ import annotations

import sys

import pyarrow as pa
import pyarrow.compute as pc


class _Searches:
    """A finder that only notes which modules Python had to look for."""

    def __init__(self) -> None:
        self.names: list[str] = []

    def find_spec(self, name, path=None, target=None):
        self.names.append(name)
        return None


def test_converting_python_values_to_arrow_scalars_searches_for_no_module():
    column = pa.array([1, 2, 3])
    pc.equal(column, 2)  # whatever pyarrow imports on its first conversion, it imports here
    searches = _Searches()
    sys.meta_path.insert(0, searches)
    try:
        for value in range(20):
            pc.equal(column, value)
            pa.scalar(value)
    finally:
        sys.meta_path.remove(searches)
    assert searches.names == []
