"""The broadcaster's round costs what the sandboxes holding records cost, and its messages go out
as python-socketio's stock packet would send them, without the walk for binary values (issue 14,
eighth round). Pure tests: stand-in sandboxes and manager; the real sockets carry these packets in
``tests/scaleout`` and ``tests/deploy/test_proxy.py``."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field

import pytest
from socketio import packet

from tests.web.sent_emits import SentEmits
from web.broadcast import SENDS_PER_SECOND, Broadcaster, room
from web.sockets import JsonPacket


@dataclass
class _Sandbox:
    """What the broadcaster reads of ``web.sandbox.Sandbox``, counting the drains."""

    id: str
    pending: list = field(default_factory=list)
    last_broadcast: float = 0.0
    drains: int = 0
    watchers: int = 0
    remote_watchers: int = 0
    acted: bool = False
    last_batch_early: bool = False

    def has_pending(self) -> bool:
        return bool(self.pending)

    def drain(self, limit: int = 500) -> list:
        self.drains += 1
        batch, self.pending, self.acted = self.pending[:limit], self.pending[limit:], False
        return batch


class _Manager:
    def __init__(self, sandboxes):
        self.sandboxes = sandboxes
        self.on_pending = None

    def all(self):
        return list(self.sandboxes)


def test_a_round_drains_only_the_sandboxes_holding_records_in_fair_order():
    sandboxes = [_Sandbox(f"s{i}", last_broadcast=float(i)) for i in range(200)]
    waiting = [sandboxes[150], sandboxes[7], sandboxes[99]]
    for n, sandbox in enumerate(waiting):
        sandbox.pending.append({"seq": n + 1})
    sent = SentEmits()
    broadcaster = Broadcaster(sent, _Manager(sandboxes))
    broadcaster.flush()
    # Served longest ago first (7, 99, 150), each its own records, to its own room.
    assert [(e.payload["sandbox"], e.payload["records"], e.payload["head"], e.to) for e in sent.emits] == [
        ("s7", [{"seq": 2}], 2, room("s7")), ("s99", [{"seq": 3}], 3, room("s99")),
        ("s150", [{"seq": 1}], 1, room("s150"))]
    # The 197 idle sandboxes were not drained: a round's cost follows the sandboxes with records.
    assert sum(s.drains for s in sandboxes) == 3 and all(s.drains == 1 for s in waiting)


def test_a_sandbox_not_yet_due_keeps_its_records_and_sets_the_wait():
    early, due = _Sandbox("early"), _Sandbox("due")
    sent = SentEmits()
    broadcaster = Broadcaster(sent, _Manager([early, due]))
    early.pending.append({"seq": 5})
    due.pending.append({"seq": 9})
    early.last_broadcast = time.monotonic()  # it has just sent a batch
    wait = broadcaster.flush()
    assert [e.payload["sandbox"] for e in sent.emits] == ["due"]
    assert early.pending == [{"seq": 5}] and early.drains == 0
    assert 0 < wait <= broadcaster.interval


def test_a_sandbox_watched_by_a_class_sends_fewer_bigger_batches_and_its_first_at_once():
    """A batch is one socket message per watching page: a class demo's batches are spaced so
    that they cost at most SENDS_PER_SECOND messages a second; a student's own are not."""
    class_demo, own = _Sandbox("class", watchers=100), _Sandbox("own", watchers=1)
    broadcaster = Broadcaster(SentEmits(), _Manager([class_demo, own]))
    assert broadcaster.interval_for(class_demo) == 100 / SENDS_PER_SECOND > broadcaster.interval
    assert broadcaster.interval_for(own) == broadcaster.interval
    # Both sent a batch a little longer ago than a student's sandbox waits between two.
    sent_at = time.monotonic() - 1.5 * broadcaster.interval
    for sandbox in (class_demo, own):
        sandbox.last_broadcast = sent_at
        sandbox.pending.append({"seq": 1})
    wait = broadcaster.flush()
    assert [e.payload["sandbox"] for e in broadcaster.socketio.emits] == ["own"]
    assert class_demo.pending == [{"seq": 1}]
    assert 0 < wait <= broadcaster.interval_for(class_demo) - 1.5 * broadcaster.interval
    # After a quiet spell the class's first records go at once, as everyone's do.
    class_demo.last_broadcast = time.monotonic() - 10
    broadcaster.flush()
    assert [e.payload["sandbox"] for e in broadcaster.socketio.emits] == ["own", "class"]


