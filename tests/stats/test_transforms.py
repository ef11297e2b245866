"""Each transform of the statistics job on small inline Arrow tables (the scenarios are named)."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.pandas.types import to_arrow_schema

from backend.stats import cluster_metrics as cm
from backend.stats import lesson_metrics as lm
from backend.stats import sandbox_metrics as sm
from backend.stats.events import attribute_faults, relevant
from backend.stats.load import KEPT_SCHEMA, RECORD_COLUMNS

# The records as the ingest reads them from the kept lines (``backend.stats.derive.records_of``).
SCHEMA = pa.schema([to_arrow_schema(KEPT_SCHEMA).field(c) for c in ("sk", *RECORD_COLUMNS, "subject", "source", "completed")])


def records(*rows) -> pa.Table:
    """records(dict, dict, ...): a records table; missing fields are null, sk defaults to 1.
    The rows arrive in reverse: a transform must order each session's rows by ``seq`` itself
    (``arrow_ops.partitioned``): nothing upstream promises the order the kept lines come in."""
    rows = [{"sk": 1, **r} for r in rows]
    rows.reverse()
    return pa.Table.from_pylist(rows, schema=SCHEMA)


def Row(**columns) -> dict:  # noqa: N802 - reads as the rows the Spark version's tests listed
    return columns


def assert_rows(table: pa.Table, expected: list[dict] | pa.Table) -> None:
    """The same rows in any order, with the same columns in the same order."""
    expected = expected.to_pylist() if isinstance(expected, pa.Table) else expected
    assert [list(row) for row in expected] == [table.column_names] * len(expected)
    assert Counter(map(_key, table.to_pylist())) == Counter(map(_key, expected))


def _key(row: dict) -> tuple:
    return tuple(row.items())


def zk(seq, ts, subject, to_state, **kw):
    return {"kind": "zk", "seq": seq, "ts_ms": ts, "subject": subject, "to_state": to_state, **kw}


def elected(seq, ts, epoch, **kw):
    return {"kind": "controller", "seq": seq, "ts_ms": ts, "to_state": "elected", "controller_epoch": epoch, **kw}


def part(seq, ts, to_state, p=0, **kw):
    return {"kind": "partition", "seq": seq, "ts_ms": ts, "to_state": to_state, "topic": "t", "partition": p, **kw}


def fault(seq, op, outcome="ok", source="script", **kw):
    return {"kind": "fault", "seq": seq, "ts_ms": seq, "op": op, "outcome": outcome, "source": source, **kw}


def lesson(seq, ts, to_state, **kw):
    return {"kind": "lesson", "seq": seq, "ts_ms": ts, "to_state": to_state, **kw}


# -- failovers ---------------------------------------------------------------------------------
def test_failover_pairs_the_kth_deletion_with_the_next_controllers_election():
    df = records(elected(1, 100, 1), zk(5, 1000, "znode:/controller", "deleted"), elected(7, 1040, 2),
                 zk(9, 2000, "znode:/controller", "deleted"), elected(12, 2300, 3))
    expected = [Row(sk=1, deleted_seq=5, elected_seq=7, controller_epoch=2, failover_ms=40),
                Row(sk=1, deleted_seq=9, elected_seq=12, controller_epoch=3, failover_ms=300)]
    assert_rows(cm.failovers(df), expected)


def test_failover_seen_late_by_the_observer_counts_as_zero_not_as_missing():
    """controller_move_increments_epoch: the winner's `elected` (seq 80) precedes the observer's
    `deleted` (seq 81) by a few ms."""
    df = records(elected(1, 100, 1), zk(80 - 30, 500, "znode:/controller", "deleted"), elected(52, 530, 2),
                 elected(80, 1000, 3), zk(81, 1004, "znode:/controller", "deleted"))
    got = {r["deleted_seq"]: r["failover_ms"] for r in cm.failovers(df).to_pylist()}
    assert got == {50: 30, 81: 0}


def test_a_deletion_with_no_later_election_is_unresolved():
    df = records(elected(1, 100, 1), zk(5, 1000, "znode:/controller", "deleted"),
                 zk(6, 1001, "znode:/controllers_other", "deleted"))
    assert_rows(cm.failovers(df), [Row(sk=1, deleted_seq=5, elected_seq=None, controller_epoch=None,
                                                failover_ms=None)])


# -- offline windows ---------------------------------------------------------------------------
STATE = "znode:/brokers/topics/t/partitions/0/state"


def test_offline_window_from_offline_partition_to_online_attributed_to_the_last_applied_fault():
    df = records(fault(2, "produce"), fault(3, "crash_broker"), fault(4, "start_broker", outcome="refused"),
                 part(10, 1000, "OfflinePartition"), zk(11, 1005, STATE, "changed", leader=-1),
                 part(14, 1250, "OnlinePartition"), zk(15, 1260, STATE, "changed", leader=1))
    got = cm.offline_windows(df).select(["topic", "partition", "start_seq", "end_seq", "duration_ms", "closed", "fault"])
    assert_rows(got, [Row(topic="t", partition=0, start_seq=10, end_seq=14, duration_ms=250, closed=True,
                                   fault="crash_broker")])


def test_offline_window_started_by_a_state_znode_with_leader_minus_one():
    df = records(zk(3, 100, STATE, "created", leader=0), zk(8, 400, STATE, "changed", leader=-1),
                 zk(9, 900, STATE, "changed", leader=2))
    got = cm.offline_windows(df).select(["start_seq", "end_seq", "duration_ms", "fault"])
    assert_rows(got, [Row(start_seq=8, end_seq=9, duration_ms=500, fault="(none)")])


def test_offline_window_still_open_at_the_end_or_ended_by_deletion_has_no_duration():
    df = records(part(1, 100, "OfflinePartition", p=0), part(2, 100, "OfflinePartition", p=1),
                 part(3, 300, "NonExistentPartition", p=1))
    got = cm.offline_windows(df).select(["partition", "end_seq", "duration_ms", "closed"])
    assert_rows(got, [Row(partition=0, end_seq=None, duration_ms=None, closed=False),
                               Row(partition=1, end_seq=3, duration_ms=None, closed=False)])


def test_two_offline_windows_of_one_partition():
    df = records(part(1, 100, "OfflinePartition"), part(2, 150, "OnlinePartition"), part(3, 170, "OnlinePartition"),
                 part(4, 200, "OfflinePartition"), part(5, 290, "OnlinePartition"))
    got = cm.offline_windows(df).select(["start_seq", "duration_ms"])
    assert_rows(got, [Row(start_seq=1, duration_ms=50), Row(start_seq=4, duration_ms=90)])


def test_attribute_faults_takes_the_last_applied_fault_per_session():
    df = records(fault(1, "crash_broker"), {"kind": "election", "seq": 2, "ts_ms": 2},
                 fault(3, "expire_session", outcome="refused"), {"kind": "election", "seq": 4, "ts_ms": 4},
                 {"sk": 2, "kind": "election", "seq": 1, "ts_ms": 1})
    got = attribute_faults(df).filter(pc.field("kind") == "election").select(["sk", "seq", "fault_op", "fault_seq"])
    assert_rows(got, [Row(sk=1, seq=2, fault_op="crash_broker", fault_seq=1),
                               Row(sk=1, seq=4, fault_op="crash_broker", fault_seq=1),
                               Row(sk=2, seq=1, fault_op="(none)", fault_seq=None)])


# -- elections, data loss, fencing -------------------------------------------------------------
def test_elections_count_only_those_that_elected_a_leader():
    df = records({"kind": "election", "seq": 1, "ts_ms": 1, "to_state": "elected", "outcome": "ok", "election": "offline"},
                 {"kind": "election", "seq": 2, "ts_ms": 2, "outcome": "ok", "election": "preferred"},  # not needed
                 {"kind": "election", "seq": 3, "ts_ms": 3, "outcome": "no_leader", "election": "offline"},
                 {"kind": "election", "seq": 4, "ts_ms": 4, "to_state": "elected", "outcome": "ok",
                  "election": "offline_unclean"})
    assert_rows(cm.elections(df), [Row(sk=1, seq=1, election="offline", unclean=False),
                                            Row(sk=1, seq=4, election="offline_unclean", unclean=True)])


def test_data_loss_sums_acknowledged_messages_by_acks():
    df = records({"kind": "log", "seq": 1, "ts_ms": 1, "to_state": "lost", "outcome": "data_loss", "count": 5, "acks": "1"},
                 {"kind": "log", "seq": 2, "ts_ms": 2, "to_state": "acknowledged", "outcome": "ok", "count": 9, "acks": "1"},
                 {"kind": "log", "seq": 3, "ts_ms": 3, "to_state": "lost", "outcome": "data_loss", "count": 2})
    assert_rows(cm.data_losses(df), [Row(sk=1, seq=1, acks="1", messages=5),
                                              Row(sk=1, seq=3, acks="unknown", messages=2)])


def test_fencing_counts_refused_zombie_writes_and_stale_epoch_requests():
    df = records(zk(1, 1, "znode:/admin/preferred_replica_election", "write_refused", outcome="rejected_stale_epoch"),
                 zk(2, 2, "znode:/x", "write_refused", outcome="bad_version"),
                 {"kind": "request", "seq": 3, "ts_ms": 3, "to_state": "rejected", "outcome": "rejected_stale_epoch"},
                 {"kind": "request", "seq": 4, "ts_ms": 4, "to_state": "applied", "outcome": "ok"})
    assert_rows(cm.fenced(df), [Row(sk=1, seq=1, what="zombie_write"), Row(sk=1, seq=3, what="stale_request")])


# -- lessons -----------------------------------------------------------------------------------
def test_answers_normalise_the_text_for_counting_wrong_answers():
    df = records(lesson(5, 50, "answered", step=2, op="predict", student="ann", answer=" None ", correct=False),
                 lesson(6, 50, "answered", step=2, op="predict", answer="1", correct=True))
    assert_rows(lm.answers(df).select(["step", "answer_student", "answer_key", "correct"]),
                         [Row(step=2, answer_student="ann", answer_key="none", correct=False),
                          Row(step=2, answer_student=None, answer_key="1", correct=True)])


def test_step_time_is_from_step_started_to_its_step_finished():
    df = records(lesson(1, 100, "step_started", step=1, op="say"), lesson(2, 160, "step_finished", step=1, op="say"),
                 lesson(3, 160, "step_started", step=2, op="crash_broker"),  # failed: never finished
                 lesson(9, 900, "step_started", step=3, op="pause"), lesson(12, 4900, "step_finished", step=3, op="pause"))
    assert_rows(lm.step_durations(df).select(["step", "op", "duration_ms"]),
                         [Row(step=1, op="say", duration_ms=60), Row(step=3, op="pause", duration_ms=4000)])


def test_lesson_progress_started_finished_completed():
    df = records(lesson(1, 1, "started", subject="lesson:l1"), lesson(9, 9, "finished", completed=True),
                 {"sk": 2, **lesson(1, 1, "started")}, {"sk": 2, **lesson(5, 5, "finished", completed=False)},
                 {"sk": 3, **lesson(1, 1, "started")})
    assert_rows(lm.lesson_progress(df), [Row(sk=1, started=True, finished=True, completed=True),
                                                  Row(sk=2, started=True, finished=True, completed=False),
                                                  Row(sk=3, started=True, finished=False, completed=False)])
    assert_rows(lm.lesson_ids(df), [Row(sk=1, started_lesson_id="l1"), Row(sk=2, started_lesson_id=None),
                                             Row(sk=3, started_lesson_id=None)])


def test_funnel_counts_each_step_a_session_reached():
    df = records(lesson(1, 1, "step_started", step=1), lesson(2, 2, "step_finished", step=1),
                 lesson(3, 3, "step_started", step=2))
    assert_rows(lm.steps_reached(df), [Row(sk=1, step=1, reached=True, step_finished=True),
                                                Row(sk=1, step=2, reached=True, step_finished=False)])


# -- free play ---------------------------------------------------------------------------------
def test_user_faults_get_what_followed_them_before_the_next_fault():
    df = records(fault(1, "crash_broker", source="user"), part(2, 10, "OfflinePartition"),
                 {"kind": "election", "seq": 3, "ts_ms": 11, "to_state": "elected", "outcome": "ok", "election": "offline"},
                 part(4, 30, "OnlinePartition"),
                 {"kind": "log", "seq": 5, "ts_ms": 31, "outcome": "data_loss", "count": 3, "acks": "1"},
                 fault(6, "expire_session", outcome="refused", source="user"),
                 fault(7, "produce", source="script"),
                 {"kind": "election", "seq": 8, "ts_ms": 40, "to_state": "elected", "outcome": "ok", "election": "preferred"})
    windows = cm.offline_windows(df)
    got = sm.user_faults(df, windows)
    assert_rows(got, [
        Row(sk=1, seq=1, op="crash_broker", applied=True, elections=1, offline_windows=1, data_losses=1,
            messages_lost=3, fenced_writes=0, stale_rejections=0),
        Row(sk=1, seq=6, op="expire_session", applied=False, elections=0, offline_windows=0, data_losses=0,
            messages_lost=0, fenced_writes=0, stale_rejections=0)])


# -- loading, filtering ------------------------------------------------------------------
def test_the_relevant_filter_keeps_everything_the_transforms_read(spark):
    """The keep filter is Spark's (the parse applies it); the transforms are Arrow's."""
    df = records(fault(1, "crash_broker", source="user"), part(2, 10, "OfflinePartition"),
                 {"kind": "replica", "seq": 3, "ts_ms": 11, "to_state": "OfflineReplica"},
                 {"kind": "election", "seq": 4, "ts_ms": 11, "to_state": "elected", "outcome": "ok", "election": "offline"},
                 part(5, 30, "OnlinePartition"), zk(6, 31, "znode:/controller", "deleted"), elected(7, 40, 2),
                 {"kind": "isr", "seq": 8, "ts_ms": 41, "to_state": "shrunk"},
                 lesson(9, 50, "answered", step=2, answer="0", correct=False))
    kept = spark.createDataFrame(df).where(relevant()).toArrow()
    for transform in (cm.failovers, cm.offline_windows, cm.elections, lm.answers,
                      lambda d: sm.user_faults(d, cm.offline_windows(d))):
        assert_rows(transform(kept), transform(df))
    assert kept.num_rows == df.num_rows - 2
