"""The partitions' rules: a live leader in the ISR, ISR within the replicas (``leader_in_isr``),
and the data plane's (``acked_not_lost``, ``hw_le_leo``, ``min_isr_ack``).

A leader whose broker died is *waiting*, not broken, until the active controller has processed
a BrokerChange (or a failover) that began after the death — the moment Kafka repairs it. The
dead leaders are counted per broker (``memo.orphans``), so a failover of many partitions costs
one violation per broker, not one per partition.
"""

from __future__ import annotations

from backend.view.violations import (brokers_text, close_violation, event_violation, is_int, open_violation,
                                     ranges)

REPAIR_EVENTS = ("BrokerChange", "Startup", "Reelect", "RegisterBrokerAndReelect")


def on_partition_record(c: dict, view: dict, r: dict) -> None:
    if r.get("topic") is None or r.get("partition") is None:
        return
    key = f"{r['topic']}-{r['partition']}"
    if r["kind"] == "election" and r.get("outcome") == "ok" and r.get("to_state") == "elected":
        c["memo"]["elections"][key] = {"seq": r["seq"], "unclean": r.get("election") == "offline_unclean",
                                       "leader": r.get("leader")}
    check_partition(c, view, r, key)


def check_partition(c: dict, view: dict, r: dict, key: str) -> None:
    p = view["partitions"].get(key)
    problem, orphaned_by = None, None
    if p is not None and _online(p):
        leader, isr = p["leader"], p["isr"] or []
        # During a reassignment the controller's records already name the target replicas while
        # the leaving ones are still in the ISR (Kafka's steps B2-B4): they are in ``removing``.
        replicas = (p["replicas"] or []) + [b for b in p["removing"] or [] if b not in (p["replicas"] or [])]
        if leader not in isr:
            problem = f"{key}'s leader {leader} is not in its ISR {brokers_text(isr)}."
        elif replicas and any(b not in replicas for b in isr):
            problem = f"{key}'s ISR {brokers_text(isr)} holds brokers outside its replicas {brokers_text(replicas)}."
        if not _live(view, leader):
            orphaned_by = leader
    _set_orphan(c, r, key, orphaned_by)
    if problem is None:
        close_violation(c, "leader_in_isr", f"p:{key}", r)
    else:
        open_violation(c, "leader_in_isr", f"p:{key}", r, problem, "broken", f"partition:{key}")


def check_topic(c: dict, view: dict, r: dict, topic: str) -> None:
    """Replicas changed, or the topic is gone: look at every partition it had or has."""
    of_topic = lambda key: key.rsplit("-", 1)[0] == topic  # noqa: E731
    keys = [k for k in view["partitions"] if of_topic(k)] + [k for k in c["memo"]["orphans"] if of_topic(k)]
    keys += [v["key"][2:] for v in c["rules"]["leader_in_isr"]["open"]
             if v["key"].startswith("p:") and of_topic(v["key"][2:])]
    for key in dict.fromkeys(keys):
        check_partition(c, view, r, key)


def on_broker(c: dict, view: dict, r: dict) -> None:
    """A crash or stop is the first sign of a death (the observer sees the registration go a
    little later, maybe after the controller started reacting): the death dates from here."""
    if r.get("to_state") in ("crashed", "stopped") and r.get("broker_id") is not None:
        c["memo"]["dead"].setdefault(str(r["broker_id"]), r["seq"])


def liveness(c: dict, view: dict, r: dict, broker: int, alive: bool) -> None:
    if alive:
        c["memo"]["dead"].pop(str(broker), None)
    else:
        c["memo"]["dead"].setdefault(str(broker), r["seq"])
    for key in [k for k, p in view["partitions"].items() if p["leader"] == broker]:
        check_partition(c, view, r, key)


def _set_orphan(c: dict, r: dict, key: str, leader: int | None) -> None:
    orphans, counts = c["memo"]["orphans"], c["memo"]["orphan_count"]
    old = orphans.get(key)
    if old == leader:
        return
    if old is not None:
        del orphans[key]
        counts[str(old)] -= 1
        if counts[str(old)] == 0:
            del counts[str(old)]
        _update_dead(c, r, old)
    if leader is not None:
        orphans[key] = leader
        counts[str(leader)] = counts.get(str(leader), 0) + 1
        _update_dead(c, r, leader)


