"""What the page shows, folded from records: the one definition of the browser's view state.

The browser folds the record stream with ``static/js/model.js``; the server folds the same
records with this module to hand a joining page a *snapshot* (the state at some ``seq``),
after which the page folds only the records that follow. This module is the reference: the
page's fold is tested against it on real replay logs, so they cannot drift. Everything here is plain JSON (dict keys are
strings) and the fold is deterministic: the same records always give the same view.

What ZooKeeper holds (``zk`` records from the observer) is the truth for znodes, for the
controller and epoch, and for each partition's leader and ISR; the controller's records add
what exists only in its memory — partition and replica states, its event queue — and why. A lesson's records (``kind: lesson``)
fold into ``view["lesson"]`` — the step, the narration, what is highlighted, the open question
and its graded answers — so a page that reloads or joins a class late shows where the lesson is.
"""

from __future__ import annotations

import copy
import re
from typing import Any, Iterable

from backend.core.records import BROKER_TO_CONTROLLER_REQUESTS
from backend.view.lesson_view import fold_lesson

REQUESTS_KEPT = 60
_STATE_PATH = re.compile(r"^/brokers/topics/([^/]+)/partitions/(\d+)/state$")
_TOPIC_PATH = re.compile(r"^/brokers/topics/([^/]+)$")
_BROKER_PATH = re.compile(r"^/brokers/ids/(\d+)$")
_CONFIG_PATH = re.compile(r"^/config/(topics|brokers)/([^/]+)$")
_SESSION_EXPIRY_ENDS = ("session_expired", "registered", "started", "stopped")
"""A crashed broker's countdown (``session_expiry``: its abandoned session, the deadline) ends
when ZooKeeper expires that session or a new process of the broker runs."""
_BROKER_STATES = {"started": "alive", "registered": "alive", "resumed": "alive", "crashed": "crashed",
                  "paused": "paused", "shutting_down": "shutting_down", "stopped": "stopped"}


def empty_view() -> dict[str, Any]:
    return {"seq": -1, "controller": None, "controller_epoch": None, "brokers": {}, "znodes": {},
            "partitions": {}, "replicas": {}, "events": {}, "requests": {}, "last_fault": None,
            "last_refused": None, "config": {"topics": {}, "brokers": {}}, "lesson": None, "metrics": {}}


def fold(records: Iterable[dict], view: dict | None = None) -> dict[str, Any]:
    """Apply ``records`` (dicts, as on the wire) in order to a copy of ``view``."""
    view = copy.deepcopy(view) if view is not None else empty_view()
    for record in records:
        apply(view, record)
    return view


def apply(view: dict, r: dict) -> None:
    """Apply one record to ``view`` in place (records must come in ``seq`` order)."""
    if r["seq"] <= view["seq"]:
        return  # already folded: a reconnecting page may see a record twice
    view["seq"] = r["seq"]
    handler = _HANDLERS.get(r["kind"])
    if handler is not None:
        handler(view, r)


# -- ZooKeeper: the truth ----------------------------------------------------------------------------
def _zk(view: dict, r: dict) -> None:
    detail = r.get("detail") or {}
    path = detail.get("path") or r["subject"][len("znode:"):]
    if r.get("to_state") == "write_refused":
        # Kept apart from the znode too: a refused delete of a znode already gone has no znode
        # to mark, and a page scrubbed to this seq must still show that ZooKeeper said no.
        view["last_refused"] = {"path": path, "seq": r["seq"], "write": detail.get("write"), "note": r.get("note"),
                                "outcome": r.get("outcome")}
        if path in view["znodes"]:
            view["znodes"][path]["refused_seq"] = r["seq"]
        return
    if r.get("to_state") == "deleted":
        view["znodes"].pop(path, None)
    else:
        view["znodes"][path] = {"data": detail.get("data"), "version": r.get("zk_version"),
                                "ephemeral_owner": detail.get("ephemeral_owner"), "owner_broker": r.get("broker_id"),
                                "czxid": detail.get("czxid"), "zxid": r.get("zxid"), "changed_seq": r["seq"]}
    data = detail.get("data") if r.get("to_state") != "deleted" else None
    if path == "/controller":
        view["controller"] = None if data is None else {"id": data.get("brokerid"), "epoch": view["controller_epoch"]}
    elif path == "/controller_epoch" and data is not None:
        view["controller_epoch"] = data
        if view["controller"] is not None:
            view["controller"]["epoch"] = data
    elif (state := _STATE_PATH.match(path)) and isinstance(data, dict):
        topic, partition = state.groups()
        _partition(view, topic, int(partition)).update(
            leader=data.get("leader"), isr=data.get("isr"), leader_epoch=data.get("leader_epoch"),
            controller_epoch=data.get("controller_epoch"), zk_version=r.get("zk_version"), changed_seq=r["seq"])
    elif topic_path := _TOPIC_PATH.match(path):
        _topic_znode(view, topic_path.group(1), data)
    elif config_path := _CONFIG_PATH.match(path):
        # Dynamic configs as kafka-configs.sh writes them: /config/topics/T, /config/brokers/<default>.
        entity_type, name = config_path.groups()
        config = data.get("config") if isinstance(data, dict) else None
        if isinstance(config, dict):
            view["config"][entity_type][name] = config
        else:
            view["config"][entity_type].pop(name, None)
    elif broker_path := _BROKER_PATH.match(path):
        broker = _broker(view, int(broker_path.group(1)))
        broker["registered"] = data is not None
        if data is not None:
            broker["broker_epoch"] = detail.get("czxid")


