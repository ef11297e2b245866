"""The page's fold (``cluster_view``) on hand-made records: the cases a replay may not contain.

Real replay logs are folded by both folds in ``tests/js/test_model_contract.py``; here each
rule is pinned on its own, so a change that breaks one says which.
"""

from __future__ import annotations

import json

from backend.view.cluster_view import fold


def zk(seq, path, data=None, to_state="changed", **fields):
    return {"seq": seq, "kind": "zk", "subject": f"znode:{path}", "to_state": to_state,
            "detail": {"path": path, "data": data}, **fields}


def refused(seq, path, write):
    return {"seq": seq, "kind": "zk", "subject": f"znode:{path}", "to_state": "write_refused",
            "outcome": "rejected_stale_epoch", "note": "the controller epoch moved on",
            "detail": {"path": path, "write": write}}


def test_a_refused_write_marks_its_znode_and_is_kept_when_the_znode_is_gone():
    view = fold([zk(0, "/admin/preferred_replica_election", {"version": 1, "partitions": []}),
                 refused(1, "/brokers/topics/t/partitions/0/state", "UpdatePartitionState"),
                 zk(2, "/admin/preferred_replica_election", to_state="deleted"),
                 refused(3, "/admin/preferred_replica_election", "DeletePreferredElection")])
    assert "/admin/preferred_replica_election" not in view["znodes"]
    assert view["last_refused"] == {"path": "/admin/preferred_replica_election", "seq": 3,
                                    "write": "DeletePreferredElection", "note": "the controller epoch moved on",
                                    "outcome": "rejected_stale_epoch"}
    marked = fold([zk(0, "/brokers/topics/t/partitions/0/state", {"leader": 0, "isr": [0]}, zk_version=0),
                   refused(1, "/brokers/topics/t/partitions/0/state", "UpdatePartitionState")])
    assert marked["znodes"]["/brokers/topics/t/partitions/0/state"]["refused_seq"] == 1
    # A scrub to before the refusal shows none.
    assert fold([zk(0, "/controller", {"brokerid": 0})])["last_refused"] is None


def test_dynamic_configs_come_from_their_znodes_and_go_with_them():
    records = [zk(0, "/config/brokers/<default>", {"version": 1, "config": {"unclean.leader.election.enable": "true"}}),
               zk(1, "/config/topics/t", {"version": 1, "config": {"min.insync.replicas": "2"}}),
               zk(2, "/config/changes/config_change_0000000000", {"version": 2, "entity_path": "topics/t"})]
    view = fold(records)
    assert view["config"] == {"brokers": {"<default>": {"unclean.leader.election.enable": "true"}},
                              "topics": {"t": {"min.insync.replicas": "2"}}}
    view = fold([zk(3, "/config/topics/t", to_state="deleted")], view)
    assert view["config"]["topics"] == {}


def test_a_new_leaders_log_replaces_the_partitions_offsets_even_when_shorter():
    produced = {"seq": 0, "kind": "log", "subject": "partition:t-0", "to_state": "hw", "topic": "t", "partition": 0,
                "offset": 7, "detail": {"leo": 7, "hw": 7}}
    became = {"seq": 1, "kind": "log", "subject": "partition:t-0", "to_state": "leader_log", "topic": "t",
              "partition": 0, "broker_id": 1, "offset": 2, "detail": {"leo": 2, "hw": 2}}
    partition = fold([produced, became])["partitions"]["t-0"]
    assert (partition["leo"], partition["hw"]) == (2, 2)


def lesson(seq, to_state, **fields):
    return {"seq": seq, "kind": "lesson", "subject": "lesson:x", "to_state": to_state, **fields}


LESSON = [
    lesson(0, "started", detail={"lesson_id": "x", "title": "X", "steps": 3}),
    lesson(1, "step_started", step=1, op="predict", note="Q?",
           detail={"args": {"id": "q"}, "question": "Q?", "choices": ["1", "2"], "stop": True}),
    lesson(2, "step_finished", step=1, op="predict"),
    lesson(3, "step_started", step=2, op="crash_broker"),
    lesson(4, "revealed", step=3, op="reveal", answer="2", note="Because.", detail={"question_id": "q"}),
]


def test_a_lesson_folds_the_same_from_a_snapshot_sent_as_json():
    """The latest question and the question of its id change together even when they are two
    copies: a snapshot reaches a page as JSON, which keeps no shared objects."""
    whole = fold(LESSON)
    for cut in range(1, len(LESSON)):
        snapshot = json.loads(json.dumps(fold(LESSON[:cut])))
        assert fold(LESSON[cut:], snapshot) == whole, f"from the snapshot at seq {cut - 1}"
    assert whole["lesson"]["question"] == whole["lesson"]["questions"]["q"]
    assert whole["lesson"]["question"]["state"] == "revealed" and whole["lesson"]["question"]["answer"] == "2"
