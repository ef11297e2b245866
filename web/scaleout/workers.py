"""The workers of one app, as Redis sees them: who is alive, who holds which sandbox and class,
and the places under the cap, counted across every worker.

Each worker registers itself and keeps a heartbeat key alive (``HEARTBEAT_S``, expiring after
``DEAD_AFTER_S``). A sandbox's place records its owner (``kclab:places``: session -> worker and
client), so the cap counts every worker's sandboxes and any worker finds a sandbox's owner; a
class's owner and join code are recorded the same way. Every worker looks for workers whose
heartbeat stopped (killed, out of memory); the first to see one (``SREM`` answers 1 to one worker
only) frees its places and tells the pages of its sandboxes (``on_gone``), and its sandboxes'
later requests get a 503 that says what happened instead of a 404.
"""

from __future__ import annotations

import json
import logging
import os
import secrets
import socket
import threading
from collections import Counter
from pathlib import Path
from typing import Callable

import redis

from web.capacity import Capacity
from web.places import client_full, full

log = logging.getLogger(__name__)

HEARTBEAT_S = 1.0
DEAD_AFTER_S = 4.0
GONE_KEPT_S = 24 * 3600
K = "kclab:"
WORKERS, PLACES, CLIENTS, CLASS_OWNER, CLASS_CODE, GONE = (K + n for n in (
    "workers", "places", "client-places", "class-owner", "class-code", "gone"))

_TAKE = """
local n = redis.call('HLEN', KEYS[1])
if n >= tonumber(ARGV[4]) then return {0, n} end
if ARGV[3] ~= '' and tonumber(ARGV[5]) > 0 then
  local held = tonumber(redis.call('HGET', KEYS[2], ARGV[3]) or '0')
  if held >= tonumber(ARGV[5]) then return {-1, held} end
  redis.call('HINCRBY', KEYS[2], ARGV[3], 1)
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. '|' .. ARGV[3])
return {1, n + 1}
"""
_GIVE_BACK = """
local held = redis.call('HGET', KEYS[1], ARGV[1])
if not held then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
local client = string.sub(held, string.find(held, '|', 1, true) + 1)
if client ~= '' and tonumber(redis.call('HINCRBY', KEYS[2], client, -1)) <= 0 then
  redis.call('HDEL', KEYS[2], client)
end
return 1
"""


def runs_here(worker: str) -> bool:
    """Whether ``worker`` (``host-pid-tag``, as :class:`Workers` names itself) is a live process
    of this machine. A killed worker is reaped by gunicorn at once; a zombie counts as gone."""
    try:
        host, pid, _ = worker.rsplit("-", 2)
        stat = Path(f"/proc/{int(pid)}/stat").read_text()
    except (ValueError, OSError):
        return False
    return host == socket.gethostname() and stat.rsplit(")", 1)[-1].split()[0] not in ("Z", "X")


def gone_message(worker: str) -> str:
    return (f"the process holding this sandbox stopped (worker {worker}); its cluster is gone, its replay log "
            f"is kept: start a new sandbox")


