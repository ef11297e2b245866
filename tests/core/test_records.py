"""The record: round trip, and clear refusals of what schema version 1 cannot hold."""

import json
from dataclasses import replace

import pytest

from backend.core.records import FIELD_NAMES, Record, RecordError, SessionHeader


def stamped(**extra):
    return Record(kind="election", subject="partition:t-0", leader=2, isr=(2, 3), leader_epoch=1,
                  election="offline", outcome="ok", note="2 is the first live ISR member.",
                  detail={"assignment": [1, 2, 3]}, **extra).stamped("s1", 7, 1700000000000, cause_seq=3)


def test_round_trip_through_json():
    record = stamped()
    data = json.loads(json.dumps(record.to_dict()))
    assert Record.from_dict(data) == record
    assert data["isr"] == [2, 3] and data["cause_seq"] == 3
    assert "broker_id" not in data  # None fields are left out
    assert data["detail"] == {"assignment": [1, 2, 3]}  # not compared by ==: checked on its own
    assert list(data) == [name for name in FIELD_NAMES if name in data]  # keys in declaration order


def test_evolve_makes_the_record_dataclasses_replace_makes_and_leaves_the_original_alone():
    def made():  # every field set, built without evolve (stamped uses it)
        return Record(kind="election", subject="partition:t-0", session_id="s1", seq=7, ts_ms=1700000000000,
                      cause_seq=3, leader=2, isr=(2, 3), leader_epoch=1, election="offline", outcome="ok", broker_id=1,
                      note="2 is the first live ISR member.", detail={"assignment": [1, 2, 3]})
    original = made()
    for name in FIELD_NAMES:  # each field changed on its own: no field is dropped or shared wrongly
        value = {"isr": (4,), "detail": {"x": 1}, "correct": True}.get(name, 99 if name in (
            "seq", "ts_ms", "v", "cause_seq", "controller_id", "controller_epoch", "partition", "broker_id", "leader",
            "leader_epoch", "zk_version", "offset", "count", "step") else f"new {name}")
        evolved, replaced = original.evolve(**{name: value}), replace(original, **{name: value})
        assert evolved == replaced and evolved.to_dict() == replaced.to_dict(), name
        assert getattr(evolved, name) == value and evolved.to_dict() != original.to_dict(), name
    assert original == made() and original.to_dict() == made().to_dict()
    assert hash(original.evolve(seq=8)) == hash(replace(original, seq=8))
    with pytest.raises(TypeError, match="no field.*sqe"):
        original.evolve(sqe=8)
    with pytest.raises(AttributeError):  # still frozen
        original.evolve(seq=8).seq = 9


def test_a_packed_record_unpacks_equal_in_every_field_and_type():
    """The bus keeps records packed (``Record.packed``); what it gives back must be the record
    that was emitted: every field, ``detail`` (not compared by ``==``) and the types JSON would
    lose — a tuple, an integer key."""
    record = stamped(broker_id=1, correct=False).evolve(
        detail={"assignment": {0: (1, 2)}, "payloads": [{"key": None, "value": "a"}], "ratio": 0.5})
    kept = record.packed()
    assert isinstance(kept, bytes) and len(kept) < 400
    back = Record.unpacked(kept)
    assert back == record and back is not record and back.__dict__ == record.__dict__
    assert back.detail["assignment"] == {0: (1, 2)} and type(back.isr) is tuple
    assert back.correct is False and back.to_dict() == record.to_dict()
    with pytest.raises(AttributeError):  # still frozen
        back.seq = 9


def test_a_record_marshal_cannot_pack_is_kept_as_it_is():
    class Name(str):
        pass
    record = stamped().evolve(detail={"name": Name("b1")})
    assert record.packed() is record and Record.unpacked(record) is record


def test_stamping_keeps_a_known_cause():
    r = Record(kind="zk", subject="znode:/controller", cause_seq=1).stamped("s", 5, 0, cause_seq=4)
    assert (r.session_id, r.seq, r.cause_seq) == ("s", 5, 1)


