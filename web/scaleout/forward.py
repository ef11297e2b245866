"""A request for a sandbox (or class) another worker holds goes to that worker, over Redis.

Any worker accepts any request (no sticky load balancer is needed). When the sandbox or class a
request names is held elsewhere, the request is pushed onto its owner's list
(``kclab:rpc:<worker>``) with a reply key, and the answer awaited with a deadline: an owner that
does not answer (it stopped, or is stuck) is a 503 that says so. The owner runs the request
through its own app — an HTTP request as it came (method, path, headers, body, the client's
address), a socket event through the same handler a local socket would reach — so a forwarded
request gets exactly the checks and answers of a local one.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable

import redis

from web.scaleout.workers import K, Workers, gone_message
from web.service import ApiError

log = logging.getLogger(__name__)

DEADLINE_S = 30.0
"""How long a forwarded request waits for its owner (a fault may wait on ZooKeeper for seconds)."""
RPC_THREADS = 64
"""Forwarded requests run at once at most: as many as a worker's HTTP threads (``kclab serve
--threads``' default), since a forwarded fault waits on ZooKeeper as long as a local one does. With
16, two workers at 200 students had every one of them waiting on broker starts, and the forwarded
requests behind them timed out (docs/performance.md, issue 14, fifth round)."""


class Forwarder:
    def __init__(self, workers: Workers, app, calls: dict[str, Callable[..., Any]]) -> None:
        self.workers, self.app, self.calls = workers, app, calls
        self.redis = redis.Redis.from_url(workers.url, decode_responses=True, socket_timeout=DEADLINE_S + 5)
        self._stop = threading.Event()
        self._pool = ThreadPoolExecutor(RPC_THREADS, thread_name_prefix="forwarded")
        self._thread = threading.Thread(target=self._serve, name="forwarded-requests", daemon=True)

    def start(self) -> "Forwarder":
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._pool.shutdown(wait=False)

    # -- the asking side ---------------------------------------------------------------------------
    def call(self, owner: str, name: str, *args: Any) -> Any:
        """``calls[name](*args)`` run by ``owner``; its ApiError comes back as one."""
        if not self.workers.alive(owner):
            raise ApiError(503, gone_message(owner), headers={"Retry-After": "5"})
        reply = f"{K}reply:{secrets.token_hex(8)}"
        self.redis.rpush(f"{K}rpc:{owner}", json.dumps({"name": name, "args": args, "reply": reply}))
        got = self.redis.blpop([reply], timeout=DEADLINE_S)
        if got is None:
            raise ApiError(503, f"the process holding this sandbox (worker {owner}) did not answer within "
                                f"{DEADLINE_S:g} s; it may have stopped", headers={"Retry-After": "5"})
        answer = json.loads(got[1])
        if not answer["ok"]:
            raise ApiError(answer["status"], answer["message"], headers=answer["headers"], **answer["extra"])
        return answer["value"]

    # -- the owning side ---------------------------------------------------------------------------
    def _serve(self) -> None:
        queue = f"{K}rpc:{self.workers.id}"
        while not self._stop.is_set():
            try:
                got = self.redis.blpop([queue], timeout=1)
            except redis.RedisError:
                log.warning("Redis did not answer; forwarded requests wait", exc_info=True)
                self._stop.wait(1)
                continue
            if got is not None:
                self._pool.submit(self._answer, json.loads(got[1]))

    def _answer(self, request: dict) -> None:
        try:
            with self.app.app_context():
                answer = {"ok": True, "value": self.calls[request["name"]](*request["args"])}
        except ApiError as error:
            answer = {"ok": False, "status": error.status, "message": error.message, "headers": error.headers,
                      "extra": error.extra}
        except Exception as error:  # noqa: BLE001 - answered, logged: the asker must not wait out its deadline
            log.exception("a forwarded %s failed", request.get("name"))
            answer = {"ok": False, "status": 500, "message": f"the server failed: {type(error).__name__}",
                      "headers": {}, "extra": {}}
        try:
            self.redis.rpush(request["reply"], json.dumps(answer))
            self.redis.expire(request["reply"], int(DEADLINE_S) + 5)
        except redis.RedisError:
            log.warning("could not answer a forwarded %s", request.get("name"), exc_info=True)
