"""What the cluster went through: failovers, offline windows, elections, losses, fencing.

Each function takes the usable records as an Arrow table (``backend.stats.derive.records_of``:
a session key ``sk``, ``seq``, ``ts_ms`` and the record columns) and returns one row per event,
keyed by ``sk``; the run joins the session dimensions on afterwards. ``carry`` names further
columns to keep. Order within a session is ``seq`` — never ``ts_ms``, which only measures
durations. Conditions read a null as false, as Spark's ``where`` did (``backend.stats.arrow_ops``).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from pyarrow.compute import field

from backend.stats.arrow_ops import lag, partitioned, row_number, true, when
from backend.stats.events import STATE_ZNODE, attribute_faults
from backend.stats.schema import ZOMBIE_WRITE_OUTCOMES

OFF, ON, GONE = "off", "on", "gone"


def _numbered(rows: pa.Table, name: str, offset: int) -> pa.Table:
    rows, starts = partitioned(rows, ["sk"])
    return rows.append_column(name, pc.subtract(row_number(starts), offset))


def failovers(records: pa.Table) -> pa.Table:
    """Controller failovers: from the ``zk`` record ``znode:/controller`` ``deleted`` (the old
    controller's session is gone) to the ``controller`` record ``elected`` of the next controller.

    Pairing: the k-th deletion of a session pairs with its (k+1)-th election (the first
    election is the cluster's first controller, which nobody lost). Taking "the first election
    after the deletion by seq" instead would be wrong: the deletion is seen by the observer's
    own ZooKeeper session and can be recorded a few ms *after* the winner's ``elected`` record
    (controller_move_increments_epoch.yaml: elected seq 80, deleted seq 81). For the same
    reason a negative time is clamped to 0. A deletion with no later election (the session
    ended first) has ``failover_ms`` null and counts as unresolved.

    Columns: sk, deleted_seq, elected_seq, controller_epoch, failover_ms."""
    deleted = records.filter((field("kind") == "zk") & (field("subject") == "znode:/controller")
                             & (field("to_state") == "deleted"))
    deleted = _numbered(deleted.select(["sk", "seq", "ts_ms"]), "k", 0).rename_columns(
        ["sk", "deleted_seq", "deleted_ts", "k"])
    elected = records.filter((field("kind") == "controller") & (field("to_state") == "elected"))
    elected = _numbered(elected.select(["sk", "seq", "ts_ms", "controller_epoch"]), "k", 1).rename_columns(
        ["sk", "elected_seq", "elected_ts", "controller_epoch", "k"])
    joined = deleted.join(elected, ["sk", "k"], join_type="left outer")
    # Null while no election followed (a max that skipped the null would say 0).
    wait = pc.max_element_wise(pc.subtract(joined["elected_ts"], joined["deleted_ts"]), 0, skip_nulls=False)
    return pa.table({"sk": joined["sk"], "deleted_seq": joined["deleted_seq"], "elected_seq": joined["elected_seq"],
                     "controller_epoch": joined["controller_epoch"], "failover_ms": wait})


def offline_signals(records: pa.Table, carry: tuple[str, ...] = ()) -> pa.Table:
    """Every record that says whether a partition has a leader: (sk, topic, partition, seq, ts_ms, state)
    with state ``off`` (``partition`` record entering OfflinePartition, or a ``zk`` record of the
    partition's state znode with ``leader`` -1), ``on`` (entering OnlinePartition, or a state
    znode with a leader) or ``gone`` (NonExistentPartition: the topic was deleted)."""
    part = records.filter((field("kind") == "partition")
                          & field("to_state").isin(["OfflinePartition", "OnlinePartition", "NonExistentPartition"]))
    to_state = part["to_state"]
    part_state = pc.if_else(pc.equal(to_state, "OfflinePartition"), OFF,
                            pc.if_else(pc.equal(to_state, "OnlinePartition"), ON, GONE))
    znode = records.filter((field("kind") == "zk") & pc.match_substring_regex(field("subject"), STATE_ZNODE)
                           & field("to_state").isin(["created", "changed"]) & field("leader").is_valid())
    names = pc.extract_regex(znode["subject"], STATE_ZNODE)
    columns = ("sk", "topic", "partition", "seq", "ts_ms", *carry, "state")
    return pa.concat_tables(promote_options="permissive", tables=[
        part.select(columns[:-1]).append_column("state", part_state),
        pa.table({"sk": znode["sk"], "topic": pc.struct_field(names, "topic"),
                  "partition": pc.cast(pc.struct_field(names, "partition"), pa.int32()),
                  **{c: znode[c] for c in ("seq", "ts_ms", *carry)},
                  "state": pc.if_else(pc.equal(znode["leader"], -1), OFF, ON)}),
    ])


def offline_windows(records: pa.Table) -> pa.Table:
    """Offline windows per partition: from the first ``off`` signal while the partition had a
    leader (or no known state) to the next ``on`` signal. Further ``off`` signals inside a window
    (the state znode's leader -1 seen after the partition record) do not start a new one.

    Columns: sk, topic, partition, start_seq, start_ts, end_seq, duration_ms (null while still
    offline at the end of the log, or when the topic was deleted), closed, fault (the ``op`` of
    the last ``fault`` record with outcome ok before the window started; ``(none)`` if none),
    fault_seq, fault_source (see ``backend.stats.events.attribute_faults``)."""
    records = attribute_faults(records)
    keys = ["sk", "topic", "partition"]
    signals, per_partition = partitioned(offline_signals(records, ("fault_op", "fault_seq", "fault_source")), keys)
    is_off = pc.equal(signals["state"], OFF)
    prev_off = true(lag(is_off, per_partition))
    starts, ends = pc.and_(is_off, pc.invert(prev_off)), pc.and_(pc.invert(is_off), prev_off)
    # Numbered across all partitions: an end's number is its own partition's last start's
    # (an end follows an "off", which follows that window's start), so the number alone pairs them.
    signals = signals.append_column("window", pc.cumulative_sum(pc.cast(starts, pa.int64())))
    opened = signals.filter(starts).select(["window", *keys, "seq", "ts_ms", "fault_op", "fault_seq", "fault_source"])
    closed = signals.filter(ends).select(["window", "seq", "ts_ms", "state"]).rename_columns(
        ["window", "end_seq", "end_ts", "end_state"])
    w = opened.join(closed, "window", join_type="left outer")
    back_on = true(pc.equal(w["end_state"], ON))
    return pa.table({"sk": w["sk"], "topic": w["topic"], "partition": w["partition"], "start_seq": w["seq"],
                     "start_ts": w["ts_ms"], "end_seq": w["end_seq"],
                     "duration_ms": when(back_on, pc.subtract(w["end_ts"], w["ts_ms"]), pa.scalar(None, pa.int64())),
                     "closed": back_on, "fault": w["fault_op"], "fault_seq": w["fault_seq"],
                     "fault_source": w["fault_source"]})


def elections(records: pa.Table, carry: tuple[str, ...] = ()) -> pa.Table:
    """Leader elections that elected a leader: ``election`` records with outcome ok and
    ``to_state`` elected (a preferred election the leader already satisfies is recorded with
    outcome ok but no ``to_state`` — ELECTION_NOT_NEEDED — and is not an election).
    Columns: sk, seq, election, unclean."""
    rows = records.filter((field("kind") == "election") & (field("outcome") == "ok") & (field("to_state") == "elected"))
    return pa.table({"sk": rows["sk"], "seq": rows["seq"], "election": rows["election"],
                     "unclean": pc.equal(rows["election"], "offline_unclean"), **{c: rows[c] for c in carry}})


def data_losses(records: pa.Table, carry: tuple[str, ...] = ()) -> pa.Table:
    """Acknowledged messages lost: ``log`` records with outcome data_loss. Columns: sk, seq,
    acks (``unknown`` when absent), messages (``count``)."""
    rows = records.filter((field("kind") == "log") & (field("outcome") == "data_loss"))
    return pa.table({"sk": rows["sk"], "seq": rows["seq"], "acks": pc.fill_null(rows["acks"], "unknown"),
                     "messages": pc.fill_null(rows["count"], 0), **{c: rows[c] for c in carry}})


def fenced(records: pa.Table, carry: tuple[str, ...] = ()) -> pa.Table:
    """Epoch fencing at work: a zombie controller's ZooKeeper write refused (``zk`` /
    ``write_refused``, by the epoch check — ``rejected_stale_epoch`` — or by its expired session
    — ``error``, as in Kafka 2.8, where the new session waits for ``Expire``) and a request a
    broker rejected for its stale controller epoch (``request`` / ``rejected_stale_epoch``).
    Columns: sk, seq, what (``zombie_write`` or ``stale_request``)."""
    kind, outcome = records["kind"], records["outcome"]
    zombie = pc.and_kleene(pc.and_kleene(pc.equal(kind, "zk"), pc.equal(records["to_state"], "write_refused")),
                           pc.is_in(outcome, pa.array(ZOMBIE_WRITE_OUTCOMES)))
    request = pc.and_kleene(pc.equal(kind, "request"), pc.equal(outcome, "rejected_stale_epoch"))
    keep = true(pc.or_kleene(zombie, request))
    rows = records.filter(keep)
    what = when(zombie.filter(keep), "zombie_write", "stale_request")
    return pa.table({"sk": rows["sk"], "seq": rows["seq"], "what": what, **{c: rows[c] for c in carry}})
