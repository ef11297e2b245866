"""The rules, checked on real logs and on the corners a real run rarely reaches.

Scenario names follow what a student sees: the zombie named and then fenced, the unclean
election breaking the data rule at the loss and naming the messages, a dead leader waiting for
the controller rather than flashing red. The verdict at a seq is the fold of the records up to
it, which is what a page scrubbed back there shows.
"""

from __future__ import annotations

from backend.view.invariants import verdicts
from backend.view.page import fold
from backend.view.rules import RULE_IDS
from tests.view.breaking import BREAKS, read_records


def states_by_seq(records: list[dict]) -> list[tuple[dict, dict]]:
    view, out = None, []
    for record in records:
        view = fold([record], view)
        out.append((record, view["invariants"]))
    return out


def test_the_zombie_is_named_then_fenced_and_no_rule_breaks(protocol_logs):
    records = read_records(protocol_logs["zombie_controller_fenced"])
    states = states_by_seq(records)
    zombies = [(r, c["rules"]["one_controller"]["info"]["zombies"]) for r, c in states
               if (c["rules"]["one_controller"]["info"] or {}).get("zombies")]
    assert zombies, "broker 0 is a zombie once broker 1 is elected with epoch 2"
    first_record, [first] = zombies[0]
    assert (first["broker"], first["epoch"], first["fenced"]) == (0, 1, None)
    assert "still believes it is the controller, with epoch 1" in first["text"] and "Not fenced yet" in first["text"]
    epoch_2 = next(r for r in records if (r["kind"] == "controller" and r.get("to_state") == "elected"
                                          and r.get("controller_epoch") == 2)
                   or (r["subject"] == "znode:/controller_epoch" and (r.get("detail") or {}).get("data") == 2))
    assert first_record["seq"] == epoch_2["seq"], "named as soon as epoch 2 is known (election or ZooKeeper)"
    fenced = [z for _, zs in zombies for z in zs if z["fenced"] is not None]
    assert fenced and "harmless" in fenced[0]["text"]
    fence = next(r for r in records if r["seq"] == fenced[0]["fenced"])
    assert (fence.get("outcome") == "rejected_stale_epoch" or fence.get("to_state") == "fenced"
            or (fence.get("detail") or {}).get("error") == "SESSIONEXPIRED")
    final = states[-1][1]["rules"]
    assert final["one_controller"]["info"]["zombies"] == [], "the zombie resigned"
    assert final["no_stale_apply"]["info"]["refused"] >= 2, "both brokers bounced its epoch-1 LeaderAndIsr"
    assert all(c["rules"][rule]["count"] == 0 for _, c in states for rule in RULE_IDS)


def test_the_zombies_refused_write_names_it(protocol_logs):
    refused = [r for r in read_records(protocol_logs["zombie_controller_fenced"])
               if r.get("to_state") == "write_refused"]
    assert refused and all((r["controller_id"], r["controller_epoch"]) == (0, 1) for r in refused)


def test_the_unclean_election_breaks_the_data_rule_at_the_loss_and_names_the_messages(protocol_logs):
    records = read_records(protocol_logs["unclean_election_loses_acks1"])
    states = states_by_seq(records)
    lost = next(r for r in records if r.get("to_state") == "lost")
    unclean = next(r for r in records if r.get("election") == "offline_unclean")
    before = next(c for r, c in states if r["seq"] == lost["seq"] - 1)["rules"]["acked_not_lost"]
    at = next(c for r, c in states if r["seq"] == lost["seq"])["rules"]["acked_not_lost"]
    assert (before["status"], before["count"]) == ("holds", 0)
    assert (at["status"], at["count"]) == ("broken", 1)
    [violation] = at["open"]
    assert violation["seq"] == lost["seq"] and violation["cause_seq"] == unclean["seq"]
    assert violation["offsets"] == [2, 3, 4, 5, 6] and violation["acks"] == "1" and violation["promise"] is False
    assert "offset(s) 2–6 (acks=1)" in violation["text"]
    assert f"unclean election at #{unclean['seq']}" in violation["text"]


def test_a_dead_leader_waits_for_the_controller_and_never_breaks_the_rule(protocol_logs):
    records = read_records(protocol_logs["unclean_election_loses_acks1"])
    states = [c["rules"]["leader_in_isr"] for _, c in states_by_seq(records)]
    waiting = [s for s in states if s["status"] == "waiting"]
    assert waiting and "Broker 0 is not alive" in waiting[0]["open"][0]["text"]
    assert all(s["count"] == 0 for s in states) and states[-1]["status"] == "holds"
    assert states[-1]["closed"][0]["key"] == "dead:0"


