"""The explicit Spark schema of one replay-log line: a record or a session header.

Why explicit: schema inference reads the whole input once more just to guess, guesses differently
when a field happens to be absent from every line of a small run, and would turn a field that is
sometimes an object into a struct in one run and a string in another. With a fixed schema a line
that does not fit (``"seq": "x"``, a float epoch) is *reported* as malformed instead of silently
changing every other line's type.

The types are written out by hand below, not derived from ``backend.core.records``, so that
``tests/stats/test_schema_contract.py`` compares two independent statements of the format: this
table, ``Record``/``FIELD_NAMES`` and the field table of ``docs/records.md``.

Integers: ids, epochs and versions are ``IntegerType``; everything that counts time, position or
ZooKeeper transactions (``seq``, ``ts_ms``, ``cause_seq``, ``zxid``, ``offset``, ``count``,
``started_ms``) is ``LongType``. JSON objects (``detail``, the header's ``cluster``) are kept as
their JSON text: Spark's JSON reader stores the raw text of an object read into a string field.
The job reads ``detail`` in exactly two places — ``detail.source`` of a ``fault`` record (was it
a student's click?) and ``detail.completed`` of a lesson's ``finished`` record — and nowhere else.
"""

from __future__ import annotations

from pyspark.sql import types as T

STRING, INT, LONG, BOOL = T.StringType(), T.IntegerType(), T.LongType(), T.BooleanType()

# Every field of a record (backend.core.records.Record), with its Spark type.
RECORD_TYPES: dict[str, T.DataType] = {
    "kind": STRING,
    "subject": STRING,
    "v": INT,
    "session_id": STRING,
    "seq": LONG,
    "ts_ms": LONG,
    "from_state": STRING,
    "to_state": STRING,
    "cause": STRING,
    "cause_seq": LONG,
    "controller_id": INT,
    "controller_epoch": INT,
    "topic": STRING,
    "partition": INT,
    "broker_id": INT,
    "leader": INT,
    "isr": T.ArrayType(INT),
    "leader_epoch": INT,
    "zk_version": INT,
    "zxid": LONG,
    "election": STRING,
    "outcome": STRING,
    "note": STRING,
    "op": STRING,
    "offset": LONG,
    "count": LONG,
    "acks": STRING,
    "step": INT,
    "student": STRING,
    "answer": STRING,
    "correct": BOOL,
    "question": STRING,
    "misconception": STRING,
    "detail": STRING,  # a JSON object, kept as its text
}

# Session-header fields that records do not have (kind, v, session_id and student are shared).
HEADER_TYPES: dict[str, T.DataType] = {
    "mode": STRING,
    "started_ms": LONG,
    "app_version": STRING,
    "cluster": STRING,  # a JSON object, kept as its text; never read
    "lesson_id": STRING,
    "class_id": STRING,
}

JSON_TEXT_FIELDS = frozenset({"detail", "cluster"})
"""Fields that hold a JSON object on the wire and its text in Spark."""

REQUIRED_RECORD_FIELDS = ("v", "session_id", "seq", "ts_ms", "kind", "subject")
REQUIRED_HEADER_FIELDS = ("v", "session_id", "mode", "started_ms")

CORRUPT = "_corrupt_record"
"""Where ``from_json`` (mode PERMISSIVE) puts a line that is not JSON or has a wrongly typed field."""

LINE_SCHEMA = T.StructType(
    [T.StructField(name, dtype, nullable=True) for name, dtype in RECORD_TYPES.items()]
    + [T.StructField(name, dtype, nullable=True) for name, dtype in HEADER_TYPES.items()]
    + [T.StructField(CORRUPT, STRING, nullable=True)]
)
"""One replay-log line, header or record, plus the corrupt-record column."""

JSON_OPTIONS = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT}


def field_type(name: str) -> T.DataType:
    """The Spark type of a record or header field (KeyError for an unknown name)."""
    return RECORD_TYPES[name] if name in RECORD_TYPES else HEADER_TYPES[name]


ZOMBIE_WRITE_OUTCOMES = ("rejected_stale_epoch", "error")
"""How a zombie controller's ZooKeeper write is refused (``zk`` / ``write_refused``): by the
epoch check, or — Kafka 2.8's usual way, the new session waiting for ``Expire`` — by its expired
session. (``bad_version`` is a conflict of a live controller, not a zombie.)"""
