"""The app's own ZooKeeper session: is ZooKeeper there, and which chroots are still owned.

One kazoo client at the root of the ensemble, per app process, with a short session that it
renews for ever (never more than a second between attempts, where kazoo's default backs off to
an hour). It does two jobs:

- **Health.** Its connection state (``connected``, ``suspended``, ``lost``) is the app's
  answer to "is ZooKeeper there?" (``web/zk_health.py``).
- **Chroot ownership.** Each cluster the process runs claims its chroot with an ephemeral znode
  ``/kclab-owners/<chroot>`` held by this session. When the process dies — an out-of-memory
  kill, ``kill -9``, a machine lost — its session expires and ZooKeeper itself deletes the
  claims; :meth:`AppSession.sweep`, run by every app at start-up and then periodically, deletes
  chroots under ``/kclab`` that nobody claims, that hold no ephemeral znode (no live broker) and
  that are older than a grace period, so a process on another machine sharing the ensemble never
  loses a live sandbox. After its own session was lost the process claims its chroots again.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Callable

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (ConnectionClosedError, ConnectionLoss, KazooException, NodeExistsError, NoNodeError,
                              NotEmptyError, OperationTimeoutError, SessionExpiredError)
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.retry import KazooRetry, RetryFailedError

from backend.zk.client import create_recursive
from backend.zk.paths import KCLAB_ROOT

log = logging.getLogger(__name__)
OWNERS_ROOT = "/kclab-owners"
SESSION_TIMEOUT_S = 4.0
CALL_TIMEOUT_S = 5.0
ZK_ERRORS = (ConnectionLoss, ConnectionClosedError, SessionExpiredError, OperationTimeoutError, KazooTimeoutError,
             RetryFailedError)
"""kazoo's ways of saying ZooKeeper did not answer (``RetryFailedError``: a read that kept
retrying through a dropped connection until its deadline, ``operator.READ_DEADLINE_S``)."""
_STATES = {KazooState.CONNECTED: "connected", KazooState.SUSPENDED: "suspended", KazooState.LOST: "lost"}


def owner_path(chroot: str) -> str:
    return OWNERS_ROOT + chroot


class AppSession:
    def __init__(self, hosts: str, on_state: Callable[[str], None] = lambda state: None) -> None:
        self.hosts = hosts
        self.on_state = on_state
        self.claimed: set[str] = set()
        self._lost = False
        self._lock = threading.Lock()
        retry = KazooRetry(max_tries=-1, delay=0.1, backoff=2, max_delay=1.0)
        self.client = KazooClient(hosts=hosts, timeout=SESSION_TIMEOUT_S, connection_retry=retry)
        self.client.add_listener(self._listener)

    def start(self, wait_s: float = 0.0) -> bool:
        """Connect in the background; with ``wait_s``, wait that long for the connection.
        Returns whether it is connected."""
        self.client.start_async()
        deadline = time.monotonic() + wait_s
        while not self.client.connected and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.client.connected

    def stop(self) -> None:
        self.client.remove_listener(self._listener)
        try:
            self.client.stop()
            self.client.close()
        except Exception:  # noqa: BLE001 - shutting down
            log.debug("closing the app's ZooKeeper session", exc_info=True)

    def _listener(self, state) -> None:  # kazoo's thread: note, hand on, return
        name = _STATES.get(state, str(state).lower())
        if name == "lost":
            self._lost = True
        elif name == "connected" and self._lost:
            self._lost = False
            threading.Thread(target=self._claim_again, name="zk-reclaim", daemon=True).start()
        self.on_state(name)

    # -- ownership -----------------------------------------------------------------------------------
    def claim(self, chroot: str) -> None:
        """This process owns ``chroot`` for as long as its session lives."""
        with self._lock:
            self.claimed.add(chroot)
        self._create_claim(chroot)

    def release(self, chroot: str) -> None:
        with self._lock:
            self.claimed.discard(chroot)
        try:
            self.client.delete_async(owner_path(chroot)).get(timeout=CALL_TIMEOUT_S)
            parent = owner_path(chroot).rsplit("/", 1)[0]
            if parent != owner_path(KCLAB_ROOT):  # a one-off chroot's parents (tests, --chroot) go too
                self.client.delete_async(parent).get(timeout=CALL_TIMEOUT_S)
        except (NoNodeError, NotEmptyError, *ZK_ERRORS):
            pass  # gone already, still in use, or gone with the session

    def _create_claim(self, chroot: str) -> None:
        """The claim's parents through ``create_recursive`` rather than kazoo's ``ensure_path``,
        whose closures make a cycle with the client on every claim (``backend/zk/client.py``)."""
        path = owner_path(chroot)
        create_recursive(self.client, path.rsplit("/", 1)[0], timeout=CALL_TIMEOUT_S)
        try:
            self.client.create_async(path, b"", ephemeral=True).get(timeout=CALL_TIMEOUT_S)
        except NodeExistsError:
            pass

    def _claim_again(self) -> None:
        """A new session after the old one expired: its claims went with it."""
        for chroot in list(self.claimed):
            try:
                self._create_claim(chroot)
            except KazooException:
                log.warning("could not claim %s again", chroot, exc_info=True)

    # -- the sweep -------------------------------------------------------------------------------------
    def sweep(self, root: str = KCLAB_ROOT, grace_s: float = 60.0, now: float | None = None) -> list[str]:
        """Delete every chroot below ``root`` whose owner's session is gone; returns them."""
        now = time.time() if now is None else now
        try:
            names = self.client.get_children_async(root).get(timeout=CALL_TIMEOUT_S)
        except NoNodeError:
            return []
        swept = []
        for name in names:
            chroot = f"{root}/{name}"
            if chroot in self.claimed or self.client.exists_async(owner_path(chroot)).get(timeout=CALL_TIMEOUT_S):
                continue
            stat = self.client.exists_async(chroot).get(timeout=CALL_TIMEOUT_S)
            if stat is None or now - stat.ctime / 1000 < grace_s or self._has_ephemeral(chroot):
                continue
            try:
                self.client.delete(chroot, recursive=True)
                swept.append(chroot)
            except NoNodeError:
                pass
            except NotEmptyError:  # something appeared meanwhile: alive after all
                continue
        return swept

    def _has_ephemeral(self, chroot: str) -> bool:
        stack = [chroot]
        while stack:
            path = stack.pop()
            try:
                stat = self.client.exists_async(path).get(timeout=CALL_TIMEOUT_S)
                children = self.client.get_children_async(path).get(timeout=CALL_TIMEOUT_S)
            except NoNodeError:
                continue
            if stat is not None and stat.ephemeralOwner:
                return True
            stack.extend(f"{path}/{child}" for child in children)
        return False
