"""The cluster's operator session: what an operator's tools do, and what the lab's checks read.

Besides its brokers, each cluster keeps one session of its own in its chroot, as a person at a
terminal would: Kafka's admin tools write through it (``admin``: ``kafka-topics.sh``,
``kafka-reassign-partitions.sh``…), ``zkCli.sh``'s ``deleteall /controller`` goes through it,
and the observer that reports every znode change watches through it. It also answers the
reads of the lab's own checks (an ``expect`` step, a lesson's question): who is controller,
each partition's state znode, any znode's bytes, the whole tree's versions. It is nobody's
broker: it registers nothing and holds no ephemeral znode.
"""

from __future__ import annotations

import functools
import threading
import time
from typing import Callable, Iterable

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, NoNodeError, NotEmptyError
from kazoo.handlers.threading import KazooTimeoutError
from kazoo.protocol.states import EventType
from kazoo.retry import KazooRetry

from backend.core.model import LeaderIsrAndControllerEpoch, TopicPartition
from backend.core.records import Record
from backend.zk import codec, paths
from backend.zk.admin import AdminZkClient
from backend.zk.client import create_recursive
from backend.zk.handler import PollingThreadingHandler
from backend.zk.observer import ZkObserver
from backend.zk.session_loop import use_session_loop
from backend.zk.teardown import end

START_TIMEOUT_S = 15
SESSION_TIMEOUT_S = 30.0
"""The session timeout of Kafka 2.8's own ZooKeeper tools: ``kafka-topics.sh``,
``kafka-reassign-partitions.sh``, ``kafka-configs.sh`` and the preferred-replica election
command open their ``KafkaZkClient`` with 30000 ms, and ``zookeeper-shell.sh`` (ZooKeeper's
``ZooKeeperMain``) asks for 30000 too. kazoo's default is 10 s. A client pings every third of its
session timeout, so this session pings every ~10 s instead of every ~3 s: a tenth of an idle
sandbox's pings (its three brokers, at the lab's 4 s, ping about once a second each)."""
READ_DEADLINE_S = 15
"""How long a check's read waits in all, through a dropped connection (e.g. while an ensemble
loses the server this session was on and it moves to another) and through a connection that
hears nothing, before it gives up (``OperatorSession._ask`` says why both)."""
WATCH_TRIES = 5
"""How many times :meth:`OperatorSession.watch_ephemeral` asks again after a dropped connection
lost its question (each is queued until the session reconnects, so they do not spin)."""