def test_to_dict_keeps_the_fields_order_however_the_record_was_made():
    """``to_dict`` reads the instance's ``__dict__`` in one pass, so its order is the order the
    fields were set in: it must be the declaration order for every way a record comes to be."""
    made = Record(detail={"x": (1, 2)}, note="n", isr=(3, 1), subject="partition:t-0", kind="isr", broker_id=2)
    ways = {"init": made, "evolve": made.evolve(note="m", leader=3), "stamped": made.stamped("s", 4, 5, 1, "c"),
            "unpacked": Record.unpacked(made.stamped("s", 4, 5).packed()),
            "from_dict": Record.from_dict(made.stamped("s", 4, 5).to_dict())}
    for how, record in ways.items():
        data = record.to_dict()
        assert list(data) == [name for name in FIELD_NAMES if getattr(record, name) is not None], how
        assert data["isr"] == [3, 1] and type(data["isr"]) is list, how
        assert data["detail"] == {"x": (1, 2)}, how  # only the top level is made JSON-safe


@pytest.mark.parametrize("own", [{}, {"cause": "own"}, {"cause_seq": 2}, {"cause": "own", "cause_seq": 2}])
@pytest.mark.parametrize("given", [{}, {"cause": "bus"}, {"cause_seq": 9}, {"cause": "bus", "cause_seq": 9}])
def test_stamped_is_evolve_with_the_record_s_own_cause_kept(own, given):
    record = Record(kind="zk", subject="znode:/controller", zxid=3, **own)
    got = record.stamped("s", 5, 6, **given)
    wanted = record.evolve(session_id="s", seq=5, ts_ms=6, cause=own.get("cause", given.get("cause")),
                           cause_seq=own.get("cause_seq", given.get("cause_seq")))
    assert got == wanted and got.__dict__ == wanted.__dict__ and list(got.__dict__) == list(FIELD_NAMES)
    assert record.seq == -1 and record.session_id == ""  # the original is left alone


@pytest.mark.parametrize("change,message", [
    ({"v": 2}, "unsupported record version 2"),
    ({"leader": "2"}, "'leader' must be int, got str"),
    ({"leader": True}, "'leader' must be int"),
    ({"isr": [1, "2"]}, "'isr' must be list[int]"),
    ({"kind": "gossip"}, "'kind': 'gossip' is not one of"),
    ({"outcome": "meh"}, "'outcome': 'meh' is not one of"),
    ({"seq": -1}, "'seq' must be >= 0"),
    ({"colour": "red"}, "unknown record field(s): colour"),
    ({"detail": [1]}, "'detail' must be dict"),
    ({"session_id": None}, "'session_id' must not be null"),
])
def test_bad_records_are_refused_with_the_field_named(change, message):
    data = {**stamped().to_dict(), **change}
    with pytest.raises(RecordError) as info:
        Record.from_dict(data)
    assert message in str(info.value)


def test_missing_required_field():
    data = stamped().to_dict()
    del data["seq"]
    with pytest.raises(RecordError, match="'seq' is missing"):
        Record.from_dict(data)


def test_not_an_object():
    with pytest.raises(RecordError, match="JSON object, not list"):
        Record.from_dict([1])


def test_field_names_are_stable():
    assert FIELD_NAMES[:6] == ("kind", "subject", "v", "session_id", "seq", "ts_ms")
    assert FIELD_NAMES[-1] == "detail"


def test_session_header_round_trip_and_refusals():
    header = SessionHeader("s1", "sandbox", 1, "0.1.0", {"brokers": [0, 1, 2]}, student="anon-7")
    assert SessionHeader.from_dict(json.loads(json.dumps(header.to_dict()))) == header
    with pytest.raises(RecordError, match="must start with a session header"):
        SessionHeader.from_dict(stamped().to_dict())
    with pytest.raises(RecordError, match="'cluster' is missing"):
        SessionHeader.from_dict({"kind": "session", "v": 1, "session_id": "s", "mode": "x", "started_ms": 0,
                                 "app_version": "1"})