def _topic_znode(view: dict, topic: str, data) -> None:
    """/brokers/topics/T: the assignment, with the replicas a reassignment adds and removes."""
    if data is None:
        for key in [k for k, p in view["partitions"].items() if p["topic"] == topic]:
            del view["partitions"][key]
    elif isinstance(data, dict):
        adding, removing = data.get("adding_replicas") or {}, data.get("removing_replicas") or {}
        for p, replicas in (data.get("partitions") or {}).items():
            _partition(view, topic, int(p)).update(replicas=replicas, adding=adding.get(p, []),
                                                   removing=removing.get(p, []))


# -- what the controller and brokers report ---------------------------------------------------------------
def _controller(view: dict, r: dict) -> None:
    to_state, broker = r.get("to_state"), r.get("broker_id")
    if to_state == "elected":
        view["controller"] = {"id": broker, "epoch": r.get("controller_epoch")}
        view["controller_epoch"] = r.get("controller_epoch")
    elif to_state == "resigned" and view["controller"] and view["controller"]["id"] == broker:
        view["controller"]["resigned"] = True


def _partition_record(view: dict, r: dict) -> None:
    if r.get("outcome") not in (None, "ok") or r.get("topic") is None:
        return
    partition = _partition(view, r["topic"], r["partition"])
    partition["state"] = r.get("to_state")
    if r.get("to_state") == "NonExistentPartition":
        view["partitions"].pop(f"{r['topic']}-{r['partition']}", None)
        return
    _leader_fields(partition, r)
    if r.get("note"):
        partition["why"] = r["note"]


def _election_or_isr(view: dict, r: dict) -> None:
    if r.get("outcome") != "ok" or r.get("topic") is None:
        return
    partition = _partition(view, r["topic"], r["partition"])
    if r.get("leader") is not None:
        _leader_fields(partition, r)
    partition["why"] = r.get("note")


def _replica(view: dict, r: dict) -> None:
    if r.get("outcome") != "ok":
        return
    key = f"{r['topic']}-{r['partition']}/{r['broker_id']}"
    if r.get("to_state") == "NonExistentReplica":
        view["replicas"].pop(key, None)
    else:
        view["replicas"][key] = {"state": r.get("to_state"), "broker": r["broker_id"], "topic": r["topic"],
                                 "partition": r["partition"]}


def _broker_record(view: dict, r: dict) -> None:
    broker = _broker(view, r["broker_id"])
    to_state, detail = r.get("to_state"), r.get("detail") or {}
    if to_state == "pause_armed":
        broker["pause_armed"] = detail.get("during")
    elif to_state in _BROKER_STATES:
        broker["state"] = _BROKER_STATES[to_state]
        if to_state in ("paused", "crashed", "stopped"):
            broker["pause_armed"] = None
    if to_state == "registered":
        broker.update(broker_epoch=detail.get("broker_epoch"), session=detail.get("session_id"))
    if to_state in ("session_lost", "session_expired"):
        broker["session_expired_seq"] = r["seq"]
    if to_state == "started" and detail.get("session_timeout_ms") is not None:
        broker["session_timeout_ms"] = detail["session_timeout_ms"]
    if to_state == "crashed" and detail.get("session_expires_ms") is not None:
        broker["session_expiry"] = {"session": detail.get("session_id"), "timeout_ms": detail.get("session_timeout_ms"),
                                    "expires_ms": detail["session_expires_ms"]}
    elif to_state in _SESSION_EXPIRY_ENDS:
        broker["session_expiry"] = None