class OperatorSession:
    def __init__(self, zk_hosts: str, chroot: str) -> None:
        """``zk_hosts`` without chroot; the session lives in ``chroot`` (created if missing)."""
        self.zk_hosts = zk_hosts
        self.chroot = chroot
        # Reconnect for ever but never more than 2 s apart (kazoo's default backs off to an hour):
        # after a ZooKeeper outage the page's view of the tree must come back with it.
        self._client = use_session_loop(KazooClient(
            hosts=zk_hosts + chroot, handler=PollingThreadingHandler(), timeout=SESSION_TIMEOUT_S,
            connection_retry=KazooRetry(max_tries=-1, delay=0.1, backoff=2, max_delay=2.0)))
        self.admin = AdminZkClient(self._client)
        self._observer: ZkObserver | None = None
        self._chroot_made = False

    @property
    def session_id(self) -> int | None:
        """The session's id (``None`` before it first connects)."""
        client_id = self._client.client_id
        return client_id[0] if client_id else None

    def start(self) -> None:
        with _root_session(self.zk_hosts) as root:
            create_recursive(root, self.chroot, timeout=START_TIMEOUT_S)
        self._chroot_made = True
        self._client.start(timeout=START_TIMEOUT_S)

    def observe(self, emit: Callable[[list[Record]], object], owner_of_session: Callable[[str], int | None],
                persistent_watch: bool = False) -> None:
        """Report every change of the tree as a ``zk`` record, from now until :meth:`close`;
        ``persistent_watch`` when every server is ZooKeeper 3.6+ (``backend/zk/observer.py``)."""
        self._observer = ZkObserver(self._client, emit, owner_of_session, persistent=persistent_watch)
        self._observer.start()

    def stop_observing(self) -> None:
        if self._observer is not None:
            self._observer.close()

    def close(self, delete_chroot: bool) -> None:
        """End the session; first delete the chroot when asked (which may fail with ZooKeeper
        away: the app's sweep removes it later). Nothing to do when :meth:`start` did not get
        as far as the chroot."""
        if not self._chroot_made:
            return
        try:
            if delete_chroot:
                self._delete_chroot()
        finally:
            end(self._client)  # its state dies with the sandbox, not in a later full collection

    def _delete_chroot(self) -> None:
        with _root_session(self.zk_hosts) as root:
            for _ in range(5):
                try:
                    root.delete(self.chroot, recursive=True)
                    break
                except NoNodeError:
                    break
                except NotEmptyError:  # an ephemeral appeared while deleting; try again
                    continue

    # -- what an operator does -----------------------------------------------------------------
    def delete_controller(self) -> None:
        """What ``zkCli.sh deleteall /controller`` does: no fencing, no questions."""
        try:
            self._ask(self._client.delete_async, paths.CONTROLLER)
        except NoNodeError:
            pass

    def watch_ephemeral(self, path: str, owner: str | None, on_deleted: Callable[[], None]) -> None:
        """Call ``on_deleted`` (once, on kazoo's thread) when ``path``, an ephemeral znode of
        session ``owner``, is deleted — what any ZooKeeper client watching it would learn, and all
        it would learn: that the znode is gone, not why. No call when the znode does not exist now
        or belongs to another session.

        Nothing waits for ZooKeeper here: the crash this follows has happened whatever ZooKeeper
        answers, so the student's request must not wait for (or fail on) a session that is, say,
        reconnecting after an outage. The ``exists`` is asked on its own, queued by kazoo while
        the session reconnects, and asked again when a dropped connection lost it."""
        _EphemeralWatch(self._client, path, owner, on_deleted).look(seen=False)

    # -- what the lab's checks read --------------------------------------------------------------
    def _ask(self, call_async, *args):
        """``call_async(*args)``'s answer on this session (a check's read, or ``delete_controller``'s
        delete), tried again while the connection is down (kazoo raises ``ConnectionLoss`` for a
        request caught in a dropped connection): a check reads through a reconnect within the
        session instead of failing on it.

        Never longer than ``READ_DEADLINE_S`` in all, also while no answer comes: kazoo's
        synchronous calls wait without limit while the session is suspended, and a session can
        stay suspended for its whole connect time-out (30 s here) — ZooKeeper 3.8.0, restarted,
        leaves a handshake that arrived while it loaded its data unanswered (ZOOKEEPER-5051).
        The student's request then ends in a 503 "ZooKeeper did not answer" that says to try
        again (``web/zk_health.py``) instead of hanging."""
        deadline = time.monotonic() + READ_DEADLINE_S

        def once():
            return call_async(*args).get(timeout=max(0.0, deadline - time.monotonic()))
        return KazooRetry(max_tries=-1, delay=0.05, backoff=1.5, max_delay=0.5, deadline=READ_DEADLINE_S)(once)

    def _get(self, path: str) -> bytes | None:
        """The znode's bytes, ``None`` when there is no such znode."""
        try:
            return self._ask(self._client.get_async, path)[0]
        except NoNodeError:
            return None

    def controller_id(self) -> int | None:
        data = self._get(paths.CONTROLLER)
        return None if data is None else codec.decode_controller(data)

    def controller_epoch(self) -> int | None:
        data = self._get(paths.CONTROLLER_EPOCH)
        return None if data is None else int(data)

    def topic_exists(self, topic: str) -> bool:
        return self._ask(self._client.exists_async, paths.topic_path(topic)) is not None

    def topic_partition_counts(self) -> dict[str, int]:
        """Each topic in ``/brokers/topics`` with its number of partitions (for the size bounds)."""
        counts = {}
        for topic in self._children(paths.BROKER_TOPICS):
            try:
                counts[topic] = len(self.admin.get_topic_assignment(topic))
            except NoNodeError:
                continue
        return counts

    def partition_states(self) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
        """Every partition's state znode, as ZooKeeper holds it now (its version as ``zk_version``)."""
        states = {}
        for topic in self._children(paths.BROKER_TOPICS):
            for p in self._children(paths.topic_partitions_path(topic)):
                try:
                    data, stat = self._ask(self._client.get_async, paths.partition_state_path(topic, int(p)))
                except NoNodeError:
                    continue
                states[TopicPartition(topic, int(p))] = codec.decode_partition_state(data, stat.version)
        return states

    def znode_data(self, znodes: Iterable[str]) -> dict[str, bytes | None]:
        """Each znode's bytes (``b""`` when empty), ``None`` when there is no such znode."""
        found = {}
        for path in znodes:
            data = self._get(path)
            found[path] = None if data is None else data or b""
        return found

    def znode_versions(self, timeout_s: float = 15.0) -> dict[str, tuple[int, int]]:
        """Every znode of the cluster with (czxid, mzxid): what changed between two looks.

        Bounded in time: without a ZooKeeper quorum kazoo would wait for one forever, and a
        lesson in front of a class must fail with a reason rather than hang."""
        out, stack = {}, ["/"]
        deadline = time.monotonic() + timeout_s
        while stack:
            path = stack.pop()
            try:
                left = max(0.1, deadline - time.monotonic())
                stat = self._client.exists_async(path).get(timeout=left)
                children = self._client.get_children_async(path).get(timeout=left)
            except NoNodeError:
                continue
            except KazooTimeoutError:
                raise ConnectionError(f"ZooKeeper did not answer within {timeout_s:.0f} s (no quorum?) while "
                                      f"reading the znode tree at {path}") from None
            if stat is None:
                continue
            if path != "/":
                out[path] = (stat.czxid, stat.mzxid)
            stack.extend(f"{path.rstrip('/')}/{c}" for c in children)
        return out

    def _children(self, path: str) -> list[str]:
        try:
            return sorted(self._ask(self._client.get_children_async, path))
        except NoNodeError:
            return []


