"""A stopped kazoo client taken apart, so that its state dies by reference counting.

kazoo's client is full of reference cycles (its connection, its retry policies' closures, its
recipe partials), and ours adds some (the broker's cable, the session loop's wake-up). A
broker's restart drops a stopped client: left as cycles, ~280 objects a restart waited for a
full collection, and in a class of 200 those collections took 4-5 s and expired the class's
sessions (docs/performance.md, issue 14, thirty-sixth round). Every session of the lab (a
broker's ``ZkSession``, a sandbox's operator session, the short root session) ends with
:func:`end`, which calls :func:`unlink` once kazoo's own ``close`` is done.
"""

from __future__ import annotations

import functools

from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionClosedError

from backend.zk.handler import PollingThreadingHandler
from backend.zk.session_loop import LoopConnection


def unlink(client: KazooClient) -> None:
    """Break the reference cycles of a client that is stopped and closed, so that its state dies
    by reference counting when its owner drops it: the client and its connection point at each
    other, and so do the connection and its cable, the handler and the loop's wake-up, the retry
    policies and the client (their ``interrupt`` closes over it), its recipes and ``retry`` and the
    client. Only a connection that has stopped is unlinked: a client still running keeps
    everything, and nothing uses the client after ``ZkSession.close``."""
    conn = client._connection
    if not isinstance(conn, LoopConnection) or not conn.connection_stopped.is_set():
        return
    conn.cable.detach(conn)
    if isinstance(conn.handler, PollingThreadingHandler):
        conn.handler.release()
    for retry in (client._conn_retry, conn.retry_sleeper, conn._retry):
        if retry is not None:
            retry.interrupt = None
    for name, value in list(vars(client).items()):  # kazoo's recipes: ``client.Lock`` is partial(Lock, client)
        if isinstance(value, functools.partial) and value.args[:1] == (client,):
            delattr(client, name)
    client.retry = _closed_retry  # kazoo's closes over the client
    client._connection = None  # the loop may still hold the connection a moment (a late wake-up)


def end(client: KazooClient) -> None:
    """How every session of the lab ends: ``stop`` and ``close`` (kazoo's), then :func:`unlink`,
    also when kazoo's raised (a session already gone)."""
    try:
        client.stop()
        client.close()
    finally:
        unlink(client)


def _closed_retry(*args, **kwargs):
    """``client.retry`` of an unlinked client: what any request of a closed client gets."""
    raise ConnectionClosedError("the client is closed")