def test_an_action_in_a_watched_sandbox_goes_at_once_but_a_burst_of_actions_keeps_the_spacing():
    """The instructor's click must not wait behind the previous fault's last records for the
    class's half-second spacing; a second click inside that spacing waits, so a burst of actions
    costs at most one batch more per spacing."""
    demo = _Sandbox("class", watchers=200)
    broadcaster = Broadcaster(SentEmits(), _Manager([demo]))
    spacing = broadcaster.interval_for(demo)
    assert spacing == 0.5
    demo.last_broadcast = time.monotonic() - 0.1  # the previous fault's records went 0.1 s ago
    demo.pending.append({"seq": 7, "kind": "replica"})  # its tail, held for the spacing
    assert 0.3 < broadcaster.flush() <= 0.4 and demo.pending
    demo.pending.append({"seq": 8, "kind": "fault"})
    demo.acted = True  # what Sandbox.take_dicts sets for a fault's record
    broadcaster.flush()
    assert [e.payload["records"] for e in broadcaster.socketio.emits] == [[{"seq": 7, "kind": "replica"},
                                                                         {"seq": 8, "kind": "fault"}]]
    assert demo.last_batch_early and not demo.acted
    # Another click at once: this one keeps the spacing after the early batch.
    demo.pending.append({"seq": 9, "kind": "fault"})
    demo.acted = True
    wait = broadcaster.flush()
    assert len(broadcaster.socketio.emits) == 1 and 0.4 < wait <= spacing
    # Once the spacing has passed it goes, as a regular batch: the next click may go early again.
    demo.last_broadcast -= spacing
    broadcaster.flush()
    assert len(broadcaster.socketio.emits) == 2 and not demo.last_batch_early


def test_only_a_sandbox_followed_from_another_worker_sends_through_the_message_queue():
    """Every worker decodes every batch published to the queue: a student's own sandbox,
    watched only by pages on its own worker, must not be published at all. The real queue
    carries (and does not carry) these batches in tests/scaleout/test_workers.py."""
    mine, followed = _Sandbox("mine", watchers=1), _Sandbox("followed", watchers=3, remote_watchers=2)
    sent = SentEmits()
    for sandbox in (mine, followed):
        sandbox.pending.append({"seq": 1})
    Broadcaster(sent, _Manager([mine, followed])).flush()
    assert sorted(e.payload["sandbox"] for e in sent.emits) == ["followed", "mine"]
    assert sent.local_only() == ["mine"]


RECORDS = {"sandbox": "s1", "head": 12, "records": [
    {"seq": 11, "kind": "leader_elected", "note": "Partition t-0 got leader 2 — from the ISR [2, 1].",
     "detail": {"isr": [2, 1], "epoch": 4, "nested": {"a": [1, 2.5, None, True]}}},
    {"seq": 12, "kind": "zk", "note": "/controller changed", "detail": {"data": '{"brokerid":2}'}}]}


def test_a_json_packet_encodes_as_the_stock_packet_does_and_decodes_the_same():
    ours = JsonPacket(packet.EVENT, data=["records", RECORDS]).encode()
    stock = packet.Packet(packet.EVENT, data=["records", RECORDS]).encode()
    assert ours == stock
    assert packet.Packet(encoded_packet=ours).data == ["records", RECORDS]


def test_a_json_packet_never_walks_a_message_json_can_encode(monkeypatch):
    walked = []
    monkeypatch.setattr(packet.Packet, "data_is_binary", classmethod(lambda cls, data: walked.append(data)))
    JsonPacket(packet.EVENT, data=["records", RECORDS]).encode()
    JsonPacket(packet.ACK, data=[{"ok": True}], id=3).encode()
    assert walked == []
    packet.Packet(packet.EVENT, data=["records", RECORDS])
    assert walked  # the stock packet does walk it: the test sees the walk when it happens


@pytest.mark.parametrize("kind, binary_kind", [(packet.EVENT, packet.BINARY_EVENT), (packet.ACK, packet.BINARY_ACK)])
def test_bytes_in_a_message_still_go_as_the_stock_packet_sends_them(kind, binary_kind):
    data = ["records", {"records": [{"seq": 1, "raw": b"\x00\x01"}]}]
    ours, stock = JsonPacket(kind, data=data, id=4), packet.Packet(kind, data=data, id=4)
    assert stock.packet_type == binary_kind
    assert ours.encode() == stock.encode() and ours.packet_type == binary_kind


def test_a_value_json_cannot_encode_and_not_bytes_is_the_same_error_as_before():
    for make in (JsonPacket, packet.Packet):
        with pytest.raises(TypeError):
            make(packet.EVENT, data=["records", {"when": {1, 2}}]).encode()


def test_incoming_messages_decode_as_before():
    text = '2["fault",{"sandbox":"s1","op":"stop_broker","broker":0}]'
    assert JsonPacket(encoded_packet=text).data == packet.Packet(encoded_packet=text).data == json.loads(text[1:])


def test_the_app_sends_with_the_json_packet(app):
    server = app.extensions["kclab"].socketio.server
    assert server.packet_class is JsonPacket
    # Its decoder is still the depth-bounded one (web/sockets.py), now set on this class.
    from web.sockets import BoundedJson
    assert JsonPacket.json is BoundedJson
