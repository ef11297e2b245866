"""Does the cluster look as an ``expect`` step says? A partial match, one readable line per difference.

An ``expect`` names only what a lesson is about (the new leader of ``t-0``, say), so only what
it names is compared: other partitions, other fields, other keys of a znode's JSON are ignored.
Everything it does name must be there: a partition, replica or znode that is missing is a
mismatch, not a pass. Lists (an ISR) compare in order, because Kafka's order means something
(the first live ISR member in assignment order is the next leader).

The cluster view the runtime passes as ``actual`` (every key optional; a missing section counts
as empty)::

    {"controller": 0 | None,                 # None: no /controller
     "controller_epoch": 3 | None,
     "brokers": {0: "alive", 1: "dead"},     # alive | dead | paused | shutting_down
     "partitions": {"t-0": {"leader": 2, "isr": [2, 0], "leader_epoch": 1,
                            "state": "OnlinePartition", ...}},
     "replicas": {"t-0/1": "OnlineReplica"},
     "znodes": {"/controller": b'{"version":1,"brokerid":0,...}', "/gone": None},  # None: absent
     "rules": {"leader_in_isr": {"status": "holds", "count": 0}}}   # backend.view.invariants.verdicts

States may be given as ``PartitionState``/``ReplicaState`` members or their names; znode data as
bytes or text (decoded as JSON when it is JSON, else compared as text; empty data is ``b""``,
not ``None``).
"""

from __future__ import annotations

import json
from typing import Any, Mapping

from backend.zk.znode_decoder import decode_znode, plain

_MISSING = object()
_ORDER = ("controller", "controller_epoch", "brokers", "partitions", "replicas", "znodes")


def mismatches(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> list[str]:
    """Every way ``actual`` differs from ``expected`` (the args of an expect step); empty: it matches."""
    out: list[str] = []
    for key in ("controller", "controller_epoch"):
        if key in expected:
            _compare(key, expected[key], actual.get(key), out)
    for broker, state in expected.get("brokers", {}).items():
        _compare(f"brokers.{broker}", state, _lookup(actual.get("brokers"), broker), out, "no such broker")
    for key, fields in expected.get("partitions", {}).items():
        found = _lookup(actual.get("partitions"), key)
        if found is _MISSING:
            out.append(f"partitions.{key}: expected {_partition_text(fields)}, found no such partition")
            continue
        for name, value in fields.items():
            _compare(f"partitions.{key}.{name}", value, _lookup(found, name), out, "nothing")
    for key, state in expected.get("replicas", {}).items():
        _compare(f"replicas.{key}", state, _lookup(actual.get("replicas"), key), out, "no such replica")
    for path, want in expected.get("znodes", {}).items():
        _znode(path, want, _lookup(actual.get("znodes"), path), out)
    for rule, want in expected.get("rules", {}).items():
        _rule(rule, want, _lookup(actual.get("rules"), rule), out)
    return out


def describe_expectation(args: Mapping[str, Any]) -> str:
    """An expect step in one line, e.g. ``controller 0; t-0 leader 2, isr [2, 0] (within 5000 ms)``."""
    parts = []
    if "controller" in args:
        parts.append("no controller" if args["controller"] is None else f"controller {args['controller']}")
    if "controller_epoch" in args:
        parts.append(f"controller epoch {args['controller_epoch']}")
    parts += [f"broker {broker} {state}" for broker, state in args.get("brokers", {}).items()]
    parts += [f"{key} {_partition_text(fields)}" for key, fields in args.get("partitions", {}).items()]
    parts += [f"replica {key} {state}" for key, state in args.get("replicas", {}).items()]
    parts += [f"rule {rule} {verdict}" for rule, verdict in args.get("rules", {}).items()]
    for path, want in args.get("znodes", {}).items():
        if _exists_only(want):
            parts.append(f"znode {path} {'exists' if want['exists'] else 'absent'}")
        else:
            parts.append(f"znode {path} = {_show(want)}")
    text = "; ".join(parts) or "nothing"
    return f"{text} (within {args['within_ms']} ms)" if "within_ms" in args else text


def _partition_text(fields: Mapping[str, Any]) -> str:
    return ", ".join(f"{name} {_show(value)}" for name, value in fields.items())


def _lookup(container: Any, key: Any) -> Any:
    """``container[key]``, also finding ``1`` as ``"1"`` and back (JSON turns keys into text)."""
    if not isinstance(container, Mapping):
        return _MISSING
    for candidate in (key, str(key), int(key) if isinstance(key, str) and key.isdigit() else key):
        if candidate in container:
            return container[candidate]
    return _MISSING


def _same(expected: Any, found: Any) -> bool:
    """Equality in which ``true`` is not ``1`` (Python's ``True == 1`` would hide a wrong type)."""
    if isinstance(expected, bool) or isinstance(found, bool):
        return type(expected) is type(found) and expected == found
    if isinstance(expected, list) and isinstance(found, list):
        return len(expected) == len(found) and all(map(_same, expected, found))
    if isinstance(expected, dict) and isinstance(found, dict):
        return expected.keys() == found.keys() and all(_same(expected[k], found[k]) for k in expected)
    return expected == found


def _compare(path: str, expected: Any, found: Any, out: list[str], missing: str = "none") -> None:
    if found is _MISSING:
        out.append(f"{path}: expected {_show(expected)}, found {missing}")
        return
    found = plain(found)
    if not _same(expected, found):
        out.append(f"{path}: expected {_show(expected)}, found {_show(found)}")


_RULE_TESTS = {"held": lambda v: v["count"] == 0, "broke": lambda v: v["count"] > 0,
               "holds": lambda v: v["status"] == "holds", "broken": lambda v: v["status"] == "broken"}


def _rule(rule: str, want: str, verdict: Any, out: list[str]) -> None:
    """``held``/``broke``: over the whole run so far; ``holds``/``broken``: at this moment."""
    if verdict is _MISSING:
        out.append(f"rules.{rule}: expected {want}, found no such rule")
    elif not _RULE_TESTS[want](verdict):
        out.append(f"rules.{rule}: expected {want}, found {verdict['status']} now, "
                   f"{verdict['count']} violation(s) so far")


def _exists_only(want: Any) -> bool:
    return isinstance(want, Mapping) and set(want) == {"exists"}


def _znode(path: str, want: Any, raw: Any, out: list[str]) -> None:
    where = f"znodes.{path}"
    absent = raw is _MISSING or raw is None
    if _exists_only(want):
        if want["exists"] and absent:
            out.append(f"{where}: expected the znode to exist, found no such znode")
        elif not want["exists"] and not absent:
            out.append(f"{where}: expected no such znode, found {_show(decode_znode(raw)[0])}")
    elif absent:
        out.append(f"{where}: expected {_show(want)}, found no such znode")
    else:
        data, text = decode_znode(raw)
        if not (isinstance(want, str) and want == text):  # "3" matches the text 3 as well as JSON 3
            _match(where, want, data, out)


def _match(path: str, expected: Any, found: Any, out: list[str]) -> None:
    """Partial match of znode data: an expected mapping names only the keys that matter."""
    if isinstance(expected, Mapping) and isinstance(found, Mapping):
        for key, value in expected.items():
            if key in found:
                _match(f"{path}.{key}", value, found[key], out)
            else:
                out.append(f"{path}.{key}: expected {_show(value)}, found nothing")
    elif not _same(plain(expected), found):
        out.append(f"{path}: expected {_show(expected)}, found {_show(found)}")


def _show(value: Any) -> str:
    value = plain(value)
    if value is None:
        return "none"
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, list, dict)):
        return json.dumps(value, default=str)
    return str(value)
