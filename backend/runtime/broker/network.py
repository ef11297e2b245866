"""A broker's network cable to ZooKeeper, which a fault can cut: a pausable TCP proxy.

A *paused* broker is a process that stopped (a long GC pause, SIGSTOP): it sends no
heart-beats, but its TCP connection stays open, so ZooKeeper only expires its session after
the session timeout. Every simulated broker lives in this one Python process, so we cannot
freeze its kazoo threads; instead each broker's kazoo client talks to ZooKeeper through this
proxy. Pausing it *blackholes* the traffic: bytes are read and dropped, nothing is answered,
exactly what ZooKeeper and the client would see of a frozen process. Resuming closes the dead
connections; kazoo reconnects, hears that its session expired, and starts a new one — the
moment a zombie learns it is one.

Every cable of the process is served by one thread, the one that also serves every ZooKeeper
session of the process (``backend/zk/io_loop.py``): a selector over all their sockets,
which sleeps until bytes, a connection, a timer or a call arrive. A thread per cable would cost
a sandbox of three brokers three threads that do nothing but wait, and a thread of its own for
all of them would still be woken twice per ping, once each way; on the sessions' thread, a
broker's ping is sent, forwarded and answered without a hand-off between threads. Because one
thread serves every cable and session, none of them may block it: bytes a peer cannot take at
once wait in the proxy until it can, and meanwhile the proxy reads nothing more for it (the
back-pressure a thread blocked in ``sendall`` gave, and no unbounded buffer). Nor may it wait on a name
resolver: each proxy resolves its ZooKeeper server's address once, on the thread that makes it,
and the loop only ever connects to that address.
"""

from __future__ import annotations

import selectors
import socket
import threading

from backend.zk.paths import zk_servers
from backend.zk.io_loop import SessionLoop

LOOPBACK = "127.0.0.1"
READ, WRITE = selectors.EVENT_READ, selectors.EVENT_WRITE


class PausableProxy:
    """Forwards 127.0.0.1:<port> to one ZooKeeper server; ``pause()`` blackholes it."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        """Resolves ``upstream_host`` here, on the caller's thread (an unknown name raises
        ``socket.gaierror``): a slow resolver on the loop's thread would stall every cable."""
        self._upstream_info = socket.getaddrinfo(upstream_host, upstream_port, type=socket.SOCK_STREAM)[0]
        self._listener = socket.create_server((LOOPBACK, 0))
        self._listener.setblocking(False)
        self.port = self._listener.getsockname()[1]
        self._loop = SessionLoop.shared()
        self._peers: dict[socket.socket, socket.socket | None] = {}
        self._unsent: dict[socket.socket, bytearray] = {}
        self._paused = False
        self._closed = False
        self._loop.call(lambda: self._loop.watch(self._listener, READ, self._accept))

    @property
    def address(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    @property
    def paused(self) -> bool:
        return self._paused

    def pause(self) -> None:
        self._paused = True

    def resume(self) -> None:
        """Reconnect the cable: connections opened while paused are dead, so close them all."""
        self._paused = False
        self._loop.call(self._drop_all)

    def close(self) -> None:
        """Cut the cable: every connection and the listener closed (when this returns)."""
        if self._closed:
            return
        self._closed = True
        done = threading.Event()

        def cut() -> None:
            self._drop_all()
            self._loop.forget(self._listener)
            done.set()
        self._loop.call(cut)
        done.wait(5)

    # -- on the loop's thread -------------------------------------------------------------------
    def _accept(self, listener: socket.socket, ready: int) -> None:
        try:
            client, _ = listener.accept()
        except OSError:  # BlockingIOError included: another wake-up took it
            return
        client.setblocking(False)
        if self._paused:
            # A frozen process accepts nothing and answers nothing: hold the socket, never forward.
            self._peers[client] = None
            self._loop.watch(client, READ, self._ready)
            return
        try:  # connected without waiting: a server slow to answer must not hold up the other cables
            family, kind, proto, _, address = self._upstream_info
            server = socket.socket(family, kind, proto)
            server.setblocking(False)
            server.connect_ex(address)
        except OSError:
            client.close()
            return
        self._peers[client], self._peers[server] = server, client
        self._loop.watch(server, WRITE, self._connected)

    def _connected(self, server: socket.socket, ready: int) -> None:
        """The connection to ZooKeeper is made (or refused): forward both ways from now on."""
        client = self._peers.get(server)
        if client is None:
            return
        if server.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
            self._drop(server)
            return
        self._rewatch(client, server)

    def _ready(self, sock: socket.socket, ready: int) -> None:
        if ready & WRITE:
            self._send(sock, b"")
        if ready & READ and sock in self._peers:
            self._forward(sock)

    def _rewatch(self, *socks: socket.socket | None) -> None:
        """Read a socket while what it sends to has room; watch it for room while it owes bytes."""
        for sock in socks:
            if sock in self._peers:
                target = self._peers[sock]
                events = (0 if target in self._unsent else READ) | (WRITE if sock in self._unsent else 0)
                self._loop.watch(sock, events, self._ready)

    def _forward(self, sock: socket.socket) -> None:
        try:
            data = sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._drop(sock)
            return
        peer = self._peers.get(sock)
        if self._paused or peer is None:
            return  # blackholed
        self._send(peer, data)

    def _send(self, sock: socket.socket, data: bytes) -> None:
        """Send what ``sock`` still owes, then ``data``; what it cannot take now waits for it."""
        owed = sock in self._unsent
        unsent = self._unsent.pop(sock) + data if owed else data
        try:
            sent = sock.send(unsent) if unsent else 0
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:
            self._drop(sock)
            return
        if sent < len(unsent):
            self._unsent[sock] = bytearray(unsent[sent:])
        if owed != (sock in self._unsent):
            self._rewatch(sock, self._peers.get(sock))

    def _drop(self, sock: socket.socket) -> None:
        peer = self._peers.pop(sock, None)
        for s in (sock, peer):
            if s is None:
                continue
            self._peers.pop(s, None)
            self._unsent.pop(s, None)
            self._loop.forget(s)

    def _drop_all(self) -> None:
        for sock in list(self._peers):
            self._drop(sock)


class BrokerNetwork:
    """One proxy per ZooKeeper server, so a paused broker is cut off from the whole ensemble."""

    def __init__(self, hosts: str) -> None:
        self.proxies = []
        for host, port in zk_servers(hosts):
            self.proxies.append(PausableProxy(host, port))

    @property
    def hosts(self) -> str:
        return ",".join(p.address for p in self.proxies)

    @property
    def paused(self) -> bool:
        return all(p.paused for p in self.proxies)

    def pause(self) -> None:
        for p in self.proxies:
            p.pause()

    def resume(self) -> None:
        for p in self.proxies:
            p.resume()

    def close(self) -> None:
        for p in self.proxies:
            p.close()
