"""The rules (``backend.view.rules``) checked on every record: a fold over the page's view.

``check(view, record)`` runs right after the cluster fold (``backend.view.cluster_view``) has
applied the record, so it reads what the page shows — partitions' leader, ISR, replicas and
state, which brokers are registered, the controller — and keeps a little memory of its own in
``view["invariants"]["memo"]`` (the epoch each broker applied, who believes it is controller,
when a broker died). Because it is part of the view, a snapshot carries it, a scrub rebuilds it
and a class follows it, exactly like every other panel. ``static/js/invariants-model.js`` is
its line-by-line port; ``tests/js/test_invariants_contract.py`` checks both give the same state
after every record of real logs, including logs where each rule breaks.

Two kinds of violation. A *state* violation (a leader outside its ISR, two controllers with
the current epoch) is open while it lasts and closed when it is repaired. An *event* violation
(an epoch that went down, a stale request applied, messages lost) stays open: what happened
cannot be undone. A dead leader is ``waiting`` — not yet broken — until the active controller
has finished a BrokerChange (or a failover) that started after the broker died: that is the
moment Kafka's controller repairs it, and the panel shows who knew what, when.

Every violation names the record that broke the rule (``seq``) and its cause (``cause_seq``);
``text`` says it in words. Per rule: ``status`` (holds / waiting / broken), ``count`` (how
many violations broke it so far), the newest open and recently closed ones (``violations``)
and ``info`` (the zombies of ``one_controller``, the stale requests refused). The checks live
by concern in ``controller_rules`` and ``partition_rules``; this module dispatches by kind.
"""

from __future__ import annotations

import re
from typing import Any

from backend.view import controller_rules as ctl
from backend.view import partition_rules as parts
from backend.view.rules import RULE_IDS

_STATE_PATH = re.compile(r"^/brokers/topics/([^/]+)/partitions/(\d+)/state$")
_TOPIC_PATH = re.compile(r"^/brokers/topics/([^/]+)$")
_BROKER_PATH = re.compile(r"^/brokers/ids/(\d+)$")


def empty_checks() -> dict[str, Any]:
    return {"rules": {rule: {"status": "holds", "count": 0, "open": [], "closed": [], "info": None}
                      for rule in RULE_IDS},
            "memo": {"epoch": None, "zk_epoch": None, "believers": {}, "leader_epochs": {}, "applied": {},
                     "dead": {}, "orphans": {}, "orphan_count": {}, "started": {}, "repaired": -1,
                     "elections": {}}}


def check(view: dict, r: dict) -> None:
    """Check the rules after ``r`` (already folded into ``view`` by the cluster fold)."""
    if "invariants" not in view:
        view["invariants"] = empty_checks()
    handler = _HANDLERS.get(r["kind"])
    if handler is not None:
        handler(view["invariants"], view, r)


def verdicts(view: dict) -> dict[str, dict[str, Any]]:
    """Each rule's ``status`` now and ``count`` of violations so far (``expect``, ``kclab check``)."""
    rules = (view.get("invariants") or empty_checks())["rules"]
    return {rule: {"status": rules[rule]["status"], "count": rules[rule]["count"]} for rule in RULE_IDS}


def first_broken_since(view: dict, seq: int) -> str | None:
    """The rule broken first by a record at or after ``seq`` (a lesson's "which rule will this
    fault break?"), or ``None``. Ties go to the catalogue's order."""
    rules = (view.get("invariants") or empty_checks())["rules"]
    first: tuple[int, str] | None = None
    for rule in RULE_IDS:
        for v in rules[rule]["open"] + rules[rule]["closed"]:
            if v["status"] == "broken" and v["seq"] >= seq and (first is None or v["seq"] < first[0]):
                first = (v["seq"], rule)
    return first[1] if first else None


def _zk(c: dict, view: dict, r: dict) -> None:
    detail = r.get("detail") or {}
    path = detail.get("path") or r["subject"][len("znode:"):]
    if r.get("to_state") == "write_refused":
        if r.get("controller_id") is None:
            return
        if r.get("outcome") == "rejected_stale_epoch":
            ctl.fence(c, r["controller_id"], r, f"ZooKeeper refused its write of {path}")
        elif detail.get("error") == "SESSIONEXPIRED":  # Kafka 2.8's usual way: its session is gone
            ctl.fence(c, r["controller_id"], r, f"its session had expired: its write of {path} never reached ZooKeeper")
        return
    data = detail.get("data") if r.get("to_state") != "deleted" else None
    if path == "/controller_epoch":
        ctl.controller_epoch(c, r, data)
    elif state := _STATE_PATH.match(path):
        key = f"{state.group(1)}-{state.group(2)}"
        ctl.leader_epoch(c, r, key, data)
        parts.check_partition(c, view, r, key)
    elif topic := _TOPIC_PATH.match(path):
        parts.check_topic(c, view, r, topic.group(1))
    elif broker := _BROKER_PATH.match(path):
        parts.liveness(c, view, r, int(broker.group(1)), data is not None)


def _broker(c: dict, view: dict, r: dict) -> None:
    ctl.on_broker(c, view, r)
    parts.on_broker(c, view, r)


_HANDLERS = {"zk": _zk, "controller": ctl.on_controller, "broker": _broker, "request": ctl.on_request,
             "controller_event": parts.on_controller_event, "partition": parts.on_partition_record,
             "election": parts.on_partition_record, "isr": parts.on_partition_record, "log": parts.on_log}
