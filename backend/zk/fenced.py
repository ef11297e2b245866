"""Fenced writes: each controller write in one ZooKeeper transaction behind
``check(/controller_epoch, epoch_zk_version)`` (§3 layer 1, Kafka 2.1+, KAFKA-6082).

Kafka's ``KafkaZkClient`` wraps every controller request this way
(``retryRequestsUntilConnected(requests, expectedControllerEpochZkVersion)``), one operation
per transaction. When the check fails, ZooKeeper answers the check with BADVERSION and nothing
is applied: that is how a zombie controller is stopped — by ZooKeeper's own version check.

ZooKeeper answers a failed ``multi`` op by op: the operations *before* the one that failed come
back as ``RolledBackError`` (error code 0: "it would have worked, but was undone"), the failed
one with its own error, the ones after it as ``RuntimeInconsistency``. So a passed check is a
``RolledBackError`` when the write after it failed, and only a check that itself failed with
BADVERSION means the controller moved (Kafka's ``unwrapResponseWithControllerEpochCheck``); a
BADVERSION on the written znode is that znode's conflict (``bad_version``: the caller re-reads
and retries that partition), and deleting a znode that is already gone is not an error.

The typed writes of ``backend.core.controller.plan`` become transactions here; submissions are pipelined
(async) and results are collected in order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from kazoo.client import KazooClient
from kazoo.exceptions import (
    BadVersionError, NodeExistsError, NoNodeError, RolledBackError, RuntimeInconsistency, SessionExpiredError,
    ZookeeperError,
)

from backend.core.controller.plan import (
    CreatePartitionState, DeleteController, DeleteIsrChangeNotifications, DeletePreferredReplicaElection,
    DeleteTopicDeletionFlags, DeleteTopicZnodes, RemoveFromPartitionReassignment, SetTopicAssignment,
    UpdatePartitionState, WriteResult,
)
from backend.core.errors import ControllerMovedException
from backend.core.records import Record
from backend.core.subjects import znode_subject
from backend.zk import codec, paths
from backend.zk.handler import deferred_wakeups

TIMEOUT_S = 10.0
WAKE_BATCH = 100  # transactions queued between two wake-ups of kazoo's connection thread
UNDONE = (RolledBackError, RuntimeInconsistency)
"""What ZooKeeper answers for the operations of a failed ``multi`` other than the failed one."""


class Fenced(ControllerMovedException):
    """The ``/controller_epoch`` check failed with BADVERSION: this controller is not the
    controller any more (Kafka throws ``ControllerMovedException`` here)."""


class FencedWriter:
    def __init__(self, zk: KazooClient, epoch_zk_version: int, emit: Callable[[list[Record]], object] | None,
                 pipelined: bool = True) -> None:
        """``pipelined=False`` waits for each transaction before submitting the next (Kafka
        before 1.1); only the benchmark uses it, to measure what pipelining buys."""
        self.zk = zk
        self.epoch_zk_version = epoch_zk_version
        self._emit = emit or (lambda records: None)
        self.pipelined = pipelined

    # -- transactions ------------------------------------------------------------------------------
    def _tx(self, ops) -> object:
        """Submit ``ops`` (callables adding operations) after the epoch check; returns the async result."""
        tx = self.zk.transaction()
        tx.check(paths.CONTROLLER_EPOCH, self.epoch_zk_version)
        for op in ops:
            op(tx)
        return tx.commit_async()

    def _wait(self, handle, ignore=()) -> list:
        """The transaction's results, classified as Kafka's ``unwrapResponseWithControllerEpochCheck``
        does: ``Fenced`` when the epoch check itself failed with BADVERSION, the check's own error
        when it failed otherwise (e.g. no ``/controller_epoch``), else the error of the operation
        that failed (``ignore`` lists harmless ones, e.g. NoNode for a delete). A check that
        passed comes back as ``RolledBackError`` when a later operation failed: not an error."""
        results = handle.get(timeout=TIMEOUT_S)
        check = results[0]
        if isinstance(check, BadVersionError):
            raise Fenced(f"/controller_epoch is no longer at version {self.epoch_zk_version}")
        if isinstance(check, Exception) and not isinstance(check, UNDONE):
            raise check
        failed = next((r for r in results[1:] if isinstance(r, Exception) and not isinstance(r, UNDONE)), None)
        if failed is not None and not isinstance(failed, ignore):
            raise failed
        return results

    # -- the writes ----------------------------------------------------------------------------------
    def execute(self, writes) -> list[WriteResult]:
        self._create_parents([w for w in writes if type(w) is CreatePartitionState])
        if not self.pipelined:
            return [self._collect(w, self._submit(w)) for w in writes]
        submitted = []
        with deferred_wakeups(self.zk) as flush:
            for i, write in enumerate(writes, 1):
                submitted.append((write, self._submit(write)))
                if i % WAKE_BATCH == 0:
                    flush()
        return [self._collect(w, handle) for w, handle in submitted]

    def _create_parents(self, creates) -> None:
        """``…/partitions`` and ``…/partitions/P`` for new partitions (NODEEXISTS is fine)."""
        wanted = {}
        for write in creates:
            tp = write.topic_partition
            wanted[paths.topic_partitions_path(tp.topic)] = None
            wanted[paths.partition_path(tp.topic, tp.partition)] = None
        for level in (1, 2):  # parents before children
            batch = [p for p in wanted if p.count("/") == (4 if level == 1 else 5)]
            handles = [self._tx([lambda tx, p=p: tx.create(p, b"")]) for p in batch]
            for handle in handles:
                try:
                    self._wait(handle, ignore=(NodeExistsError,))
                except (Fenced, ZookeeperError):
                    pass  # the state create below reports it

    def _submit(self, write):
        """A write that is one transaction is submitted now (pipelined); the others at collection."""
        transaction = WRITES[type(write)].transaction
        return self._tx([transaction(write)]) if transaction is not None else None

    def _collect(self, write, handle) -> WriteResult:
        kind = WRITES[type(write)]
        try:
            if handle is None:
                return kind.perform(self, write) or WriteResult("ok")
            results = self._wait(handle, ignore=kind.ignore)
            return WriteResult("ok", zk_version=kind.version(results))
        except Fenced:
            self._refused(write, "rejected_stale_epoch", "BADVERSION", (
                f"ZooKeeper refused the write of {kind.path(write)}: /controller_epoch is no longer at version "
                f"{self.epoch_zk_version}, so this controller has been replaced (its write is fenced)."))
            return WriteResult("rejected_stale_epoch")
        except BadVersionError:
            self._refused(write, "bad_version", "BADVERSION", (
                f"The write of {kind.path(write)} failed with BADVERSION: someone changed the znode since it was "
                f"read; the controller reads it again and retries."))
            return WriteResult("bad_version")
        except SessionExpiredError:
            self._refused(write, "error", "SESSIONEXPIRED", (
                f"The write of {kind.path(write)} never reached ZooKeeper's data: this broker's session has "
                f"expired, and a client whose session expired can do nothing more with it (SESSIONEXPIRED)."))
            return WriteResult("error", reason="SessionExpiredError")
        except (ZookeeperError, Exception) as exc:  # noqa: BLE001 - every outcome becomes a value
            return WriteResult("error", reason=f"{type(exc).__name__}: {exc}".rstrip(": "))

    def _set_topic_assignment(self, write: SetTopicAssignment) -> None:
        path = paths.topic_path(write.topic)
        topic_id = write.topic_id
        if topic_id is None:  # keep the id the topic already has (Kafka passes topicIds.get(topic))
            try:
                topic_id = codec.decode_topic_assignment(write.topic, self.zk.get(path)[0]).topic_id
            except NoNodeError:
                pass
        data = codec.encode_topic_assignment(write.assignment, topic_id)
        self._wait(self._tx([lambda tx: tx.set_data(path, data)]))

    def _delete_topic_znodes(self, write: DeleteTopicZnodes) -> None:
        self._delete_recursive(paths.topic_path(write.topic))
        for path in (paths.topic_config_path(write.topic), paths.delete_topic_path(write.topic)):
            self._wait(self._tx([lambda tx, p=path: tx.delete(p)]), ignore=(NoNodeError,))

    def _delete_deletion_flags(self, write: DeleteTopicDeletionFlags) -> None:
        self._delete_each(paths.delete_topic_path(t) for t in write.topics)

    def _delete_isr_change_notifications(self, write: DeleteIsrChangeNotifications) -> None:
        self._delete_each(paths.isr_change_path(n) for n in write.sequence_numbers)

    def _delete_each(self, paths_to_delete) -> None:
        """One fenced delete per znode, pipelined; a znode already gone is fine."""
        handles = [self._tx([lambda tx, p=path: tx.delete(p)]) for path in paths_to_delete]
        for handle in handles:
            self._wait(handle, ignore=(NoNodeError,))

    def _delete_recursive(self, root: str) -> None:
        """Kafka's ``deleteRecursive``: children first, each delete a fenced transaction of its
        own (so a child already gone fails only its own delete, which is fine); the deletes go
        out pipelined, and ZooKeeper applies one session's requests in order."""
        order, stack = [], [root]
        while stack:
            path = stack.pop()
            order.append(path)
            try:
                stack.extend(f"{path}/{c}" for c in self.zk.get_children(path))
            except NoNodeError:
                pass
        order.sort(key=lambda p: -p.count("/"))  # children first
        self._delete_each(order)

    def _remove_from_reassignment(self, write: RemoveFromPartitionReassignment) -> WriteResult | None:
        """Kafka's ``maybeRemoveFromZkReassignment``: read the znode, drop the partitions, and
        write the rest back at *any* version (``setOrCreatePartitionReassignment``) or delete it
        when nothing is left (``deletePartitionReassignment``) — an operator's change made
        between the read and the write is overwritten, as in Kafka."""
        try:
            pending = dict(codec.decode_reassignment(self.zk.get(paths.REASSIGN_PARTITIONS)[0]))
        except NoNodeError:
            return None
        for tp, target in write.partitions:
            if tp in pending and (target is None or tuple(pending[tp]) == tuple(target)):
                del pending[tp]
        if not pending:
            self._wait(self._tx([lambda tx: tx.delete(paths.REASSIGN_PARTITIONS)]), ignore=(NoNodeError,))
            return WriteResult("ok", deleted=True)
        encoded = codec.encode_reassignment(pending)
        try:
            self._wait(self._tx([lambda tx: tx.set_data(paths.REASSIGN_PARTITIONS, encoded)]))
        except NoNodeError:
            self._wait(self._tx([lambda tx: tx.create(paths.REASSIGN_PARTITIONS, encoded)]))
        return None

    def _refused(self, write, outcome: str, error: str, note: str) -> None:
        """``error`` is ZooKeeper's code (``BADVERSION``: the epoch check or the znode's version;
        ``SESSIONEXPIRED``: the zombie of Kafka 2.8, whose session ended while it was frozen), so
        the invariant panel can tell a fenced zombie from a live controller's conflict."""
        path = WRITES[type(write)].path(write)
        self._emit([Record(kind="zk", subject=znode_subject(path), to_state="write_refused", outcome=outcome,
                           note=note, detail={"path": path, "write": type(write).__name__, "error": error,
                                              "controller_epoch_version": self.epoch_zk_version})])


