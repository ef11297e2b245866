"""Socket.IO clients in child processes, as students' pages: each follows its sandboxes, drives
faults through the socket or HTTP, and reports what it received and when."""

from __future__ import annotations

import collections
import multiprocessing
import random
import threading
import time

from bench.measure import cpu_seconds


UNASKED = ("zk_disconnected", "session_lost")


class Watcher:
    """One python-socketio client joined to one sandbox's room; notes when each record arrives."""

    def __init__(self, url: str, sandbox: dict, count_kinds: bool = False) -> None:
        import socketio
        self.sandbox, self.token = sandbox["id"], sandbox["token"]
        # websocket-client checks every text frame's UTF-8 in a pure-Python loop over its bytes;
        # a browser does that natively. Left on, 50 clients use more CPU than the server they measure.
        self.sio = socketio.Client(reconnection=False, websocket_extra_options={"skip_utf8_validation": True})
        self.received: dict[int, tuple[float, int]] = {}  # seq -> (receive ms, ts_ms), first arrival
        self.batches: list[tuple[float, int, int, int]] = []  # (receive ms, first seq, newest ts_ms, records)
        self.duplicates = 0
        self.kinds: collections.Counter | None = collections.Counter() if count_kinds else None
        self.unasked: collections.Counter = collections.Counter()
        """A running broker's dropped connections and lost sessions (nobody asks for either in a
        class's mix), by the cause the record named (``detail.cause``)."""
        self.sio.on("records", self._on_records)
        self.sio.connect(url, transports=["websocket"], wait_timeout=60,
                         headers={"X-Forwarded-For": sandbox["address"]} if sandbox.get("address") else {})
        self.address = sandbox.get("address")
        self.client_index = sandbox.get("client_index", 0)
        """This client's place among every process's (``ClientPool``): what seeds its timing."""
        answer = self.sio.call("join", {"sandbox": self.sandbox, "token": self.token}, timeout=60)
        if not answer or not answer.get("ok"):
            raise RuntimeError(f"join refused: {answer}")

    def _on_records(self, payload) -> None:
        now = time.time() * 1000
        if payload.get("sandbox") != self.sandbox or "head" not in payload:
            return  # the catch-up batch sent on join holds old records: not deliveries
        received = self.received
        records = payload["records"]
        if records:
            self.batches.append((now, records[0]["seq"], max(r["ts_ms"] for r in records), len(records)))
        for record in records:
            seq = record["seq"]
            if seq in received:
                self.duplicates += 1
                continue
            received[seq] = (now, record["ts_ms"])
            if record.get("to_state") in UNASKED and record["kind"] == "broker":
                cause = (record.get("detail") or {}).get("cause") or "none named"
                self.unasked[f"{record['to_state']}: {cause}"] += 1
            if self.kinds is not None:
                self.kinds[record["kind"]] += 1

    def fault(self, body: dict, via: str, url: str, http) -> dict:
        """The answer to the fault ``body`` (``{"op": ..., ...}``); ``resent`` in it when the first
        try had to be sent again."""
        if via != "http":
            return self.sio.call("fault", {"sandbox": self.sandbox, "token": self.token, **body}, timeout=120)
        import requests
        headers = {"X-Sandbox-Token": self.token, "X-Forwarded-For": self.address or ""}

        def post() -> dict:
            return http.post(f"{url}api/sandboxes/{self.sandbox}/faults", json=body, headers=headers, timeout=120).json()
        try:
            return post()
        except requests.ConnectionError as exc:
            if not closed_before_answering(exc):
                raise
        # What a browser does (Chromium's ``ShouldResendRequest``): a kept-alive connection that
        # the server closed as the request went out (gunicorn ends idle ones after its keep-alive
        # time; a busy worker does it late) is reset without an answer, so the request was never
        # read; it is sent once more on a new connection. ``requests`` does not, and the bench
        # counted the student's fault as failed (issue 14, thirtieth round's note).
        return {**post(), "resent": True}

    def close(self) -> None:
        if self.sio.connected:
            try:
                self.sio.disconnect()
            except Exception:  # noqa: BLE001
                pass


def closed_before_answering(exc: Exception) -> bool:
    """``requests``' error for a connection reset or closed before any byte of the answer
    (``Connection aborted``: urllib3's ``ProtocolError`` of a reset, or ``RemoteDisconnected``),
    as opposed to a refused connection or a time-out."""
    return "Connection aborted" in str(exc)


