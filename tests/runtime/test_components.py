"""The runtime's parts on their own: the event queue, the record bus and the replay log (the
heap's freezing: ``test_heap.py``; the broker's cable: ``tests/zk/test_cable.py``)."""

from __future__ import annotations

import ctypes
import errno
import json
import threading

import pytest

from backend.core.controller import events as ev
from backend.core.records import Record, SessionHeader
from backend.runtime.controller.event_manager import ControllerEventManager
from backend.runtime.record_bus import CHUNK, RecordBus
from backend.runtime.replay import ReplayWriter, read_replay, write_all
from tests.support import wait_until


def test_clear_and_put_preempts_waiting_events_and_the_thread_survives_errors():
    bus = RecordBus("s")
    seen, release = [], threading.Event()

    def process(queued):
        seen.append(queued.event.name)
        if queued.event.name == "BrokerChange":
            release.wait(5)
        if queued.event.name == "TopicChange":
            raise RuntimeError("boom")

    manager = ControllerEventManager(0, process, bus.emit)
    manager.start()
    manager.put(ev.BrokerChange())
    wait_until(lambda: seen == ["BrokerChange"], 5, "BrokerChange to start")
    manager.put(ev.TopicChange())
    manager.put(ev.IsrChangeNotification())
    manager.clear_and_put(ev.Expire())
    assert [q.event.name for q in manager.pending()] == ["Expire"]
    release.set()
    manager.put(ev.TopicChange())
    manager.put(ev.Reelect())
    assert manager.wait_idle(5)
    assert seen == ["BrokerChange", "Expire", "TopicChange", "Reelect"]
    states = [(r.op, r.to_state) for r in bus.since(0)]
    assert ("TopicChange", "preempted") in states and ("IsrChangeNotification", "preempted") in states
    failed = [r for r in bus.since(0) if r.to_state == "failed"]
    assert failed and "RuntimeError: boom" in failed[0].note
    manager.close()


def test_an_event_that_arrives_while_the_broker_is_frozen_can_still_be_preempted_by_expire():
    """A frozen thread must not hold an event it took before freezing: Expire's clear_and_put
    has to find every event that came in while the broker was paused still in the queue."""
    bus, seen, gate = RecordBus("s"), [], threading.Event()
    gate.set()
    manager = ControllerEventManager(0, lambda queued: seen.append(queued.event.name), bus.emit, gate=gate)
    manager.start()
    manager.put(ev.Startup())
    assert manager.wait_idle(5)
    gate.clear()  # the broker freezes, idle
    manager.put(ev.UncleanLeaderElectionEnable())
    manager.put(ev.BrokerChange())
    manager.clear_and_put(ev.Expire())
    assert [q.event.name for q in manager.pending()] == ["Expire"]
    gate.set()
    assert manager.wait_idle(5)
    assert seen == ["Startup", "Expire"]
    preempted = [r for r in bus.since(0) if r.to_state == "preempted"]
    assert [r.op for r in preempted] == ["UncleanLeaderElectionEnable", "BrokerChange"]
    assert "without a session" in preempted[0].note
    gate.clear()
    manager.put(ev.TopicChange())
    manager.close()  # a broker shut down while frozen: its waiting event is dropped, and says why
    [dropped] = [r for r in bus.since(0) if r.to_state == "preempted" and r.op == "TopicChange"]
    assert "shutting down" in dropped.note


def test_bus_stamps_dense_seq_and_late_subscribers_catch_up_without_gaps():
    bus = RecordBus("s", clock=lambda: 12.5)
    bus.emit([Record(kind="broker", subject="broker:1")] * 3, cause="crash_broker", cause_seq=0)
    late = []
    bus.subscribe(late.extend, replay_from=1)
    bus.emit([Record(kind="broker", subject="broker:2")])
    assert [r.seq for r in late] == [1, 2, 3]
    assert late[0].session_id == "s" and late[0].ts_ms == 12500 and late[0].cause == "crash_broker"
    found = bus.wait_for(lambda r: r.subject == "broker:2", after_seq=0, timeout=1)
    assert found.seq == 3
    assert bus.wait_for(lambda r: r.subject == "broker:9", after_seq=0, timeout=0.05) is None


def test_the_bus_keeps_its_history_packed_and_gives_back_any_part_of_it():
    """Kept records are bytes, not objects the collector visits (issue 14); ``since`` still
    gives each kept record back, in order, from any seq and with a limit, and forgets the oldest
    beyond ``history``."""
    bus = RecordBus("s", history=50)
    for n in range(80):
        bus.emit([Record(kind="broker", subject=f"broker:{n}", detail={"n": (n,)})])
    assert all(isinstance(kept, bytes) for kept in [*bus._chunks, *bus._tail])
    assert [r.seq for r in bus.since(0)] == list(range(30, 80))  # the 30 oldest are forgotten
    assert [r.seq for r in bus.since(75)] == [75, 76, 77, 78, 79]
    assert [r.seq for r in bus.since(40, limit=3)] == [40, 41, 42]
    assert [r.seq for r in bus.since(78, limit=3)] == [78, 79] and bus.since(80) == []
    assert [r.detail["n"] for r in bus.since(77)] == [(77,), (78,), (79,)]
    late = []
    bus.subscribe(late.extend, replay_from=70)
    assert [r.subject for r in late] == [f"broker:{n}" for n in range(70, 80)]
    assert bus.wait_for(lambda r: r.detail["n"] == (31,), after_seq=0, timeout=0).seq == 31


