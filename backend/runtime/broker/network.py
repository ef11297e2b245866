"""A broker's network cable to ZooKeeper, which a fault can cut: a pausable TCP proxy.

A *paused* broker is a process that stopped (a long GC pause, SIGSTOP): it sends no
heart-beats, but its TCP connection stays open, so ZooKeeper only expires its session after
the session timeout. Every simulated broker lives in this one Python process, so we cannot
freeze its kazoo threads; instead each broker's kazoo client talks to ZooKeeper through this
proxy. Pausing it *blackholes* the traffic: bytes are read and dropped, nothing is answered,
exactly what ZooKeeper and the client would see of a frozen process. Resuming closes the dead
connections; kazoo reconnects, hears that its session expired, and starts a new one — the
moment a zombie learns it is one.
"""

from __future__ import annotations

import selectors
import socket
import threading

from backend.zk.paths import zk_servers

LOOPBACK = "127.0.0.1"


class PausableProxy:
    """Forwards 127.0.0.1:<port> to one ZooKeeper server; ``pause()`` blackholes it."""

    def __init__(self, upstream_host: str, upstream_port: int) -> None:
        self.upstream = (upstream_host, upstream_port)
        self._listener = socket.create_server((LOOPBACK, 0))
        self._listener.setblocking(False)
        self.port = self._listener.getsockname()[1]
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ, None)
        self._peers: dict[socket.socket, socket.socket] = {}
        self._paused = False
        self._lock = threading.Lock()
        self._closed = False
        self._pending: list = []
        self._wake_r, self._wake_w = socket.socketpair()
        self._selector.register(self._wake_r, selectors.EVENT_READ, "wake")
        self._thread = threading.Thread(target=self._loop, name=f"zk-proxy-{self.port}", daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    @property
    def paused(self) -> bool:
        return self._paused

    def pause(self) -> None:
        with self._lock:
            self._paused = True

    def resume(self) -> None:
        """Reconnect the cable: connections opened while paused are dead, so close them all."""
        with self._lock:
            self._paused = False
        self._call(self._drop_all)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._call(lambda: None)
        self._thread.join(5)

    # -- the loop -----------------------------------------------------------------------------
    def _call(self, fn) -> None:
        """Run ``fn`` on the proxy's own thread (it owns every socket)."""
        with self._lock:
            self._pending.append(fn)
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass

    def _loop(self) -> None:
        # No time-out: every reason to look again (bytes, a connection, ``_call`` — which
        # ``close`` uses too) wakes the selector, so an idle cable costs no wake-ups.
        while not self._closed:
            for key, _ in self._selector.select():
                if key.data == "wake":
                    self._wake_r.recv(64)
                    with self._lock:
                        pending, self._pending = self._pending, []
                    for fn in pending:
                        fn()
                elif key.fileobj is self._listener:
                    self._accept()
                else:
                    self._forward(key.fileobj)
        self._drop_all()
        for sock in (self._listener, self._wake_r, self._wake_w):
            sock.close()
        self._selector.close()

    def _accept(self) -> None:
        try:
            client, _ = self._listener.accept()
        except BlockingIOError:
            return
        if self._paused:
            # A frozen process accepts nothing and answers nothing: hold the socket, never forward.
            self._peers[client] = None
            client.setblocking(False)
            self._selector.register(client, selectors.EVENT_READ, None)
            return
        try:
            server = socket.create_connection(self.upstream, timeout=2)
        except OSError:
            client.close()
            return
        for a, b in ((client, server), (server, client)):
            a.setblocking(False)
            self._peers[a] = b
            self._selector.register(a, selectors.EVENT_READ, None)

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
        try:
            peer.setblocking(True)
            peer.sendall(data)
            peer.setblocking(False)
        except OSError:
            self._drop(sock)

    def _drop(self, sock: socket.socket) -> None:
        peer = self._peers.pop(sock, None)
        for s in (sock, peer):
            if s is None:
                continue
            self._peers.pop(s, None)
            try:
                self._selector.unregister(s)
            except (KeyError, ValueError):
                pass
            s.close()

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