def _controller_event(view: dict, r: dict) -> None:
    events = view["events"].setdefault(str(r["broker_id"]), {"state": "Idle", "current": None, "queue": []})
    event_id, name = int(r["subject"].rsplit("#", 1)[1]), r.get("op")
    to_state = r.get("to_state")
    events["queue"] = [e for e in events["queue"] if e["id"] != event_id]
    if to_state == "queued":
        events["queue"].append({"id": event_id, "name": name})
    elif to_state == "processing":
        events["current"] = {"id": event_id, "name": name}
        events["state"] = (r.get("detail") or {}).get("controller_state", name)
    elif to_state in ("processed", "failed") and events["current"] and events["current"]["id"] == event_id:
        events["current"], events["state"] = None, "Idle"


def _request(view: dict, r: dict) -> None:
    key = r["subject"][len("request:"):]
    ends = (r.get("broker_id"), r.get("controller_id"))
    sender, receiver = ends if r.get("op") in BROKER_TO_CONTROLLER_REQUESTS else ends[::-1]
    request = view["requests"].setdefault(key, {"name": r.get("op"), "from": sender,
                                                "epoch": r.get("controller_epoch"), "to": receiver,
                                                "sent_seq": r["seq"]})
    request.update(state=r.get("to_state"), outcome=r.get("outcome"), error=(r.get("detail") or {}).get("error"),
                   seq=r["seq"])
    if len(view["requests"]) > REQUESTS_KEPT:
        oldest = min(view["requests"], key=lambda k: view["requests"][k]["seq"])
        del view["requests"][oldest]


def _log(view: dict, r: dict) -> None:
    """The data plane: log end offsets and high watermarks, acknowledged messages lost."""
    if r.get("topic") is None:
        return
    partition = _partition(view, r["topic"], r["partition"])
    detail, to_state = r.get("detail") or {}, r.get("to_state")
    if to_state in ("fetched", "truncated") and r.get("broker_id") is not None:
        key = f"{r['topic']}-{r['partition']}/{r['broker_id']}"
        replica = view["replicas"].setdefault(key, {"state": None, "broker": r["broker_id"], "topic": r["topic"],
                                                    "partition": r["partition"]})
        replica.update(leo=detail.get("leo"), hw=detail.get("hw"))
    elif to_state == "hw":
        partition.update(hw=r.get("offset"), leo=detail.get("leo"))
    elif to_state == "leader_log":
        partition.update(hw=detail.get("hw"), leo=detail.get("leo"))
    elif to_state == "acknowledged" and r.get("offset") is not None:
        partition["leo"] = max(partition.get("leo") or 0, r["offset"] + (r.get("count") or 0))
    elif to_state == "lost":
        partition["lost"] = (partition.get("lost") or 0) + (r.get("count") or 0)


def _fault(view: dict, r: dict) -> None:
    view["last_fault"] = {"op": r.get("op"), "outcome": r.get("outcome"), "note": r.get("note"), "seq": r["seq"]}


# -- helpers -------------------------------------------------------------------------------------------------
def _metric(view: dict, r: dict) -> None:
    """The controller gauges each broker last reported, by Kafka's names (``metric`` records)."""
    view["metrics"].setdefault(str(r["broker_id"]), {})[r["op"]] = r["count"]


def _partition(view: dict, topic: str, partition: int) -> dict:
    return view["partitions"].setdefault(f"{topic}-{partition}", {
        "topic": topic, "partition": partition, "replicas": [], "adding": [], "removing": [], "leader": None,
        "isr": [], "leader_epoch": None, "controller_epoch": None, "zk_version": None, "state": None,
        "why": None, "changed_seq": None, "hw": None, "leo": None, "lost": 0})


def _broker(view: dict, broker_id: int) -> dict:
    return view["brokers"].setdefault(str(broker_id), {
        "id": broker_id, "state": "stopped", "registered": False, "broker_epoch": None, "session": None,
        "pause_armed": None, "session_expired_seq": None, "session_expiry": None,
        "session_timeout_ms": None})


def _leader_fields(partition: dict, r: dict) -> None:
    for field in ("leader", "isr", "leader_epoch", "zk_version"):
        if r.get(field) is not None:
            partition[field] = r[field]
    if r.get("controller_epoch") is not None and r.get("kind") != "isr":
        partition["controller_epoch"] = r["controller_epoch"]
    replicas = (r.get("detail") or {}).get("replicas")
    if replicas:
        partition["replicas"] = replicas


_HANDLERS = {"zk": _zk, "controller": _controller, "partition": _partition_record, "election": _election_or_isr,
             "isr": _election_or_isr, "replica": _replica, "broker": _broker_record,
             "controller_event": _controller_event, "request": _request, "fault": _fault, "log": _log,
             "lesson": fold_lesson, "metric": _metric}