def test_a_long_history_is_kept_in_compressed_chunks_and_read_back_across_them():
    """A sandbox's records repeat their fields, subjects and notes: sealed ``CHUNK`` at a time they
    take a few tens of bytes each instead of a few hundred (issue 14, thirty-ninth round). Any part of the
    history reads back whole and in order across chunks, emitted one by one or in batches; a
    record ``marshal`` cannot pack is kept as it is; chunks the history no longer reaches go."""
    bus = RecordBus("s", history=1000)
    for n in range(0, 3000, 3):
        bus.emit([Record(kind="partition", subject=f"partition:t-{n % 3}", from_state="OnlinePartition",
                         to_state="OnlinePartition", note=f"Leader of t-{n % 3} moved: broker {n % 3} is back.",
                         detail={"leader": n % 3, "isr": (0, 1, 2), "n": n + i}) for i in range(3)])
    odd = Record(kind="broker", subject="broker:9", detail={"odd": {1, object()}})  # marshal refuses it
    bus.emit([odd])
    for n in range(3001, 3200):
        bus.emit([Record(kind="broker", subject=f"broker:{n % 3}", detail={"n": n})])
    assert [r.seq for r in bus.since(0)] == list(range(2200, 3200))
    around = bus.since(2990, limit=20)  # the end of a chunk, the odd record's chunk, the tail
    assert [r.seq for r in around] == list(range(2990, 3010))
    assert [r.detail.get("n") for r in around] == [*range(2990, 3000), None, *range(3001, 3010)]
    assert around[10].detail == odd.detail and around[0].note == "Leader of t-0 moved: broker 0 is back."
    assert [r.seq for r in bus.since(2111, limit=3)] == [2200, 2201, 2202]  # forgotten: the oldest kept
    assert [r.seq for r in bus.since(3190)] == list(range(3190, 3200))
    sealed = [chunk for chunk in bus._chunks if isinstance(chunk, bytes)]
    assert len(bus._chunks) * CHUNK + len(bus._tail) < 1000 + CHUNK  # nothing older than one chunk past the history
    assert sum(map(len, sealed)) / (len(sealed) * CHUNK) < 100  # bytes a record, where alone it takes a few hundred
    assert any(isinstance(chunk, list) for chunk in bus._chunks)  # the chunk with the odd record


def _replay(tmp_path, n=3):
    header = SessionHeader("s1", "sandbox", 0, "0.1.0", {"brokers": [0]})
    writer = ReplayWriter(tmp_path, header)
    writer([Record(kind="broker", subject="broker:0").stamped("s1", i, 0) for i in range(n)])
    writer.close()
    return writer.path


def test_replay_log_round_trip(tmp_path):
    replay = read_replay(_replay(tmp_path))
    assert replay.problem is None and replay.header.session_id == "s1" and len(replay.records) == 3


def test_a_torn_last_line_loses_only_that_record(tmp_path):
    path = _replay(tmp_path)
    text = path.read_text()
    path.write_text(text[:-7])  # the app died while writing the last record
    replay = read_replay(path)
    assert len(replay.records) == 2 and "incomplete" in replay.problem and ":4:" in replay.problem


def test_damage_in_the_middle_stops_the_replay_there_and_says_why(tmp_path):
    path = _replay(tmp_path)
    lines = path.read_text().splitlines(keepends=True)
    lines[2] = json.dumps({"v": 1, "kind": "broker", "subject": "x", "session_id": "s1", "seq": "one",
                           "ts_ms": 0}) + "\n"
    path.write_text("".join(lines))
    replay = read_replay(path)
    assert len(replay.records) == 1 and ":3:" in replay.problem and "'seq' must be int" in replay.problem


def test_each_record_is_in_the_file_as_soon_as_it_is_written(tmp_path):
    """No buffer of the writer's own: what a crash of the app would leave is every line but the
    one being written. Read through another file, before the writer is closed."""
    header = SessionHeader("s2", "sandbox", 0, "0.1.0", {"brokers": [0]})
    writer = ReplayWriter(tmp_path, header)
    try:
        for seq in range(3):
            writer([Record(kind="broker", subject="broker:0", note="é").stamped("s2", seq, 0)])
            lines = writer.path.read_bytes().splitlines()
            assert len(lines) == seq + 2 and json.loads(lines[-1])["seq"] == seq
    finally:
        writer.close()
    assert read_replay(writer.path).records[-1].note == "é"


def test_a_short_or_interrupted_write_goes_on_and_a_failed_one_says_why(tmp_path):
    path = tmp_path / "out"
    written = bytearray()
    interrupted = [True]

    def stingy(fd, data, size):
        """A write(2) that takes at most 3 bytes, and is interrupted once."""
        if interrupted.pop() if interrupted else False:
            ctypes.set_errno(errno.EINTR)
            return -1
        written.extend(data[:3])
        return min(3, size)

    write_all(0, b"a line of a log\n", stingy)
    assert bytes(written) == b"a line of a log\n"
    with open(path, "wb") as f:
        write_all(f.fileno(), b"real\n")  # libc's own
    assert path.read_bytes() == b"real\n"
    with open(path, "rb") as f, pytest.raises(OSError) as failed:
        write_all(f.fileno(), b"x")
    assert failed.value.errno == errno.EBADF


def test_the_writes_keep_the_interpreter_lock():
    """What the writer's own write is for, which no timing could show for a call of microseconds:
    ctypes' ``PyDLL`` kind of function (``_FUNCFLAG_PYTHONAPI``: called holding the lock), not
    ``CDLL``'s, which lets go of it around the call."""
    from backend.runtime import replay
    assert replay._WRITE._flags_ & ctypes._FUNCFLAG_PYTHONAPI
    assert not ctypes.CDLL(None).write._flags_ & ctypes._FUNCFLAG_PYTHONAPI  # the check can tell
