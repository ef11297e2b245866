"""The one record type that carries every transition, from the controller to Spark.

The backend, the websocket, the browser's timeline, the replay log (JSONL) and the Spark job
all read and write this flat, JSON-safe shape (schema version 1, documented with an example of
each kind in ``docs/records.md``). It plays the part of Kafka's state-change log: every state
change, election, request and refused write becomes one record, with a ``cause`` so a student
can ask "why did this happen?".

Records are built here without ``session_id``/``seq``/``ts_ms``; the runtime stamps those when
a record leaves the controller or runtime thread (``seq`` is *the* order, ``ts_ms`` is only for
display). ``to_dict`` leaves out fields that are ``None``; ``from_dict`` restores them and
refuses unknown versions, unknown fields and wrong types with a message that names the field.
"""

from __future__ import annotations

import marshal
import operator
from dataclasses import dataclass, field, fields
from typing import Any

SCHEMA_VERSION = 1

KINDS = (
    "zk", "controller_event", "controller", "broker", "partition", "replica", "election",
    "isr", "request", "log", "fault", "lesson", "metric",
)
ELECTIONS = ("offline", "offline_unclean", "preferred", "controlled_shutdown", "reassign")
OUTCOMES = (
    "ok", "rejected_stale_epoch", "bad_version", "invalid_transition", "no_leader", "error",
    "data_loss", "refused",
)
BROKER_TO_CONTROLLER_REQUESTS = frozenset({"AlterIsr"})
"""``request`` records of requests a broker sends to the controller: ``broker_id`` is the sender,
``controller_id`` the receiver, and ``applied`` / ``rejected`` are the controller's answer."""


@dataclass(frozen=True)
class Record:
    """One transition. Field meanings: ``docs/records.md``."""

    kind: str
    subject: str
    v: int = SCHEMA_VERSION
    session_id: str = ""
    seq: int = -1
    ts_ms: int = 0
    from_state: str | None = None
    to_state: str | None = None
    cause: str | None = None
    cause_seq: int | None = None
    controller_id: int | None = None
    controller_epoch: int | None = None
    topic: str | None = None
    partition: int | None = None
    broker_id: int | None = None
    leader: int | None = None
    isr: tuple[int, ...] | None = None
    leader_epoch: int | None = None
    zk_version: int | None = None
    zxid: int | None = None
    election: str | None = None
    outcome: str | None = None
    note: str | None = None
    op: str | None = None
    offset: int | None = None
    count: int | None = None
    acks: str | None = None
    step: int | None = None
    student: str | None = None
    answer: str | None = None
    correct: bool | None = None
    question: str | None = None
    misconception: str | None = None
    detail: dict[str, Any] | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        """The JSON-safe form: every field that is not ``None``, lists for tuples, in the fields'
        order. Read from the instance's ``__dict__`` in one pass: every record is turned into a
        dict on its way out, and asking for each of the 36 fields by name (``getattr``) took
        twice as long (issue 14, twenty-seventh round). The order is the fields' order
        however the record was made: the dataclass's ``__init__`` sets them in that order,
        :meth:`evolve` and :meth:`stamped` copy a record's ``__dict__`` and only replace values,
        and :meth:`unpacked` fills it in ``FIELD_NAMES`` order (``tests/core/test_records.py``)."""
        return {name: list(value) if type(value) is tuple else value
                for name, value in self.__dict__.items() if value is not None}

    @classmethod
    def from_dict(cls, data: Any) -> Record:
        """Parse and validate one record; raises :class:`RecordError` naming what is wrong."""
        if not isinstance(data, dict):
            raise RecordError(f"a record must be a JSON object, not {type(data).__name__}")
        version = data.get("v")
        if version != SCHEMA_VERSION:
            raise RecordError(
                f"unsupported record version {version!r}: this build reads version {SCHEMA_VERSION}"
            )
        unknown = sorted(set(data) - _FIELD_TYPES.keys())
        if unknown:
            raise RecordError(f"unknown record field(s): {', '.join(unknown)}")
        for name in ("kind", "subject", "session_id", "seq", "ts_ms"):
            if name not in data:
                raise RecordError(f"record field {name!r} is missing")
        values = {name: _check_type(name, value) for name, value in data.items()}
        if values["kind"] not in KINDS:
            raise RecordError(f"record field 'kind': {values['kind']!r} is not one of {', '.join(KINDS)}")
        if values["seq"] < 0:
            raise RecordError(f"record field 'seq' must be >= 0, got {values['seq']}")
        for name, allowed in (("election", ELECTIONS), ("outcome", OUTCOMES)):
            if values.get(name) is not None and values[name] not in allowed:
                raise RecordError(f"record field {name!r}: {values[name]!r} is not one of {', '.join(allowed)}")
        if values.get("isr") is not None:
            values["isr"] = tuple(values["isr"])
        return cls(**values)

    def stamped(self, session_id: str, seq: int, ts_ms: int, cause_seq: int | None = None,
                cause: str | None = None) -> Record:
        """This record as it leaves the runtime: with its session, its place in the order and
        its wall-clock time (and its cause and the seq of that cause, when the runtime knows
        them and the record does not name its own). One copy, however many fields are set:
        :meth:`evolve` without its check of the names, which are these five (every record
        passes here, under its bus's lock)."""
        copy = object.__new__(self.__class__)
        values = copy.__dict__
        values.update(self.__dict__)
        values["session_id"], values["seq"], values["ts_ms"] = session_id, seq, ts_ms
        if values["cause"] is None:
            values["cause"] = cause
        if values["cause_seq"] is None:
            values["cause_seq"] = cause_seq
        return copy

    def packed(self) -> bytes | Record:
        """This record as the bus keeps it once emitted: its fields in one ``marshal``'d bytes
        object, or the record itself if a value is of a type ``marshal`` refuses.

        A sandbox keeps up to 20,000 records for pages that catch up and lessons that look back.
        As objects, each is a ``Record``, its ``__dict__``, its ``detail`` and what that holds:
        ~2.5 KB and three or four objects the cyclic garbage collector must visit — in every full
        collection, for the whole class, while nothing about them changes (issue 14, tenth
        round). Packed: ~270 bytes and nothing to visit; ``marshal`` keeps every type (tuples,
        integer keys), so :meth:`unpacked` gives back an equal record, and it takes 2–3 µs."""
        try:
            return marshal.dumps(_FIELD_VALUES(self))
        except ValueError:
            return self

    @classmethod
    def unpacked(cls, kept: bytes | Record) -> Record:
        """The record :meth:`packed` kept (a new, equal object each time)."""
        if not isinstance(kept, bytes):
            return kept
        record = object.__new__(cls)
        record.__dict__.update(zip(FIELD_NAMES, marshal.loads(kept)))
        return record

    def evolve(self, **changes: Any) -> Record:
        """``dataclasses.replace(self, **changes)``, about ten times cheaper: every record is
        copied at least twice on its way out (stamped by the bus, signed by the controller), and
        ``replace`` walking the fields was a fifth of a controller thread's CPU per fault (issue
        14). A copy of the instance's fields with the changes on top: the same record ``replace``
        makes, as ``Record`` has no ``__post_init__`` and no field outside ``__init__``."""
        unknown = changes.keys() - _FIELD_TYPES.keys()
        if unknown:
            raise TypeError(f"Record has no field(s) {', '.join(sorted(unknown))}")
        copy = object.__new__(self.__class__)
        fields_of_copy = copy.__dict__
        fields_of_copy.update(self.__dict__)
        fields_of_copy.update(changes)
        return copy