def _update_dead(c: dict, r: dict, broker: int) -> None:
    key, count = f"dead:{broker}", c["memo"]["orphan_count"].get(str(broker), 0)
    if count == 0:
        close_violation(c, "leader_in_isr", key, r)
        return
    since = c["memo"]["dead"].get(str(broker))
    waiting = c["memo"]["repaired"] <= (since if since is not None else -1)
    text = f"Broker {broker} is not alive, yet it still leads {count} online partition(s): "
    text += ("the controller has not handled the change yet." if waiting
             else "the controller has handled a broker change since, and did not move them.")
    open_violation(c, "leader_in_isr", key, r, text, "waiting" if waiting else "broken", f"broker:{broker}", since)


def on_controller_event(c: dict, view: dict, r: dict) -> None:
    """A dead leader waits for the controller: repaired once a BrokerChange (or failover) that
    started after the death has been processed by the active controller."""
    memo, to_state = c["memo"], r.get("to_state")
    if r.get("op") not in REPAIR_EVENTS:
        return
    if to_state == "processing":
        memo["started"][r["subject"]] = r["seq"]
        return
    started = memo["started"].pop(r["subject"], None)
    controller = view.get("controller") or {}
    if to_state == "processed" and started is not None and controller.get("id") == r.get("broker_id"):
        memo["repaired"] = max(memo["repaired"], started)
        for broker in sorted(int(b) for b in memo["orphan_count"]):
            _update_dead(c, r, broker)


def on_log(c: dict, view: dict, r: dict) -> None:
    to_state, detail = r.get("to_state"), r.get("detail") or {}
    key = f"{r.get('topic')}-{r.get('partition')}"
    if to_state == "lost":
        _lost(c, r, key, detail)
    elif to_state in ("fetched", "truncated", "hw", "leader_log"):
        hw, leo = detail.get("hw"), detail.get("leo")
        if is_int(hw) and is_int(leo) and hw > leo:
            who = "Replica" if to_state in ("fetched", "truncated") else "Leader"
            event_violation(c, "hw_le_leo", r, f"{who} {r.get('broker_id')} of {key} has high watermark {hw} above "
                                               f"its log end offset {leo}.", r["subject"])
    elif to_state == "acknowledged" and r.get("acks") == "all":
        isr, needed = r.get("isr"), detail.get("min_insync_replicas")
        if isinstance(isr, list) and is_int(needed) and len(isr) < needed:
            event_violation(c, "min_isr_ack", r,
                            f"Leader {r.get('leader')} acknowledged {r.get('count')} message(s) of {key} with acks=all "
                            f"while its ISR {brokers_text(isr)} had fewer than min.insync.replicas = {needed}.",
                            f"partition:{key}")


def _lost(c: dict, r: dict, key: str, detail: dict) -> None:
    offsets = detail.get("offsets")
    if not (isinstance(offsets, list) and offsets and all(is_int(o) for o in offsets)):
        first, count = r.get("offset"), r.get("count")
        offsets = list(range(first, first + count)) if is_int(first) and is_int(count) else []
    acks, election = r.get("acks"), c["memo"]["elections"].get(key)
    unclean = election is not None and election["unclean"]
    promise = acks == "all" and not unclean
    text = f"{len(offsets)} acknowledged message(s) of {key} lost: offset(s) {ranges(offsets)} (acks={acks}). "
    if unclean:
        text += f"The unclean election at #{election['seq']} made broker {election['leader']} leader without them."
    elif promise:
        text += "Kafka promises acks=all messages survive while unclean election is off: this must never happen."
    else:
        text += f"acks={acks} waits for the leader only, and the new leader {r.get('leader')} never had them."
    event_violation(c, "acked_not_lost", r, text, f"partition:{key}",
                    election["seq"] if election else r.get("cause_seq"), offsets=offsets[:100], acks=acks,
                    promise=promise)


def _online(p: dict) -> bool:
    leader = p["leader"]
    if not is_int(leader) or leader < 0:
        return False
    return p["state"] is None or p["state"] == "OnlinePartition"


def _live(view: dict, broker: int) -> bool:
    return bool((view["brokers"].get(str(broker)) or {}).get("registered"))