class Workers:
    """This worker's view of all of them (one per worker process)."""

    def __init__(self, url: str, capacity: Capacity, per_client: int | None,
                 on_gone: Callable[[str, list[str]], None] = lambda worker, sandboxes: None) -> None:
        self.redis = redis.Redis.from_url(url, decode_responses=True, socket_timeout=10, socket_connect_timeout=5)
        self.url = url
        self.id = f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(2)}"
        self.capacity, self.per_client, self.on_gone = capacity, per_client, on_gone
        self._take = self.redis.register_script(_TAKE)
        self._give_back = self.redis.register_script(_GIVE_BACK)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="worker-heartbeat", daemon=True)
        self.describe_load: Callable[[], dict] | None = None
        """This worker's load (``web/server_load.this_worker``), published with each heart-beat for
        the instructor's page, which another worker may serve."""

    # -- life --------------------------------------------------------------------------------------
    def start(self) -> "Workers":
        self._beat()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        try:
            self.redis.delete(K + "alive:" + self.id)
            self.redis.srem(WORKERS, self.id)
        except redis.RedisError:
            pass

    def _beat(self) -> None:
        """Alive for ``DEAD_AFTER_S`` more; registered again each time (a restarted Redis is empty)."""
        with self.redis.pipeline() as beat:
            beat.set(K + "alive:" + self.id, os.getpid(), px=int(DEAD_AFTER_S * 1000))
            beat.sadd(WORKERS, self.id)
            if self.describe_load is not None:
                beat.set(K + "load:" + self.id, json.dumps(self.describe_load()), px=int(DEAD_AFTER_S * 1000))
            beat.execute()

    def others_load(self) -> list[dict]:
        """The other live workers' loads, as each last published it (a second old at most)."""
        try:
            others = sorted(w for w in self.redis.smembers(WORKERS) if w != self.id)
            loads = self.redis.mget([K + "load:" + w for w in others]) if others else []
        except redis.RedisError:
            log.warning("Redis did not answer for the other workers' load", exc_info=True)
            return []
        return [{"worker": w, **json.loads(load)} for w, load in zip(others, loads) if load]

    def _run(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            try:
                self._beat()
                self.bury_dead()
            except redis.RedisError:
                log.warning("Redis did not answer this worker's heartbeat; trying again", exc_info=True)

    def alive(self, worker: str) -> bool:
        """Its heartbeat is fresh, or it is a process of this machine that still runs: a worker
        starved of the CPU for ``DEAD_AFTER_S`` is slow, not dead (measured: 200 active students
        on two workers of a 2-core machine), and burying it would free the places of sandboxes
        that still run and tell their pages they are gone. A worker on another machine has only
        its heartbeat to go by."""
        return worker == self.id or bool(self.redis.exists(K + "alive:" + worker)) or runs_here(worker)

    def bury_dead(self) -> list[str]:
        """Workers whose heartbeat stopped: free their places, tell their sandboxes' pages."""
        buried = []
        for worker in self.redis.smembers(WORKERS):
            if self.alive(worker) or not self.redis.srem(WORKERS, worker):
                continue  # alive, or another worker is burying it
            sandboxes = [s for s, held in self.redis.hgetall(PLACES).items() if held.split("|")[0] == worker]
            message = gone_message(worker)
            if sandboxes:
                self.redis.hset(GONE, mapping={s: message for s in sandboxes})
                self.redis.expire(GONE, GONE_KEPT_S)
            for sandbox in sandboxes:
                self._give_back(keys=[PLACES, CLIENTS], args=[sandbox])
            for class_id, owner in self.redis.hgetall(CLASS_OWNER).items():
                if owner == worker:
                    self.redis.hdel(CLASS_OWNER, class_id)
            log.warning("worker %s stopped; its %d sandbox(es) are gone", worker, len(sandboxes))
            self.on_gone(worker, sandboxes)
            buried.append(worker)
        return buried

    # -- places (web/places.py's interface, counted across workers) ---------------------------------
    def take(self, session_id: str, client: str | None) -> None:
        status, count = self._take(keys=[PLACES, CLIENTS], args=[session_id, self.id, client or "",
                                                                 self.capacity.sandboxes, self.per_client or 0])
        if status == 0:
            raise full(count, self.capacity)
        if status == -1:
            raise client_full(count, self.per_client)

    def give_back(self, session_id: str) -> None:
        self._give_back(keys=[PLACES, CLIENTS], args=[session_id])

    def running(self) -> int:
        return self.redis.hlen(PLACES)

    # -- who holds what ---------------------------------------------------------------------------
    def owner_of_sandbox(self, sandbox_id: str) -> str | None:
        held = self.redis.hget(PLACES, sandbox_id)
        return held.split("|")[0] if held else None

    def fewer_elsewhere(self) -> str | None:
        """The live worker holding the fewest sandboxes, when that is fewer than this one holds;
        ``None``: a new sandbox is made here. Which worker takes a request is the kernel's choice
        (or a load balancer's), and one keep-alive connection puts every sandbox its client makes
        on one worker: measured with two workers at 200 students, one held ~150 sandboxes at 66 %
        of a core while the other held ~35 at 3 %."""
        held = Counter(owner.split("|")[0] for owner in self.redis.hvals(PLACES))
        others = sorted((held[w], w) for w in self.redis.smembers(WORKERS) if w != self.id)
        for count, worker in others:
            if count >= held[self.id]:
                return None
            if self.alive(worker):
                return worker
        return None

    def gone(self, sandbox_id: str) -> str | None:
        return self.redis.hget(GONE, sandbox_id)

    def hold_class(self, class_id: str, code: str) -> None:
        self.redis.hset(CLASS_OWNER, class_id, self.id)
        self.redis.hset(CLASS_CODE, code, class_id)

    def owner_of_class(self, class_id: str) -> str | None:
        return self.redis.hget(CLASS_OWNER, class_id)

    def class_of_code(self, code: str) -> str | None:
        return self.redis.hget(CLASS_CODE, code)

    def codes_taken(self) -> set[str]:
        return set(self.redis.hkeys(CLASS_CODE))