@dataclass(frozen=True)
class SessionHeader:
    """First line of every replay log: who ran what, on which cluster, when."""

    session_id: str
    mode: str  # "sandbox", "lesson", "class", "script"
    started_ms: int
    app_version: str
    cluster: dict[str, Any]
    lesson_id: str | None = None
    class_id: str | None = None
    student: str | None = None
    kind: str = "session"
    v: int = SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}

    @classmethod
    def from_dict(cls, data: Any) -> SessionHeader:
        if not isinstance(data, dict) or data.get("kind") != "session":
            raise RecordError("a replay log must start with a session header (kind 'session')")
        if data.get("v") != SCHEMA_VERSION:
            raise RecordError(f"unsupported session header version {data.get('v')!r}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise RecordError(f"unknown session header field(s): {', '.join(unknown)}")
        for name in ("session_id", "mode", "started_ms", "app_version", "cluster"):
            if name not in data:
                raise RecordError(f"session header field {name!r} is missing")
        return cls(**data)


class RecordError(ValueError):
    """A record or header that this schema version cannot accept."""


# Field name -> the JSON types it may hold (None is always allowed for optional fields).
_INT, _STR, _BOOL = ("int",), ("str",), ("bool",)
_FIELD_TYPES: dict[str, tuple[str, ...]] = {
    "v": _INT, "session_id": _STR, "seq": _INT, "ts_ms": _INT, "kind": _STR, "subject": _STR,
    "from_state": _STR, "to_state": _STR, "cause": _STR, "cause_seq": _INT,
    "controller_id": _INT, "controller_epoch": _INT, "topic": _STR, "partition": _INT,
    "broker_id": _INT, "leader": _INT, "isr": ("list[int]",), "leader_epoch": _INT,
    "zk_version": _INT, "zxid": _INT, "election": _STR, "outcome": _STR, "note": _STR,
    "op": _STR, "offset": _INT, "count": _INT, "acks": _STR, "step": _INT, "student": _STR,
    "answer": _STR, "correct": _BOOL, "question": _STR, "misconception": _STR, "detail": ("dict",),
}
_REQUIRED = {"v", "session_id", "seq", "ts_ms", "kind", "subject"}


def _check_type(name: str, value: Any) -> Any:
    if value is None:
        if name in _REQUIRED:
            raise RecordError(f"record field {name!r} must not be null")
        return None
    expected = _FIELD_TYPES[name][0]
    ok = {
        "int": isinstance(value, int) and not isinstance(value, bool),
        "str": isinstance(value, str),
        "bool": isinstance(value, bool),
        "dict": isinstance(value, dict),
        "list[int]": isinstance(value, list)
        and all(isinstance(x, int) and not isinstance(x, bool) for x in value),
    }[expected]
    if not ok:
        raise RecordError(f"record field {name!r} must be {expected}, got {type(value).__name__} {value!r}")
    return value


FIELD_NAMES: tuple[str, ...] = tuple(f.name for f in fields(Record))
"""Record fields in declaration order: the Spark schema and the JS model are tested against it."""
_FIELD_VALUES = operator.attrgetter(*FIELD_NAMES)  # a record's values in that order, for packed()