@dataclass(frozen=True)
class _Write:
    """How one kind of write is carried out: the znode it names (for records), and either one
    transaction (``transaction(write)`` adds its operation; ``version(results)`` is the outcome's
    znode version) or several steps (``perform``)."""

    path: Callable[[object], str]
    transaction: Callable[[object], Callable] | None = None
    version: Callable[[list], int | None] = lambda results: None
    ignore: tuple = ()
    perform: Callable[[FencedWriter, object], WriteResult | None] | None = None


def _state_path(write) -> str:
    return paths.partition_state_path(write.topic_partition.topic, write.topic_partition.partition)


WRITES: dict[type, _Write] = {
    UpdatePartitionState: _Write(
        _state_path, lambda w: lambda tx: tx.set_data(_state_path(w), codec.encode_partition_state(w.state),
                                                      version=w.state.leader_and_isr.zk_version),
        version=lambda results: results[1].version),
    CreatePartitionState: _Write(
        _state_path, lambda w: lambda tx: tx.create(_state_path(w), codec.encode_partition_state(w.state)),
        version=lambda results: 0),
    DeleteController: _Write(lambda w: paths.CONTROLLER, lambda w: lambda tx: tx.delete(paths.CONTROLLER),
                             ignore=(NoNodeError,)),
    DeletePreferredReplicaElection: _Write(lambda w: paths.PREFERRED_REPLICA_ELECTION,
                                           lambda w: lambda tx: tx.delete(paths.PREFERRED_REPLICA_ELECTION),
                                           ignore=(NoNodeError,)),
    SetTopicAssignment: _Write(lambda w: paths.topic_path(w.topic), perform=FencedWriter._set_topic_assignment),
    DeleteTopicZnodes: _Write(lambda w: paths.topic_path(w.topic), perform=FencedWriter._delete_topic_znodes),
    DeleteTopicDeletionFlags: _Write(lambda w: paths.DELETE_TOPICS, perform=FencedWriter._delete_deletion_flags),
    DeleteIsrChangeNotifications: _Write(lambda w: paths.ISR_CHANGE_NOTIFICATION,
                                         perform=FencedWriter._delete_isr_change_notifications),
    RemoveFromPartitionReassignment: _Write(lambda w: paths.REASSIGN_PARTITIONS,
                                            perform=FencedWriter._remove_from_reassignment),
}
"""Every write of ``backend.core.controller.plan``, by type: the one place a write's kind is asked."""
