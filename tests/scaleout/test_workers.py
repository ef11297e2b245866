"""Several worker processes as one app: a sandbox in each, answered from either; a class held by
one followed by students connected to the other, with a reload mid-stream that loses and repeats
nothing; a hand-out of private copies asked of the other worker, announced to the pages there;
the cap counted across workers; a worker killed (SIGKILL): its sandboxes' pages and API
say so, and every other sandbox goes on."""

from __future__ import annotations

import json
import os
import signal
import threading

import socketio

from tests.scaleout.conftest import CAP
from tests.support import wait_until
from web.broadcast import room as sandbox_room

ONE = {"cluster": {"brokers": [0, 1]}}


def _h(sandbox):
    return {"X-Sandbox-Token": sandbox["token"]}


def _new(worker) -> dict:
    status, body, _ = worker.call("POST", "/api/sandboxes", ONE)
    assert status == 201, body
    return body


def _held_by_b(b, shared, sandbox) -> bool:
    """Whether worker B's process holds ``sandbox`` (a worker's id is ``host-pid-tag``)."""
    owner = shared.hget("kclab:places", sandbox["id"]).split("|")[0]
    return int(owner.rsplit("-", 2)[1]) == b.worker_pid()


def _close(worker, sandbox) -> None:
    worker.call("DELETE", f"/api/sandboxes/{sandbox['id']}", headers=_h(sandbox))


class Page:
    """A page's socket: the records it received, by sandbox, and every other event."""

    def __init__(self, worker):
        self.sio = socketio.Client(reconnection=False)
        self.records: dict[str, list[dict]] = {}
        self.events: list[tuple[str, dict]] = []
        self.sio.on("records", lambda p: self.records.setdefault(p["sandbox"], []).extend(p["records"]))
        self.sio.on("*", lambda event, payload=None: self.events.append((event, payload)))
        self.sio.connect(worker.url, transports=["websocket"], wait_timeout=20)

    def ask(self, event, data):
        return self.sio.call(event, data, timeout=30)

    def seqs(self, sandbox_id):
        return {r["seq"] for r in self.records.get(sandbox_id, [])}

    def close(self):
        self.sio.disconnect()


def test_a_sandbox_in_each_worker_answers_from_either_and_the_cap_counts_both(pair, shared):
    a, b = pair
    on_a, on_b = _new(a), _new(b)
    try:
        owners = shared.hgetall("kclab:places")
        assert owners[on_a["id"]].split("|")[0] != owners[on_b["id"]].split("|")[0]  # a sandbox in each worker
        # B acts on A's sandbox (forwarded to its owner), and a page on B follows it live.
        page = Page(b)
        try:
            joined = page.ask("join", {"sandbox": on_a["id"], "token": on_a["token"]})
            assert joined["ok"] and joined["sandbox"]["id"] == on_a["id"], joined
            status, body, _ = b.call("POST", f"/api/sandboxes/{on_a['id']}/faults", {"op": "stop_broker", "broker": 1},
                                     headers=_h(on_a))
            assert status == 200, body
            wait_until(lambda: body["seq"] in page.seqs(on_a["id"]), 20, "the fault's record on B's page")
            ack = page.ask("fault", {"sandbox": on_a["id"], "token": on_a["token"], "op": "start_broker",
                                     "broker": 1})
            assert ack["ok"], ack
            assert b.call("GET", f"/api/sandboxes/{on_a['id']}", headers={"X-Sandbox-Token": "wrong"})[0] == 403
        finally:
            page.close()
        # The cap counts both workers' sandboxes: A refuses once A and B together hold CAP.
        more = [_new(w) for w in (a, b, a, b)]
        status, body, headers = a.call("POST", "/api/sandboxes", ONE)
        assert status == 503 and body["running"] == CAP and headers["Retry-After"], body
        for sandbox in more:
            _close(b, sandbox)  # closed through either worker
    finally:
        _close(a, on_a)
        _close(a, on_b)
    assert shared.hlen("kclab:places") == 0


def test_new_sandboxes_go_to_the_worker_that_holds_fewest(pair, shared):
    a, b = pair
    assert shared.hlen("kclab:places") == 0
    made = [_new(a) for _ in range(4)]  # every one asked of worker A, as one keep-alive client would
    try:
        owners = [shared.hget("kclab:places", s["id"]).split("|")[0] for s in made]
        assert len(set(owners)) == 2 and owners.count(owners[0]) == 2, owners  # two on each worker
        for sandbox in made:  # each answers through A, wherever it runs
            assert a.call("GET", f"/api/sandboxes/{sandbox['id']}", headers=_h(sandbox))[0] == 200
    finally:
        for sandbox in made:
            _close(a, sandbox)