def test_a_controller_that_forgets_a_dead_leader_breaks_the_rule(protocol_logs):
    _, mutate, rule = BREAKS["leader_left_behind"]
    log = protocol_logs[BREAKS["leader_left_behind"][0]]
    states = [c["rules"][rule] for _, c in states_by_seq(mutate(read_records(log)))]
    statuses = [s["status"] for s in states]
    assert "waiting" in statuses and "broken" in statuses
    assert statuses.index("waiting") < statuses.index("broken"), "waiting first, broken once the controller acted"
    broken = next(s for s in states if s["status"] == "broken")["open"][0]
    assert "has handled a broker change since" in broken["text"] and broken["cause_seq"] is not None


def _r(seq, kind, subject, **fields):
    return {"v": 1, "session_id": "s", "seq": seq, "ts_ms": 0, "kind": kind, "subject": subject, **fields}


def _state(seq, partition, leader, isr, leader_epoch, to_state="changed"):
    path = f"/brokers/topics/t/partitions/{partition}/state"
    return _r(seq, "zk", f"znode:{path}", to_state=to_state,
              detail={"path": path, "data": {"leader": leader, "isr": isr, "leader_epoch": leader_epoch,
                                             "controller_epoch": 1}})


def test_a_zombie_whose_session_expired_is_fenced_by_its_refused_write_and_only_such_a_write_fences():
    """Kafka 2.8's zombie: frozen past its session, its next write fails with SESSIONEXPIRED —
    harmless from then on. A write refused for another reason (a conflict) fences nobody."""
    def zombie_after(refusal):
        records = [_r(1, "controller", "broker:0", to_state="elected", broker_id=0, controller_epoch=1),
                   _r(2, "controller", "broker:1", to_state="elected", broker_id=1, controller_epoch=2),
                   _r(3, "zk", "znode:/admin/preferred_replica_election", to_state="write_refused",
                      controller_id=0, controller_epoch=1, **refusal)]
        [zombie] = zombies_of(fold(records))
        return zombie
    expired = zombie_after({"outcome": "error", "detail": {"path": "/admin/preferred_replica_election",
                                                           "error": "SESSIONEXPIRED"}})
    assert expired["fenced"] == 3 and "its session had expired" in expired["text"] and "harmless" in expired["text"]
    conflict = zombie_after({"outcome": "error", "detail": {"path": "/admin/preferred_replica_election",
                                                            "error": "CONNECTIONLOSS"}})
    assert conflict["fenced"] is None and "Not fenced yet" in conflict["text"]


def zombies_of(view: dict) -> list[dict]:
    return view["invariants"]["rules"]["one_controller"]["info"]["zombies"]


def test_a_deleted_topics_epochs_start_again_and_a_restarted_broker_forgets_epochs():
    records = [
        _state(0, 0, 1, [1], 5, "created"),
        _r(1, "zk", "znode:/brokers/topics/t/partitions/0/state", to_state="deleted",
           detail={"path": "/brokers/topics/t/partitions/0/state", "data": None}),
        _state(2, 0, 1, [1], 0, "created"),  # the topic created again: epoch 0 is not "down"
        _r(3, "request", "request:LeaderAndIsr#1", to_state="applied", broker_id=1, controller_epoch=3,
           op="LeaderAndIsr"),
        _r(4, "broker", "broker:1", to_state="crashed", broker_id=1),
        _r(5, "broker", "broker:1", to_state="started", broker_id=1),
        _r(6, "request", "request:LeaderAndIsr#2", to_state="applied", broker_id=1, controller_epoch=2,
           op="LeaderAndIsr"),
    ]
    assert all(v["count"] == 0 for v in verdicts(fold(records)).values())
    still_running = [r for r in records if r["seq"] not in (4, 5)]
    for i, r in enumerate(still_running):
        r["seq"] = i
    assert verdicts(fold(still_running))["no_stale_apply"] == {"status": "broken", "count": 1}


def test_verdicts_name_every_rule():
    assert list(verdicts(fold([]))) == list(RULE_IDS)
    assert verdicts({"seq": -1}) == {rule: {"status": "holds", "count": 0} for rule in RULE_IDS}