def client_process(url: str, sandboxes: list[dict], conn, count_kinds: bool) -> None:
    """A child process hosting one client per entry of ``sandboxes``; talks to the bench over ``conn``.

    Messages: -> ("ready", n) once every client has joined; <- ("stop", s0, s1) -> ("result", ...)
    for a delivery run; <- ("faults", seconds, interval, via, seed, spread[, mix]) -> ("result", ...) for a
    fault run (``drive_faults``; ``spread`` ``None`` for faults spread over the whole interval).
    """
    watchers: list[Watcher] = []
    try:
        for i, sandbox in enumerate(sandboxes):
            watchers.append(Watcher(url, sandbox, count_kinds and i == 0))
        conn.send(("ready", len(watchers)))
        command = conn.recv()
        if command[0] == "stop":
            _, s0, s1 = command
            for watcher in watchers:  # stop receiving before counting
                watcher.close()
            conn.send(("result", _delivery_result(watchers, s0, s1)))
        elif command[0] == "faults":
            faults = drive_faults(url, watchers, *command[1:])
            time.sleep(2.0)  # the last faults' records are on their way
            for watcher in watchers:
                watcher.close()
            conn.send(("result", fault_result(watchers, faults)))
    except Exception as exc:  # noqa: BLE001 - the bench reports it and cleans up
        conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        for watcher in watchers:
            watcher.close()


def _delivery_result(watchers: list[Watcher], s0: int, s1: int) -> dict:
    clients = []
    for w in watchers:
        lat = [recv - ts for seq, (recv, ts) in w.received.items() if s0 <= seq < s1]
        batches = [b for b in w.batches if s0 <= b[1] < s1]
        clients.append({"received": len(lat), "duplicates": w.duplicates, "latencies": lat,
                        "kinds": dict(w.kinds) if w.kinds is not None else None,
                        # how old the newest record of each batch was on arrival (the broadcast's own
                        # delay, without the wait for the next batch), and the gaps between batches
                        "newest_in_batch": [recv - newest for recv, _, newest, _ in batches],
                        "batch_gaps": [b[0] - a[0] for a, b in zip(batches, batches[1:])],
                        "batch_sizes": [n for *_, n in batches]})
    return {"clients": clients}


STUDENT_CYCLE = ("crash_broker", "produce", "start_broker", "shutdown_broker", "start_broker", "preferred_election")
"""Issue 14's students: "crash, restart, controlled shutdown, preferred election, produce". A crash
is ``kill -9`` (the broker's session expires after ``zookeeper.session.timeout.ms``, 4 s in a
default sandbox), so the produce comes between it and the restart; the preferred election brings
the leaders back once the broker is in again. Every step is one the page offers a student."""

MIXES = ("issue", "stop-start")


