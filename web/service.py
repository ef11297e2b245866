"""What a user can do to a sandbox, once: the HTTP API and the socket handlers both call these,
so a click and a ``curl`` get the same checks, the same answers and the same records.

Every refusal is an :class:`ApiError` with an HTTP status and a sentence a student can act on:
400 the request itself is malformed, 403 the sandbox is someone else's, 404 no such sandbox,
409 the fault does not apply to the cluster as it is now, 503 the server is full, ZooKeeper is
unreachable or the worker has fallen behind (``web/load_guard.py``).
"""

from __future__ import annotations

import hmac
import re
from typing import Any, Callable

from backend.runtime.fault_checks import BrokerCheck
from backend.runtime.faults import FAULTS, apply_fault
from backend.faultscript.cluster_spec import ClusterSpec, check_cluster
from backend.faultscript.schema import op_schema
from backend.faultscript.types import NO_DEFAULT
from backend.faultscript.vocabulary import FAULT_VOCABULARY, SCRIPT_VOCABULARY, check_step
from web.fairness import SandboxBusy
from web.sandbox import Sandbox
from web.sandboxes import SandboxLimit, SandboxManager

DEFAULT_CLUSTER = {"brokers": [0, 1, 2], "topics": {"t": {"partitions": 3, "replication_factor": 3}}}
MAX_RECORDS_PER_PAGE = 5000
MAX_QUOTED = 80  # characters of a refused value an error message repeats


class ApiError(Exception):
    def __init__(self, status: int, message: str, headers: dict[str, str] | None = None, **extra: Any) -> None:
        super().__init__(message)
        self.status, self.message, self.extra, self.headers = status, message, extra, headers or {}

    def body(self) -> dict[str, Any]:
        return {"ok": False, "error": self.message, **self.extra}


def quoted(value: Any) -> str:
    """``repr(value)`` for an error message, cut to :data:`MAX_QUOTED` characters: the sender
    sees what was read, but a 60 KB value echoed whole would bury the sentence saying what is
    allowed (and cost the server the bytes twice)."""
    text = repr(value)
    return text if len(text) <= MAX_QUOTED else f"{text[:MAX_QUOTED]}… ({len(text)} characters)"


def parse_cluster(body: Any) -> ClusterSpec:
    """A sandbox's cluster, written like a script's ``cluster:`` section (same checks)."""
    if body is None:
        body = {}
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object like {\"cluster\": {\"brokers\": [0, 1, 2]}}")
    unknown = sorted(set(body) - {"cluster"})
    if unknown:
        raise ApiError(400, f"unknown field(s) {', '.join(unknown)}; the body may only hold 'cluster'")
    if not isinstance(body.get("cluster") or {}, dict):
        raise ApiError(400, "cluster must be an object like {\"brokers\": [0, 1, 2]}")
    cluster = {**DEFAULT_CLUSTER, **(body.get("cluster") or {})}
    if "brokers" in (body.get("cluster") or {}) and "topics" not in body["cluster"]:
        cluster["topics"] = {}
    spec, _, issues = check_cluster(cluster, sandbox=True)
    if issues or spec is None:
        raise ApiError(400, "; ".join(message for _, message in issues))
    if spec.zookeeper_servers != 1:
        raise ApiError(400, "a sandbox runs on the app's ZooKeeper; zookeeper.servers cannot be set here")
    return spec


def create_sandbox(manager: SandboxManager, body: Any, mode: str = "sandbox", **header: Any) -> Sandbox:
    spec = parse_cluster(body)
    manager.busy_check()
    try:
        return manager.create(spec, mode=mode, **header)
    except SandboxLimit as exc:
        raise refused(exc) from None


def refused(limit: SandboxLimit) -> ApiError:
    """No place for a sandbox, as the client sees it: how many run, and when to try again."""
    return ApiError(limit.status, str(limit), headers={"Retry-After": str(limit.retry_after)},
                    running=limit.running, retry_after=limit.retry_after)


def sandbox_for(manager: SandboxManager, sandbox_id: Any, token: Any) -> Sandbox:
    sandbox = manager.get(sandbox_id) if isinstance(sandbox_id, str) else None
    if sandbox is None:
        raise ApiError(404, f"there is no sandbox {sandbox_id!r} (it may have been reclaimed after being idle)")
    if not isinstance(token, str) or not hmac.compare_digest(token, sandbox.token):
        raise ApiError(403, "this sandbox belongs to someone else: the token is missing or wrong")
    sandbox.touch()
    return sandbox


