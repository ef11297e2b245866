"""Reading a znode's JSON strictly, with errors that name the znode and the fault.

Decoders are stricter than Kafka's where Kafka would fail later or silently misbehave, because
our znodes are edited by students with ``zkCli.sh``: malformed data raises
:class:`ZnodeFormatError` saying which znode and what is wrong ("partitions.0 must be a list of
broker ids"), which the runtime turns into a record.
"""

from __future__ import annotations

import json
import time
from typing import Any



class ZnodeFormatError(ValueError):
    """A znode's data is not what Kafka writes there. ``path`` names the znode (or its kind)."""

    def __init__(self, path: str, reason: str):
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


def dumps(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def show(value: Any) -> str:
    try:
        text = json.dumps(value)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def parse_json(data: bytes | None, where: str) -> Any:
    """The JSON value in ``data``, or None when the znode has no data (Kafka's null)."""
    if not data:
        return None
    try:
        text = bytes(data).decode("utf-8")
    except UnicodeDecodeError as error:
        raise ZnodeFormatError(where, f"data is not UTF-8 text (byte {error.start})") from None
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as error:
        raise ZnodeFormatError(where, f"data is not valid JSON ({error.msg} at line {error.lineno} "
                                      f"column {error.colno}): {text[:60]!r}") from None
    except ValueError as error:
        raise ZnodeFormatError(where, f"data is not valid JSON ({error})") from None


def json_object(value: Any, where: str, field: str = "data") -> dict:
    if not isinstance(value, dict):
        raise ZnodeFormatError(where, f"{field} must be a JSON object, got {show(value)}")
    return value


def required_key(obj: dict, key: str, where: str, prefix: str = "") -> Any:
    if key not in obj:
        raise ZnodeFormatError(where, f"missing field {prefix}{key!r}")
    return obj[key]


def int_field(value: Any, where: str, field: str, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ZnodeFormatError(where, f"{field} must be an integer, got {show(value)}")
    if minimum is not None and value < minimum:
        raise ZnodeFormatError(where, f"{field} must be >= {minimum}, got {value}")
    return value


def str_field(value: Any, where: str, field: str) -> str:
    if not isinstance(value, str) or not value:
        raise ZnodeFormatError(where, f"{field} must be a non-empty string, got {show(value)}")
    return value


def check_version(obj: dict, where: str, allowed: tuple[Any, ...]) -> None:
    """Kafka's readers ignore ``version``; a zkCli user may omit it, but a wrong one is a typo."""
    if "version" in obj and (isinstance(obj["version"], bool) or obj["version"] not in allowed):
        raise ZnodeFormatError(where, f"unsupported version {show(obj['version'])}; "
                                      f"Kafka 2.8 writes {' or '.join(map(json.dumps, allowed))}")


def broker_ids(value: Any, where: str, field: str, allow_empty: bool = False) -> tuple[int, ...]:
    if not isinstance(value, list) or any(isinstance(b, bool) or not isinstance(b, int) or b < 0 for b in value):
        raise ZnodeFormatError(where, f"{field} must be a list of broker ids, got {show(value)}")
    if not value and not allow_empty:
        raise ZnodeFormatError(where, f"{field} must not be empty")
    seen: set[int] = set()
    for broker in value:
        if broker in seen:
            raise ZnodeFormatError(where, f"{field} lists broker {broker} twice: {show(value)}")
        seen.add(broker)
    return tuple(value)
