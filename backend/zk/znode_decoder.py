"""A znode's bytes as a value: its JSON if it is JSON, else its text.

How ``expect`` steps, a lesson's answers and the ZooKeeper view (the observer's records) all
read a znode — one reading, so what the page shows is what a lesson compares. Pure: no kazoo.
"""

from __future__ import annotations

import json
from enum import Enum
from typing import Any, Mapping


def plain(value: Any) -> Any:
    """States as their names, tuples as lists: the runtime may hand us either."""
    if isinstance(value, Enum):
        return value.name
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    return value


def decode_znode(raw: Any) -> tuple[Any, str]:
    """``(data, text)``: the znode's JSON if it is JSON, else its text (``b""`` is ``""``).
    What ``expect``, a lesson's answers and the ZooKeeper view all read a znode's bytes as."""
    if isinstance(raw, (bytes, bytearray)):
        raw = bytes(raw).decode("utf-8", errors="replace")
    if not isinstance(raw, str):
        return plain(raw), json.dumps(plain(raw))  # already decoded by the runtime
    try:
        return json.loads(raw), raw
    except ValueError:
        return raw, raw


def describe_data(data: bytes | None):
    """Znode bytes as the browser shows them: parsed JSON, else text, else None."""
    return decode_znode(data)[0] if data else None