def apply(manager: SandboxManager, sandbox_id: Any, token: Any, body: Any, source: str = "user") -> dict[str, Any]:
    sandbox = sandbox_for(manager, sandbox_id, token)
    if not isinstance(body, dict):
        raise ApiError(400, "a fault must be a JSON object like {\"op\": \"crash_broker\", \"broker\": 1}")
    manager.health_check()
    if source == "user":  # the instructor's demo is one fault every few seconds that the class watches
        manager.busy_check()
    op = body.get("op")
    if isinstance(op, str) and op in SCRIPT_VOCABULARY and op not in FAULT_VOCABULARY:
        raise ApiError(400, f"{op} is a script step, not something to do to a cluster")
    checked = check_step(body, FAULT_VOCABULARY)
    if checked.issues:
        raise ApiError(400, "; ".join(message for _, message in checked.issues))
    try:
        with sandbox.faults.turn():  # one at a time per sandbox: a flood holds few threads (web/fairness.py)
            result = apply_fault(sandbox.cluster, op, checked.args, source=source, prechecked=True)
    except SandboxBusy as exc:
        raise ApiError(429, str(exc), headers={"Retry-After": "1"}, retry_after=1) from None
    seq = result.record.seq if result.record else None
    if not result.ok:
        raise ApiError(409, result.message, seq=seq)
    return {"ok": True, "message": result.message, "seq": seq}


def records_page(since: Any, limit: Any, read: Callable[[int, int], list], end: int) -> dict:
    """One page of records from seq ``since`` (``read(since, limit)``), as the sandbox and the
    replay records APIs answer it: ``next`` is where to ask from next (``end`` when none came)."""
    since = int_param(since, "since", 0)
    limit = min(int_param(limit, "limit", MAX_RECORDS_PER_PAGE), MAX_RECORDS_PER_PAGE)
    records = [r.to_dict() for r in read(since, limit)]
    return {"records": records, "next": records[-1]["seq"] + 1 if records else max(since, end)}


def records_since(manager: SandboxManager, sandbox_id: Any, token: Any, since: Any, limit: Any = None) -> dict:
    bus = sandbox_for(manager, sandbox_id, token).bus
    return records_page(since, limit, bus.since, bus.next_seq)


def vocabulary() -> dict[str, Any]:
    """Every op with its fields, for the page's palette and for API clients; a fault on one
    broker also says in which of the page's broker states it applies (``applies``), so the
    broker menu disables it with the server's own rule and words."""
    return {"ops": [{"name": op.name, "doc": op.doc, "kind": op.kind, "schema": op_schema(op),
                     "fields": [{"name": f.name, "type": f.type.label, "doc": f.doc, "required": f.required,
                                 "default": None if f.default is NO_DEFAULT else f.default}
                                for f in op.fields],
                     **_applies(op.name)}
                    for op in SCRIPT_VOCABULARY.values()]}


def _applies(op: str) -> dict[str, Any]:
    check = FAULTS[op].check if op in FAULTS else None
    if not isinstance(check, BrokerCheck):
        return {}
    # A broker's status in the runtime is the page's broker state, but for running (alive).
    return {"applies": {"verb": check.verb, "broker_states": [{"running": "alive"}.get(s, s) for s in check.statuses]}}


def int_param(value: Any, name: str, default: int) -> int:
    """A query parameter that must be a whole number >= 0 (``default`` when absent); anything
    else is a 400 that names the parameter and the value, as every API error does."""
    if value is None or value == "":
        return default
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise ApiError(400, f"{name} must be a whole number, got {quoted(value)}") from None
    if number < 0:
        raise ApiError(400, f"{name} must not be negative, got {number}")
    return number


_JSON_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"')


def json_depth(data: bytes) -> int:
    """How deep objects and arrays nest in ``data`` (brackets inside strings do not count); a
    linear scan, so a hostile body costs no more than its length (at most MAX_CONTENT_LENGTH)."""
    depth = deepest = 0
    for char in _JSON_STRINGS.sub(b"", data):
        if char in b"[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in b"]}":
            depth -= 1
    return deepest
