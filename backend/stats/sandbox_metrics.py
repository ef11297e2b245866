"""Free play: which faults students injected, and what each one led to.

A student's click is a ``fault`` record with ``detail.source == "user"`` (the loader keeps that
one value of ``detail`` as the column ``source``). What it led to is everything of interest
that followed it in the same session before the next fault (the next ``fault`` record with
outcome ok, of any source): the same attribution rule as an offline window's fault type
(``backend.stats.events.attribute_faults``), so the two tables agree.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
from pyarrow.compute import field

from backend.stats import cluster_metrics as cm
from backend.stats.arrow_ops import group
from backend.stats.events import FAULT_COLUMNS, attribute_faults

EFFECTS = ("elections", "offline_windows", "data_losses", "messages_lost", "fenced_writes", "stale_rejections")


def effect_events(records: pa.Table, windows: pa.Table) -> pa.Table:
    """Every consequence as one row: (sk, seq, effect, messages, fault_op, fault_seq,
    fault_source). ``windows`` is ``cluster_metrics.offline_windows`` (a window counts at its
    first record, attributed as the window is)."""
    records = attribute_faults(records)

    def rows(table: pa.Table, seq: str, effect, messages, fault: tuple[str, ...] = FAULT_COLUMNS) -> pa.Table:
        n = table.num_rows
        return pa.table({"sk": table["sk"], "seq": table[seq],
                         "effect": effect if not isinstance(effect, str) else pa.array([effect] * n, pa.string()),
                         "messages": messages if messages is not None else pa.array([0] * n, pa.int64()),
                         **{c: table[f] for c, f in zip(FAULT_COLUMNS, fault)}})

    losses = cm.data_losses(records, FAULT_COLUMNS)
    fencing = cm.fenced(records, FAULT_COLUMNS)
    return pa.concat_tables(promote_options="permissive", tables=[
        rows(cm.elections(records, FAULT_COLUMNS), "seq", "elections", None),
        rows(windows, "start_seq", "offline_windows", None, ("fault", "fault_seq", "fault_source")),
        rows(losses, "seq", "data_losses", losses["messages"]),
        rows(fencing, "seq", pc.if_else(pc.equal(fencing["what"], "zombie_write"), "fenced_writes", "stale_rejections"),
             None),
    ])


def user_faults(records: pa.Table, windows: pa.Table) -> pa.Table:
    """One row per fault a student injected (``source`` user), with what followed it.
    Columns: sk, seq, op, applied, and the counts in ``EFFECTS`` (0 when nothing followed,
    and always 0 for a refused fault: nothing is attributed to it)."""
    injected = records.filter((field("kind") == "fault") & (field("source") == "user"))
    injected = pa.table({"sk": injected["sk"], "seq": injected["seq"], "op": injected["op"],
                         "applied": pc.equal(injected["outcome"], "ok")})
    effects = effect_events(records, windows).filter(field("fault_source") == "user")
    effect = effects["effect"]
    counts = {e: pc.cast(pc.equal(effect, e), pa.int64()) for e in EFFECTS if e != "messages_lost"}
    counts["messages_lost"] = pc.if_else(pc.equal(effect, "data_losses"), effects["messages"], 0)
    per_fault = pa.table({"sk": effects["sk"], "seq": effects["fault_seq"], **counts})
    sums = group(per_fault, ["sk", "seq"], {e: "sum" for e in EFFECTS})
    joined = injected.join(sums, ["sk", "seq"], join_type="left outer")
    return pa.table({**{c: joined[c] for c in ("sk", "seq", "op", "applied")},
                     **{e: pc.fill_null(joined[e], 0) for e in EFFECTS}})
