"""What the cluster went through: failovers, offline windows, elections, losses, fencing.

Each function takes the usable records (``backend.stats.load.records_of``: a session key ``sk``,
``seq``, ``ts_ms`` and the record columns) and returns one row per event, keyed by ``sk``; the
job joins the session dimensions on afterwards. ``carry`` names further columns to keep. Order within a session is ``seq`` — never
``ts_ms``, which only measures durations.
"""

from __future__ import annotations

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from backend.stats.events import STATE_ZNODE, attribute_faults
from backend.stats.schema import ZOMBIE_WRITE_OUTCOMES


def failovers(records: DataFrame) -> DataFrame:
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
    by_seq = Window.partitionBy("sk").orderBy("seq")
    deleted = (records.where((F.col("kind") == "zk") & (F.col("subject") == "znode:/controller")
                             & (F.col("to_state") == "deleted"))
               .select("sk", F.col("seq").alias("deleted_seq"), F.col("ts_ms").alias("deleted_ts"),
                       F.row_number().over(by_seq).alias("k")))
    elected = (records.where((F.col("kind") == "controller") & (F.col("to_state") == "elected"))
               .select("sk", F.col("seq").alias("elected_seq"), F.col("ts_ms").alias("elected_ts"),
                       "controller_epoch", (F.row_number().over(by_seq) - 1).alias("k")))
    joined = deleted.join(elected, ["sk", "k"], "left")
    return joined.select(
        "sk", "deleted_seq", "elected_seq", "controller_epoch",
        F.when(F.col("elected_ts").isNotNull(),  # greatest() would skip the null and say 0
               F.greatest(F.col("elected_ts") - F.col("deleted_ts"), F.lit(0))).alias("failover_ms"),
    )


def offline_signals(records: DataFrame, carry: tuple[str, ...] = ()) -> DataFrame:
    """Every record that says whether a partition has a leader: (sk, topic, partition, seq, ts_ms, state)
    with state ``off`` (``partition`` record entering OfflinePartition, or a ``zk`` record of the
    partition's state znode with ``leader`` -1), ``on`` (entering OnlinePartition, or a state
    znode with a leader) or ``gone`` (NonExistentPartition: the topic was deleted)."""
    part = (records.where((F.col("kind") == "partition")
                          & F.col("to_state").isin("OfflinePartition", "OnlinePartition", "NonExistentPartition"))
            .select("sk", "topic", "partition", "seq", "ts_ms", *carry,
                    F.when(F.col("to_state") == "OfflinePartition", "off")
                    .when(F.col("to_state") == "OnlinePartition", "on").otherwise("gone").alias("state")))
    znode = (records.where((F.col("kind") == "zk") & F.col("subject").rlike(STATE_ZNODE)
                           & F.col("to_state").isin("created", "changed") & F.col("leader").isNotNull())
             .select("sk", F.regexp_extract("subject", STATE_ZNODE, 1).alias("topic"),
                     F.regexp_extract("subject", STATE_ZNODE, 2).cast("int").alias("partition"), "seq", "ts_ms", *carry,
                     F.when(F.col("leader") == -1, "off").otherwise("on").alias("state")))
    return part.unionByName(znode)


def offline_windows(records: DataFrame) -> DataFrame:
    """Offline windows per partition: from the first ``off`` signal while the partition had a
    leader (or no known state) to the next ``on`` signal. Further ``off`` signals inside a window
    (the state znode's leader -1 seen after the partition record) do not start a new one.

    Columns: sk, topic, partition, start_seq, start_ts, end_seq, duration_ms (null while still
    offline at the end of the log, or when the topic was deleted), closed, fault (the ``op`` of
    the last ``fault`` record with outcome ok before the window started; ``(none)`` if none),
    fault_seq, fault_source (see ``backend.stats.events.attribute_faults``)."""
    records = attribute_faults(records)
    signals = offline_signals(records, ("fault_op", "fault_seq", "fault_source")).withColumn(
        "is_off", F.col("state") == "off")
    w = Window.partitionBy("sk", "topic", "partition").orderBy("seq")
    prev_off = F.lag("is_off").over(w)
    marked = (signals.withColumn("starts", F.col("is_off") & ~F.coalesce(prev_off, F.lit(False)))
              .withColumn("ends", ~F.col("is_off") & F.coalesce(prev_off, F.lit(False)))
              .withColumn("window", F.sum(F.col("starts").cast("int")).over(
                  w.rowsBetween(Window.unboundedPreceding, Window.currentRow))))
    keys = ["sk", "topic", "partition", "window"]
    starts = marked.where("starts").select(*keys, F.col("seq").alias("start_seq"), F.col("ts_ms").alias("start_ts"),
                                           F.col("fault_op").alias("fault"), "fault_seq", "fault_source")
    ends = marked.where("ends").select(*keys, F.col("seq").alias("end_seq"), F.col("ts_ms").alias("end_ts"),
                                       F.col("state").alias("end_state"))
    windows = starts.join(ends, keys, "left").select(
        "sk", "topic", "partition", "start_seq", "start_ts", "end_seq",
        F.when(F.col("end_state") == "on", F.col("end_ts") - F.col("start_ts")).alias("duration_ms"),
        F.coalesce(F.col("end_state") == "on", F.lit(False)).alias("closed"),
        "fault", "fault_seq", "fault_source",
    )
    return windows


def elections(records: DataFrame, carry: tuple[str, ...] = ()) -> DataFrame:
    """Leader elections that elected a leader: ``election`` records with outcome ok and
    ``to_state`` elected (a preferred election the leader already satisfies is recorded with
    outcome ok but no ``to_state`` — ELECTION_NOT_NEEDED — and is not an election).
    Columns: sk, seq, election, unclean."""
    return (records.where((F.col("kind") == "election") & (F.col("outcome") == "ok")
                          & (F.col("to_state") == "elected"))
            .select("sk", "seq", "election", (F.col("election") == "offline_unclean").alias("unclean"), *carry))


def data_losses(records: DataFrame, carry: tuple[str, ...] = ()) -> DataFrame:
    """Acknowledged messages lost: ``log`` records with outcome data_loss. Columns: sk, seq,
    acks (``unknown`` when absent), messages (``count``)."""
    return (records.where((F.col("kind") == "log") & (F.col("outcome") == "data_loss"))
            .select("sk", "seq", F.coalesce("acks", F.lit("unknown")).alias("acks"),
                    F.coalesce("count", F.lit(0)).alias("messages"), *carry))


def fenced(records: DataFrame, carry: tuple[str, ...] = ()) -> DataFrame:
    """Epoch fencing at work: a zombie controller's ZooKeeper write refused (``zk`` /
    ``write_refused``, by the epoch check — ``rejected_stale_epoch`` — or by its expired session
    — ``error``, as in Kafka 2.8, where the new session waits for ``Expire``) and a request a
    broker rejected for its stale controller epoch (``request`` / ``rejected_stale_epoch``).
    Columns: sk, seq, what (``zombie_write`` or ``stale_request``)."""
    stale = F.col("outcome") == "rejected_stale_epoch"
    zombie = ((F.col("kind") == "zk") & (F.col("to_state") == "write_refused")
              & F.col("outcome").isin(*ZOMBIE_WRITE_OUTCOMES))
    request = (F.col("kind") == "request") & stale
    return (records.where(zombie | request)
            .select("sk", "seq", F.when(zombie, "zombie_write").otherwise("stale_request").alias("what"), *carry))