def student_fault(mix: str, step: int) -> dict:
    """The body of a student's ``step``-th fault (from 0) in ``mix``.

    ``issue``: :data:`STUDENT_CYCLE` on broker 0, then 1, then 2, ...; the produce goes to the
    partition numbered as the broker (10 messages, acks=1). ``stop-start``: stop broker b (a clean
    exit, its session closed) and start it again, then the next broker — what every round of
    issue 14 before the thirty-fourth measured."""
    if mix == "stop-start":
        return {"op": "stop_broker" if step % 2 == 0 else "start_broker", "broker": (step // 2) % 3}
    op = STUDENT_CYCLE[step % len(STUDENT_CYCLE)]
    broker = (step // len(STUDENT_CYCLE)) % 3
    if op == "produce":
        return {"op": op, "topic": "t", "partition": broker, "count": 10, "acks": 1}
    if op == "preferred_election":
        return {"op": op}
    return {"op": op, "broker": broker}


def demo_fault(mix: str, step: int) -> dict:
    """The instructor's ``step``-th fault on the class cluster: broker 1 down and up again — a
    controlled shutdown in ``issue``, a clean stop in ``stop-start``."""
    if step % 2:
        return {"op": "start_broker", "broker": 1}
    return {"op": "shutdown_broker" if mix == "issue" else "stop_broker", "broker": 1}


def first_step(mix: str, rng: random.Random) -> int:
    """Where a student starts in ``mix``. In ``issue`` a place of the cycle drawn from ``rng``
    among those whose steps a cluster with every broker running allows from there on (a crash, a
    controlled shutdown, a preferred election, on any broker; not the produce, which the cycle
    follows with the crashed broker's restart): a class is spread over the cycle, not all
    crashing in the first 10 s, producing in the next, … — a first try started every student at
    the crash, so each op had its own 10 s of the window and all the crashed sessions expired in
    the same few seconds. ``stop-start`` starts at 0, as the earlier rounds did (the same draws
    of ``rng`` after it)."""
    if mix == "stop-start":
        return 0
    cycle = len(STUDENT_CYCLE)
    return rng.choice([turn * cycle + place for turn in range(3) for place in (0, 3, 5)])


def refused_for_load(answer: dict) -> bool:
    """The server refused the fault for its own load, not as Kafka would: a 429 or 503, which
    carry ``retry_after`` (``web/load_guard.py``, the per-client limits)."""
    return not answer.get("ok") and bool(answer.get("retry_after"))


def try_again(answer: dict) -> bool:
    """Whether a student sends a refused fault again at its next turn instead of moving on: one
    refused for load (:func:`refused_for_load`), as a student clicks again, and a restart
    refused because the crashed process's session has not expired yet (Kafka's
    ``NodeExistsException``, named in the 409's reason; the page says to start it again after the
    timeout). Moving on made the next turn's fault one the cluster refuses ("broker is running")
    for a step that never happened (issue 14, twenty-ninth round's note)."""
    return refused_for_load(answer) or (not answer.get("ok") and "NodeExistsException" in str(answer.get("error", "")))


def drive_faults(url: str, watchers: list[Watcher], seconds: float, interval: float, via: str, seed: int,
                 spread: float | None = None, mix: str = "stop-start") -> list:
    """Every client, in its own thread, acts once every ``interval`` s as :func:`student_fault`'s
    ``mix`` says (started at a random offset so the sandboxes do not act in lock step). The offset
    is seeded by the client's place among all the pool's clients. Until issue 14's fifteenth round
    it was seeded by the client's place in its own process, so every client process drew the same
    offsets: with 5 processes the students acted five at a time, and more than half of them within
    the same 2 s of every 10 s. ``spread`` (default ``interval``) narrows the offsets on
    purpose: with 2, every client acts within the same 2 s of each interval, as a class does when
    the instructor says "now, everybody"."""
    import requests
    faults: list[tuple] = []
    lock = threading.Lock()
    end = time.monotonic() + seconds

    def drive(index: int, watcher: Watcher) -> None:
        rng = random.Random(seed * 100_000 + watcher.client_index)
        http = requests.Session() if via == "http" else None
        next_at = time.monotonic() + rng.uniform(0, interval if spread is None else spread)
        step = first_step(mix, rng)
        while True:
            delay = min(next_at, end) - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            if time.monotonic() >= end:
                break
            body = student_fault(mix, step)
            sent = time.time() * 1000
            try:
                answer = watcher.fault(body, via, url, http) or {}
            except Exception as exc:  # noqa: BLE001 - counted as a failed fault
                answer = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}
            answered = time.time() * 1000
            with lock:
                faults.append((index, body["op"], body.get("broker"), sent, answered, answer.get("seq"),
                               bool(answer.get("ok")), answer.get("error"), bool(answer.get("resent")),
                               refused_for_load(answer)))
            if not try_again(answer):
                step += 1
            next_at += interval
            if next_at < time.monotonic():  # the fault took longer than the interval: go on at once
                next_at = time.monotonic()

    threads = [threading.Thread(target=drive, args=(i, w), daemon=True) for i, w in enumerate(watchers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 180)
    return faults


def fault_result(watchers: list[Watcher], faults: list) -> dict:
    out = []
    for index, op, broker, sent, answered, seq, ok, error, resent, busy in faults:
        got = watchers[index].received.get(seq) if seq is not None else None
        # The record's ts_ms is stamped when the server emits it (the same machine's clock): the
        # latency splits into making the record (the request's way to the fault's first record,
        # emitted before the fault is carried out) and bringing it to the page (the broadcaster,
        # the socket).
        out.append({"op": op, "ok": ok, "error": error, "resent": resent, "refused_for_load": busy,
                    "sent_ms": sent, "answer_ms": answered - sent,
                    "latency_ms": (got[0] - sent) if got else None,
                    "made_ms": (got[1] - sent) if got else None, "brought_ms": (got[0] - got[1]) if got else None})
    delivery = [recv - ts for w in watchers for recv, ts in w.received.values()]
    return {"faults": out, "delivery_latencies": delivery, "records": sum(len(w.received) for w in watchers),
            "batches": sum(len(w.batches) for w in watchers)}


class ClientPool:
    """``procs`` child processes sharing the clients; each sandbox entry is one client."""

    def __init__(self, url: str, sandboxes: list[dict], procs: int, count_kinds: bool = False, target=None) -> None:
        """``target``: what each child runs (``client_process``; bench/classroom.py's students follow a class too)."""
        ctx = multiprocessing.get_context("spawn")
        procs = max(1, min(procs, len(sandboxes)))
        self.workers = []
        numbered = [{**sandbox, "client_index": n} for n, sandbox in enumerate(sandboxes)]
        for i in range(procs):
            mine = numbered[i::procs]
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=target or client_process, args=(url, mine, child, count_kinds and i == 0),
                               daemon=True,
                               name=f"clients-{i}")
            proc.start()
            self.workers.append((proc, parent))

    def _recv(self, conn, timeout: float):
        if not conn.poll(timeout):
            raise TimeoutError(f"a client process did not answer within {timeout:.0f} s")
        message = conn.recv()
        if message[0] == "error":
            raise RuntimeError(f"a client process failed: {message[1]}")
        return message

    def cpu(self) -> float:
        """CPU seconds so far of all client processes together."""
        total = 0.0
        for proc, _ in self.workers:
            try:
                total += cpu_seconds(proc.pid)
            except OSError:
                pass
        return total

    def wait_ready(self, timeout: float = 300) -> int:
        return sum(self._recv(conn, timeout)[1] for _, conn in self.workers)

    def command(self, *message, timeout: float = 300) -> list[dict]:
        for _, conn in self.workers:
            conn.send(message)
        return [self._recv(conn, timeout)[1] for _, conn in self.workers]

    def close(self) -> None:
        for proc, conn in self.workers:
            proc.join(15)
            if proc.is_alive():
                proc.kill()
                proc.join(5)
            conn.close()
