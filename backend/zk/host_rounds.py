"""Which ZooKeeper server a connection dials next, and when: kazoo's host rounds and retry.

kazoo's ``ConnectionHandler._connect_loop`` tries every host of the connection string once, in
its shuffled order, and after a round that failed waits as its ``KazooRetry`` says (delay,
jitter, back-off, limits). ``session_loop.LoopConnection`` runs the same order and the same
arithmetic on the shared loop's timers instead of a thread's sleeps; these are its steps (a
mixin: they act on the connection's own state, and hand over to its handshake). Kept apart
because this is where the connection's *reconnection* pacing lives, which is still kazoo's
and not ZooKeeper's Java client's (docs/fidelity.md says why).
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
import time

from kazoo import retry as kazoo_retry
from kazoo.exceptions import ConnectionDropped
from kazoo.loggingsupport import BLATHER
from kazoo.protocol.states import KeeperState

from backend.zk.io_loop import WRITE

# The phases of one connection.
STOPPED, WAITING, RESOLVING, TCP_CONNECTING, HANDSHAKE, CONNECTED, LISTENING = (
    "stopped", "waiting", "resolving", "tcp-connecting", "handshake", "connected", "listening")


def _is_address(host: str) -> bool:
    try:
        ipaddress.ip_address(host.strip())
        return True
    except ValueError:
        return False


class HostRounds:
    """The host rounds of a ``LoopConnection`` (see the module's docstring)."""

    def _begin(self) -> None:
        """``zk_loop``'s start: a fresh copy of the retry policy, then the first round of hosts."""
        self.logger.log(BLATHER, "ZK loop started")
        self._retry = self.retry_sleeper.copy()
        self._retry.reset()
        if self._retry.deadline is not None:
            self._retry._cur_stoptime = time.monotonic() + self._retry.deadline
        self._round()

    def _round(self) -> None:
        """``_connect_loop``: every host once, in kazoo's (shuffled) order. Names are resolved
        again each round, as kazoo does (a restarted container may come back at a new address),
        but off the loop: a slow name server must not stall every other session. Addresses
        (the cables', an embedded ZooKeeper's) need no resolver and go on at once."""
        if self.client._stopped.is_set():
            return self._finish()
        self._host_count = max(1, len(self.client.hosts))
        self._round_id += 1
        if all(_is_address(host) for host, _ in self.client.hosts):
            return self._resolved(self._round_id, self._expand_client_hosts())
        self.phase = RESOLVING
        self.loop.resolve(self._expand_client_hosts, self._round_id, self._on_resolved)

    def _on_resolved(self, round_id: int, hosts: list) -> None:
        self.guarded(self._resolved, round_id, hosts)

    def _resolved(self, round_id: int, hosts: list) -> None:
        if round_id != self._round_id or self.connection_stopped.is_set():
            return  # a round that a stop (and perhaps a new start) has overtaken
        self._hosts = hosts
        self._next_host()

    def _next_host(self) -> None:
        if self.client._stopped.is_set():
            return self._finish()
        if not self._hosts:
            return self._retry_later()
        host, hostip, port = self._hosts.pop(0)
        client = self.client
        self._socket = None
        if client._state != KeeperState.CONNECTING:
            client._session_callback(KeeperState.CONNECTING)
        self._xid = 0
        self._peer = (host, port)
        self.logger.info("Connecting to %s(%s):%s, use_ssl: %r", host, hostip, port, client.use_ssl)
        self._inbox.clear()
        self._outbox.clear()
        if self.cable.cut:  # refused, and a crashed process logs nothing: the next round, quietly
            self._hosts.clear()
            return self._retry_later()
        if self.cable.paused:  # the dial goes through and the handshake is never answered
            return self._await_handshake()
        family = socket.AF_INET6 if ":" in hostip else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setblocking(False)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._socket = sock
        self.phase = TCP_CONNECTING
        self.loop.set_timer(self, time.monotonic() + client._session_timeout / 1000.0)
        code = sock.connect_ex((hostip, port))
        if code not in (0, errno.EINPROGRESS):
            raise ConnectionDropped(f"socket connection error: {os.strerror(code)}")
        self.loop.watch(sock, WRITE, self._on_socket)

    def _retry_later(self) -> None:
        """``KazooRetry``'s wait after a round of hosts failed: its count, delay, jitter,
        back-off and deadline, on a timer instead of a sleep."""
        retry = self._retry
        retry._attempts += 1
        if retry._attempts == retry.max_tries:
            self.logger.warning("Failed connecting to Zookeeper within the connection retry policy.")
            return self._finish()
        sleep = retry._cur_delay * kazoo_retry.random.uniform(1.0 - retry.max_jitter, 1.0 + retry.max_jitter)
        if retry._cur_stoptime is not None and time.monotonic() + sleep >= retry._cur_stoptime:
            self.logger.warning("Failed connecting to Zookeeper within the connection retry policy.")
            return self._finish()
        retry._cur_delay = min(sleep * retry.backoff, retry.max_delay)
        self.phase = WAITING
        self.loop.set_timer(self, time.monotonic() + sleep)
