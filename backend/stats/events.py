"""The records the metrics read, each with the fault it follows.

Most records (controller events, replica and ISR changes, requests sent, produce acks …) feed
no metric. Keeping only the ones that do, once, right after parsing, shrinks what is cached
and scanned for every dataset to a few percent of the input; that, more than anything, is what
lets the job scale. The filter is the union of what the transforms in ``cluster_metrics``,
``lesson_metrics`` and ``sandbox_metrics`` select (a test checks that running them on the
filtered records gives the same result as on all records).

Each kept record also gets the last ``fault`` record with outcome ok before or at it in its
session (``fault_op``, ``fault_seq``, ``fault_source``), in one pass over the records sorted by
session and seq (Arrow, in the driver, as every transform is: ``backend.stats.derive``):
an offline window's fault type and a free-play fault's consequences are both "what followed
this fault before the next one".
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column
from pyspark.sql import functions as F

from backend.stats.arrow_ops import last_valid, partitioned, row_index, true

STATE_ZNODE = r"^znode:/brokers/topics/(?<topic>[^/]+)/partitions/(?<partition>\d+)/state$"
"""A partition's state znode (named groups: Java's and Arrow's RE2 both read them)."""
NO_FAULT = "(none)"
FAULT_COLUMNS = ("fault_op", "fault_seq", "fault_source")


def relevant() -> Column:
    """True for a record some metric reads."""
    kind, state, outcome, subject = F.col("kind"), F.col("to_state"), F.col("outcome"), F.col("subject")
    zk = (kind == "zk") & ((subject == "znode:/controller") | subject.rlike(STATE_ZNODE) | (state == "write_refused"))
    return F.coalesce(
        zk
        | ((kind == "controller") & (state == "elected"))
        | ((kind == "partition") & state.isin("OfflinePartition", "OnlinePartition", "NonExistentPartition"))
        | (kind == "election")
        | ((kind == "log") & (outcome == "data_loss"))
        | ((kind == "request") & (outcome == "rejected_stale_epoch"))
        | kind.isin("fault", "lesson"),
        F.lit(False))


def attribute_faults(records: pa.Table) -> pa.Table:
    """``records`` sorted by (sk, seq), plus ``fault_op`` (``(none)`` before the first fault),
    ``fault_seq`` and ``fault_source``: the last ``fault`` record with outcome ok at or before
    each record in its session. Already attributed records are returned as they are."""
    if "fault_op" in records.column_names:
        return records
    records, starts = partitioned(records, ["sk"])
    is_fault = true(pc.and_kleene(pc.equal(records["kind"], "fault"), pc.equal(records["outcome"], "ok")))
    # The row of the last applied fault so far in the session, then its columns.
    fault = last_valid(pc.if_else(is_fault, row_index(records.num_rows), pa.scalar(None, pa.int64())), starts)
    op, fault_seq, source = (pc.take(records[c], fault) for c in ("op", "seq", "source"))
    return (records.append_column("fault_op", pc.fill_null(op, NO_FAULT))
            .append_column("fault_seq", fault_seq).append_column("fault_source", source))
