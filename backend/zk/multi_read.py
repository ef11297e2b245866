"""Many znodes in one ZooKeeper request: ``multiRead`` (ZooKeeper 3.6+, opcode 22).

Kafka 2.8's controller reads partition states with one pipelined ``getData`` per znode
(``getTopicPartitionStatesRaw``): ZooKeeper 3.4/3.5, which Kafka shipped with, had nothing
else. The result is the same here — each znode's bytes and ``Stat`` (its zkVersion), or that
znode's own error — but thousands of reads cost a handful of requests. That matters because a
request is the expensive unit on both sides: kazoo spends ≈ 70 µs of Python on each (an
``AsyncResult``, a wake-up write, a loop turn to send, one to receive), ZooKeeper ≈ 120 µs of
thread hand-offs. Reading the 2,000 state znodes of a failed broker's partitions takes ≈ 0.2 s
one by one and ≈ 0.01 s in multiReads (docs/performance.md §1). Nothing visible changes: reads
leave no trace in ZooKeeper's tree, and every write stays its own fenced transaction.

A ``multiRead`` is not a transaction: each read is answered on its own, in order, from the
same server state, exactly like the pipelined gets it replaces. A server answers an opcode it
does not know with UNIMPLEMENTED *and closes the connection* (ours does so for a made-up one; a
3.5 server would for multiRead), so the reader must not find out by trying: the cluster asks every server its version first (``srvr``, which ZooKeeper
allows by default) and passes ``multi_read=False`` when one is older or does not answer — an
ensemble given with ``--zk`` may be older than ours. Then the reads are pipelined gets.

kazoo has no ``multiRead``, so :class:`MultiRead` is a request in kazoo's own protocol shape
(``type``, ``serialize``, ``deserialize``) submitted through ``KazooClient._call`` like kazoo's
own requests; the wire format is ZooKeeper's ``MultiOperationRecord``/``MultiResponse`` (jute).
"""

from __future__ import annotations

from typing import NamedTuple, Sequence

from kazoo.client import KazooClient
from kazoo.exceptions import EXCEPTIONS, NoNodeError
from kazoo.protocol.serialization import int_struct, multiheader_struct, read_buffer, stat_struct, write_string
from kazoo.protocol.states import ZnodeStat

from backend.zk.handler import deferred_wakeups
from backend.zk.paths import zk_servers
from backend.zkserver.four_letter import server_version

GET_DATA = 4       # ZooDefs.OpCode.getData: the type of each operation in the request
ERROR = -1         # ZooDefs.OpCode.error: that operation's result is an error code
MULTI_READ = 22    # ZooDefs.OpCode.multiRead
FIRST_VERSION = (3, 6)  # multiRead arrived in ZooKeeper 3.6.0
CHUNK = 200
"""Reads per request. A response must stay under the client's and server's ``jute.maxbuffer``
(1 MB by default): 200 small znodes are tens of KB. Measured: 100 per request is already ~20×
faster than one by one; larger chunks gain little more."""

Read = tuple  # (data: bytes, stat: ZnodeStat) or the znode's own exception (e.g. NoNodeError())


class MultiRead(NamedTuple):
    """``multiRead`` of ``getData`` (no watch) for each path; paths include the chroot."""

    paths: Sequence[str]
    type = MULTI_READ

    def serialize(self) -> bytearray:
        out = bytearray()
        header = multiheader_struct.pack(GET_DATA, False, -1)
        for path in self.paths:
            out += header
            out += write_string(path)
            out.append(0)  # watch: false
        return out + multiheader_struct.pack(-1, True, -1)

    @classmethod
    def deserialize(cls, buffer: bytes, offset: int) -> list[Read | Exception]:
        results: list = []
        while True:
            op, done, _ = multiheader_struct.unpack_from(buffer, offset)
            offset += multiheader_struct.size
            if done:
                return results
            if op == GET_DATA:
                data, offset = read_buffer(buffer, offset)
                results.append((data, ZnodeStat._make(stat_struct.unpack_from(buffer, offset))))
                offset += stat_struct.size
            elif op == ERROR:
                code = int_struct.unpack_from(buffer, offset)[0]
                offset += int_struct.size
                results.append(EXCEPTIONS[code]())
            else:
                raise ValueError(f"unexpected operation type {op} in a multiRead response")


class ZnodeReader:
    """Reads many znodes of one kazoo client: in multiReads when the servers have them
    (``multi_read``), else with pipelined ``get_async``."""

    def __init__(self, zk: KazooClient, timeout_s: float, multi_read: bool = True, chunk: int = CHUNK) -> None:
        self.zk = zk
        self.timeout_s = timeout_s
        self.multi_read = multi_read
        self.chunk = chunk

    def get_many(self, paths: Sequence[str]) -> list[Read | Exception]:
        """One result per path, in order: ``(data, stat)`` or that znode's own error (absent:
        ``NoNodeError``). A failure of the whole exchange (connection loss, session expiry, time-out) is raised."""
        if not paths:
            return []
        return self._multi_read(paths) if self.multi_read else self._pipelined(paths)

    def _multi_read(self, paths: Sequence[str]) -> list:
        chroot = self.zk.chroot
        handles = []
        for start in range(0, len(paths), self.chunk):
            handle = self.zk.handler.async_result()
            self.zk._call(MultiRead([chroot + p for p in paths[start:start + self.chunk]]), handle)
            handles.append(handle)
        return [result for handle in handles for result in handle.get(timeout=self.timeout_s)]

    def _pipelined(self, paths: Sequence[str]) -> list:
        with deferred_wakeups(self.zk):  # one wake-up of the connection for the whole burst
            handles = [self.zk.get_async(p) for p in paths]
        results: list = []
        for handle in handles:
            try:
                results.append(handle.get(timeout=self.timeout_s))
            except NoNodeError as absent:  # that znode's own answer, as a multiRead gives it
                results.append(absent)
        return results


def supports_multi_read(version: tuple[int, ...] | None) -> bool:
    """Whether a server of ``version`` (``None``: unknown) answers multiRead."""
    return version is not None and version[:2] >= FIRST_VERSION


def ensemble_answers_multi_read(zk_hosts: str) -> bool:
    """Whether every server of ``zk_hosts`` (``HOST:PORT,…``, no chroot) is ZooKeeper 3.6+,
    asked with ``srvr``. A server that does not answer counts as too old: its clients then read
    znode by znode, which works everywhere."""
    return all(supports_multi_read(server_version(host, port)) for host, port in zk_servers(zk_hosts))