def test_a_class_on_one_worker_is_followed_from_the_other_through_a_reload(pair):
    a, b = pair
    ih = {"X-Instructor-Token": a.token}
    status, room, _ = a.call("POST", "/api/classes", {}, headers=ih)
    assert status == 201
    assert a.call("POST", f"/api/classes/{room['id']}/session", ONE, headers=ih)[0] == 201
    status, joined, _ = b.call("POST", "/api/classes/join", {"code": room["code"], "name": "Ada"})  # on B
    assert status == 201, joined
    member = {"class": room["id"], "token": joined["token"]}
    first = Page(b)
    answer = first.ask("join_class", member)
    assert answer["ok"] and answer["snapshot"] is not None, answer
    session = answer["class"]["session"]
    stop = threading.Event()

    def demo():  # the instructor's stream of faults, on A
        for n in range(40):
            if stop.is_set():
                return
            op = "stop_broker" if n % 2 == 0 else "start_broker"
            a.call("POST", f"/api/classes/{room['id']}/faults", {"op": op, "broker": 1}, headers=ih)

    streaming = threading.Thread(target=demo)
    streaming.start()
    try:
        wait_until(lambda: len(first.seqs(session)) >= 6, 30, "the demo's records on the student's page")
        first.close()  # the student reloads mid-stream
        second = Page(b)
        again = second.ask("join_class", member)
        assert again["ok"], again
        snapshot_seq = again["snapshot"]["seq"]
    finally:
        streaming.join(120)
        stop.set()
    status, owner_records, _ = a.call("GET", f"/api/classes/{room['id']}/records?since=0", headers=ih)
    last = owner_records["records"][-1]["seq"]
    wait_until(lambda: max(second.seqs(session) | {snapshot_seq}) >= last, 30, "the stream's end on the page")
    got = {}
    for record in second.records[session]:
        assert got.setdefault(record["seq"], record) == record  # a repeat is the same record (the page dedupes)
    after = {seq for seq in got if snapshot_seq < seq <= last}  # (records after ``last`` may still come)
    assert after == set(range(snapshot_seq + 1, last + 1))  # nothing lost after the snapshot
    by_seq = {r["seq"]: r for r in owner_records["records"]}
    assert all(got[seq] == by_seq[seq] for seq in after)
    second.close()


class Queue:
    """The message queue's channel as a worker sees it: the sandboxes whose ``records`` batches
    were published to their room on every worker, with the seqs each batch held (only batches to
    the sandbox's room count; a join's catch-up goes to the joining socket without the queue,
    ``tests/web/test_sockets.py``)."""

    CHANNEL = "flask-socketio"

    def __init__(self, shared):
        self.listener = shared.pubsub(ignore_subscribe_messages=True)
        self.listener.subscribe(self.CHANNEL)
        self.published: dict[str, set[int]] = {}

    def seqs(self, sandbox_id) -> set[int]:
        while (message := self.listener.get_message(timeout=0.05)) is not None:
            data = json.loads(message["data"])
            if data.get("method") == "emit" and data.get("event") == "records":
                [payload] = data["data"]
                if data.get("room") != sandbox_room(payload["sandbox"]):
                    continue
                self.published.setdefault(payload["sandbox"], set()).update(r["seq"] for r in payload["records"])
        return self.published.get(sandbox_id, set())

    def close(self):
        self.listener.close()


def test_only_a_sandbox_followed_from_the_other_worker_is_published_to_it(pair, shared):
    """Each worker decodes every batch published: a sandbox watched only on its own worker goes
    to its pages alone; once a page on the other worker follows it, its batches go through the
    queue, and that page misses nothing after its snapshot."""
    a, b = pair
    box = _new(a)
    owner, other = (b, a) if _held_by_b(b, shared, box) else (a, b)
    queue, here = Queue(shared), Page(owner)
    there = None
    try:
        assert here.ask("join", {"sandbox": box["id"], "token": box["token"]})["ok"]
        status, first, _ = owner.call("POST", f"/api/sandboxes/{box['id']}/faults", {"op": "stop_broker", "broker": 1},
                                      headers=_h(box))
        assert status == 200, first
        wait_until(lambda: first["seq"] in here.seqs(box["id"]), 20, "the fault's record on the owner's page")
        sent_alone = set(here.seqs(box["id"]))  # sent before any page elsewhere followed
        there = Page(other)
        joined = there.ask("join", {"sandbox": box["id"], "token": box["token"]})
        assert joined["ok"], joined
        status, second, _ = other.call("POST", f"/api/sandboxes/{box['id']}/faults",
                                       {"op": "start_broker", "broker": 1}, headers=_h(box))
        assert status == 200, second
        wait_until(lambda: second["seq"] in queue.seqs(box["id"]), 20, "the second fault's records in the queue")
        wait_until(lambda: second["seq"] in there.seqs(box["id"]), 20, "the second fault's record on the other page")
        # Published in order by the owner: had the first batches gone through the queue, they
        # would have come before the second fault's.
        assert not queue.seqs(box["id"]) & sent_alone
        assert here.seqs(box["id"]) >= {second["seq"]}  # the owner's page still gets every batch
        snapshot_seq = joined["snapshot"]["seq"]
        assert set(range(snapshot_seq + 1, second["seq"] + 1)) <= there.seqs(box["id"])  # nothing lost
    finally:
        for page in (here, there):
            if page is not None:
                page.close()
        queue.close()
        _close(a, box)