class _root_session:
    """A short session at the root of the ensemble (outside every chroot), to make a sandbox's
    chroot and to delete it. On the process's session loop, as the operator's own: a client with
    kazoo's connection thread started three threads and cost ~26 ms of CPU per sandbox made
    or closed (docs/performance.md, issue 14, twentieth round)."""

    def __init__(self, zk_hosts: str) -> None:
        self._client = use_session_loop(KazooClient(hosts=zk_hosts, handler=PollingThreadingHandler()))

    def __enter__(self) -> KazooClient:
        self._client.start(timeout=START_TIMEOUT_S)
        return self._client

    def __exit__(self, *exc) -> None:
        end(self._client)  # one a sandbox made or closed: left to the cyclic collector otherwise


class _EphemeralWatch:
    """:meth:`OperatorSession.watch_ephemeral`'s watch. An object, not closures that call each
    other: those made a reference cycle (with the crashed broker's callback) that outlived the
    watch and waited for the cyclic collector (issue 14, thirty-seventh round). kazoo holds the
    bound :meth:`_watch` while the watch is set and each answer's callback until it has run."""

    def __init__(self, client: KazooClient, path: str, owner: str | None, on_deleted: Callable[[], None]) -> None:
        self._client, self._path, self._owner, self._on_deleted = client, path, owner, on_deleted
        self._armed = threading.Event()
        self._armed.set()

    def look(self, seen: bool, tries: int = 0) -> None:
        """``seen``: the znode was there at an earlier look (so its absence now is a deletion)."""
        if self._armed.is_set():
            self._client.exists_async(self._path, self._watch).rawlink(
                functools.partial(self._answered, seen=seen, tries=tries))

    def _answered(self, result, seen: bool, tries: int) -> None:
        if not self._armed.is_set():
            return
        if not result.successful():
            if isinstance(result.exception, ConnectionLoss) and tries + 1 < WATCH_TRIES:
                return self.look(seen, tries + 1)  # lost with its connection: kazoo queues it for the next
            self._armed.clear()  # the session ended (the cluster is closing): nobody left to tell
            return
        stat = result.value
        if stat is not None and hex(stat.ephemeralOwner) == self._owner:
            return  # still there, and the watch is set
        self._armed.clear()
        if seen:
            self._on_deleted()  # gone between two looks, as a watch that fired on a change would learn

    def _watch(self, event) -> None:
        if not self._armed.is_set():
            return
        if event.type == EventType.DELETED:
            self._armed.clear()
            self._on_deleted()
        else:
            self.look(seen=True)  # a change: look again, which sets the watch again (a watch fires once)
