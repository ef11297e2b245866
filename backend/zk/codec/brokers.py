"""``/brokers/ids/<id>`` (§1.1): a broker's registration, its endpoints and its epoch (the czxid).
"""

from __future__ import annotations

import re
from typing import Any

from backend.core.model import BrokerInfo
from backend.zk import paths

from .format import ZnodeFormatError, dumps, int_field, json_object, now_ms, parse_json, required_key, show, str_field


# -- /brokers/ids/<id> (§1.1) -------------------------------------------------------------------
_ENDPOINT = re.compile(r"^([A-Za-z0-9_-]+)://\[?([0-9A-Za-z\-%._:]*)\]?:([0-9]+)$")


def _connection_string(listener: str, host: str, port: int) -> str:
    return f"{listener}://[{host}]:{port}" if ":" in host else f"{listener}://{host}:{port}"


def encode_broker(host: str, port: int, timestamp_ms: int | None = None, rack: str | None = None,
                  jmx_port: int = -1, version: int = 4) -> bytes:
    """A broker registration with one PLAINTEXT listener. v4 is what Kafka writes with
    ``inter.broker.protocol.version`` < 2.7; v5 (IBP >= 2.7, 2.8's default) adds ``features``."""
    if version not in (4, 5):
        raise ValueError(f"broker registration version must be 4 or 5, got {version}")
    info: dict[str, Any] = {
        "listener_security_protocol_map": {"PLAINTEXT": "PLAINTEXT"},
        "endpoints": [_connection_string("PLAINTEXT", host, port)],
        "jmx_port": jmx_port, "host": host,
        "timestamp": str(now_ms() if timestamp_ms is None else timestamp_ms),
        "port": port, "version": version,
    }
    if rack is not None:
        info["rack"] = rack
    if version >= 5:
        info["features"] = {}
    return dumps(info)


def decode_broker(broker_id: int, data: bytes | None, czxid: int, where: str | None = None) -> BrokerInfo:
    """``BrokerIdZNode.decode`` plus the broker epoch, which is the znode's czxid (KIP-380)."""
    where = where or paths.broker_path(broker_id)
    obj = json_object(parse_json(data, where), where, "a broker registration")
    version = int_field(required_key(obj, "version", where), where, "version", minimum=1)
    int_field(required_key(obj, "jmx_port", where), where, "jmx_port")
    if version == 1:
        host = str_field(required_key(obj, "host", where), where, "host")
        port = int_field(required_key(obj, "port", where), where, "port", minimum=0)
    else:
        endpoints = required_key(obj, "endpoints", where)
        if not isinstance(endpoints, list) or not endpoints or not all(isinstance(e, str) for e in endpoints):
            raise ZnodeFormatError(where, f"endpoints must be a non-empty list of 'LISTENER://host:port' "
                                          f"strings, got {show(endpoints)}")
        parsed = []
        for i, endpoint in enumerate(endpoints):
            match = _ENDPOINT.match(endpoint)
            if not match:
                raise ZnodeFormatError(where, f"endpoints[{i}] must look like 'PLAINTEXT://host:9092', got {endpoint!r}")
            parsed.append((match.group(1), match.group(2), int(match.group(3))))
        _, host, port = next((e for e in parsed if e[0] == "PLAINTEXT"), parsed[0])
    rack = obj.get("rack")
    if rack is not None and not isinstance(rack, str):
        raise ZnodeFormatError(where, f"rack must be a string, got {show(rack)}")
    return BrokerInfo(id=broker_id, epoch=czxid, host=host, port=port, rack=rack)