def test_a_hand_out_asked_of_the_other_worker_reaches_students_and_instructor_there(pair):
    a, b = pair
    ih = {"X-Instructor-Token": a.token}
    status, room, _ = a.call("POST", "/api/classes", {}, headers=ih)  # the class lives on A
    assert status == 201 and a.call("POST", f"/api/classes/{room['id']}/session", ONE, headers=ih)[0] == 201
    status, joined, _ = b.call("POST", "/api/classes/join", {"code": room["code"], "name": "Bo"})
    assert status == 201, joined
    student, instructor = Page(b), Page(b)  # both connected to B
    try:
        assert student.ask("join_class", {"class": room["id"], "token": joined["token"]})["ok"]
        assert instructor.ask("join_class", {"class": room["id"], "token": a.token})["ok"]
        status, answer, _ = b.call("POST", f"/api/classes/{room['id']}/fork", {}, headers=ih)  # run by A
        assert status == 202 and answer["handout"]["total"] == 1, answer
        copy = wait_until(lambda: next((p for e, p in student.events if e == "private_sandbox"), None), 60,
                          "the student's copy announced on B")
        wait_until(lambda: any(e == "class_handout" and p["status"] == "done" for e, p in instructor.events), 30,
                   "the hand-out's progress on the instructor's page on B")
        status, done, _ = b.call("GET", f"/api/classes/{room['id']}/handout", headers=ih)
        assert status == 200 and (done["built"], done["failed"]) == (1, []), done
        assert b.call("GET", f"/api/sandboxes/{copy['sandbox']}", headers=_h(copy))[0] == 200
        _close(b, {"id": copy["sandbox"], "token": copy["token"]})
    finally:
        student.close()
        instructor.close()


def test_a_killed_worker_is_said_and_the_others_go_on(pair, shared):
    a, b = pair
    made = []
    while len({_held_by_b(b, shared, s) for s in made}) < 2:  # new sandboxes go where fewest are
        assert len(made) < CAP, "no sandbox was made on one of the workers"
        made.append(_new(a))
    doomed = next(s for s in made if _held_by_b(b, shared, s))
    living = next(s for s in made if not _held_by_b(b, shared, s))
    for extra in made:
        if extra not in (doomed, living):
            _close(a, extra)
    page = Page(a)
    try:
        assert page.ask("join", {"sandbox": doomed["id"], "token": doomed["token"]})["ok"]
        os.kill(b.worker_pid(), signal.SIGKILL)  # gunicorn's worker of B, holding ``doomed``
        wait_until(lambda: any(e == "sandbox_gone" and p["sandbox"] == doomed["id"] for e, p in page.events), 30,
                   "the page told that its sandbox's process stopped")
        gone = next(p for e, p in page.events if e == "sandbox_gone")
        assert "process holding this sandbox stopped" in gone["error"]
        status, body, _ = a.call("POST", f"/api/sandboxes/{doomed['id']}/faults", {"op": "crash_broker", "broker": 0},
                                 headers=_h(doomed))
        assert status == 503 and "process holding this sandbox stopped" in body["error"], body
        assert doomed["id"] not in shared.hgetall("kclab:places")  # its place is free again
        status, body, _ = a.call("POST", f"/api/sandboxes/{living['id']}/faults", {"op": "crash_broker", "broker": 0},
                                 headers=_h(living))
        assert status == 200, body  # every other sandbox goes on
    finally:
        page.close()
        _close(a, living)


def test_the_instructor_sees_every_workers_load_from_either(pair, shared):
    """The class's load (``web/server_load.py``) adds up every worker's figures, as each last
    published them with its heart-beat, whichever worker answers the instructor's page."""
    a, b = pair
    ih = {"X-Instructor-Token": a.token}
    status, room, _ = a.call("POST", "/api/classes", {}, headers=ih)
    assert status == 201, room
    on_a, on_b = _new(a), _new(b)
    try:
        def both_counted():  # the other worker's figures are as of its last heart-beat: up to a second old
            status, load, _ = b.call("GET", f"/api/classes/{room['id']}/load", headers=ih)
            assert status == 200, load
            return (len(load["workers"]) == 2 and all(w["sandboxes"] >= 1 for w in load["workers"])
                    and load["sandboxes"] == shared.hlen("kclab:places") and load)
        load = wait_until(both_counted, 15, "both workers' loads, a sandbox in each, every place counted")
        assert len({w["worker"] for w in load["workers"]}) == 2
        assert load["sandboxes"] == sum(w["sandboxes"] for w in load["workers"])
        assert load["cap"] == CAP and load["shedding"] is False
        for name in ("refused", "zk_dropped", "zk_expired"):
            assert load[name] == sum(w[name] for w in load["workers"])
        assert b.call("GET", f"/api/classes/{room['id']}/load")[0] == 403
    finally:
        _close(a, on_a)
        _close(a, on_b)
