"""``/controller`` and ``/controller_epoch`` (§2): who is controller, and the epoch that fences the others.
"""

from __future__ import annotations

import re

from backend.zk import paths

from .format import ZnodeFormatError, check_version, dumps, int_field, json_object, now_ms, parse_json, required_key


# -- /controller and /controller_epoch (§2) -----------------------------------------------------
def encode_controller(broker_id: int, timestamp_ms: int | None = None) -> bytes:
    stamp = now_ms() if timestamp_ms is None else timestamp_ms
    return dumps({"version": 1, "brokerid": broker_id, "timestamp": str(stamp)})


def decode_controller(data: bytes | None, where: str = paths.CONTROLLER) -> int | None:
    """The controller's broker id (v1, or 3.4+'s v2); None for an empty znode."""
    value = parse_json(data, where)
    if value is None:
        return None
    obj = json_object(value, where)
    check_version(obj, where, (1, 2))
    return int_field(required_key(obj, "brokerid", where), where, "brokerid", minimum=0)


def encode_controller_epoch(epoch: int) -> bytes:
    return str(epoch).encode("ascii")


_EPOCH = re.compile(rb"^(0|[1-9][0-9]*)$")


def decode_controller_epoch(data: bytes | None, where: str = paths.CONTROLLER_EPOCH) -> int:
    if not data or not _EPOCH.match(bytes(data)):
        raise ZnodeFormatError(where, f"must be a plain ASCII integer such as 1 (not JSON), got {bytes(data or b'')[:40]!r}")
    return int(data)
