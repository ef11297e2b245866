"""Many Socket.IO page sockets from one process, cheaply: raw websockets (wsproto, which
simple-websocket already brings) on one asyncio loop, speaking just enough Engine.IO 4 and
Socket.IO 5 to connect, join a sandbox's room, answer pings and count the records sent. A
python-socketio client per socket would cost a thread or two each and seconds to disconnect."""

from __future__ import annotations

import asyncio
import json
import threading

from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, CloseConnection, Ping, RejectConnection, Request, TextMessage


class RawSocket:
    def __init__(self) -> None:
        self.records = 0
        self.closed = False
        self._reader = self._writer = None
        self._ws = WSConnection(ConnectionType.CLIENT)
        self._texts: asyncio.Queue[str] = asyncio.Queue()
        self._task = None
        self._partial = ""

    async def connect(self, host: str, port: int, join: dict | None = None) -> bool:
        """Open the websocket and the Socket.IO namespace (and join a sandbox); False if refused."""
        self._reader, self._writer = await asyncio.open_connection(host, port)
        self._writer.write(self._ws.send(Request(host=f"{host}:{port}", target="/socket.io/?EIO=4&transport=websocket")))
        accepted = False
        while not accepted:
            data = await self._reader.read(65536)
            if not data:
                return False
            self._ws.receive_data(data)
            # Every event of this read, also those after the acceptance (the server's first
            # frame often comes in the same segment as its 101): left in wsproto, they would
            # wait for the next bytes — the server's ping, 25 s later.
            for event in self._ws.events():
                if isinstance(event, RejectConnection):
                    self._writer.close()
                    return False
                if isinstance(event, AcceptConnection):
                    accepted = True
                else:
                    self._on(event)
        self._task = asyncio.get_running_loop().create_task(self._pump())
        opened = await self._next()
        assert opened.startswith("0"), opened
        self._send("40")
        connected = await self._next()
        assert connected.startswith("40"), connected
        if join is not None:
            self._send("420" + json.dumps(["join", join]))
            answer = await self._next()
            assert answer.startswith("430") and '"ok":true' in answer.replace(" ", ""), answer[:200]
        return True

    def _send(self, text: str) -> None:
        self._writer.write(self._ws.send(TextMessage(data=text)))

    async def _next(self) -> str:
        return await asyncio.wait_for(self._texts.get(), 30)

    def _on(self, event) -> None:
        if isinstance(event, TextMessage):
            self._partial += event.data
            if not event.message_finished:
                return
            text, self._partial = self._partial, ""
            if text == "2":  # Engine.IO ping: answer, or the server drops us after pingTimeout
                self._send("3")
            elif text.startswith('42["records"'):
                self.records += json.loads(text[2:])[1]["records"].__len__()
            else:
                self._texts.put_nowait(text)
        elif isinstance(event, Ping):
            self._writer.write(self._ws.send(event.response()))
        elif isinstance(event, CloseConnection):
            self.closed = True

    async def _pump(self) -> None:
        try:
            while True:
                data = await self._reader.read(65536)
                if not data:
                    self.closed = True
                    return
                self._ws.receive_data(data)
                for event in self._ws.events():
                    self._on(event)
        except (ConnectionError, asyncio.CancelledError):
            self.closed = True

    def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
        if self._writer is not None:
            self._writer.close()


async def open_many(host: str, port: int, count: int, join: dict | None = None, at_once: int = 50,
                    timeout: float = 30.0) -> tuple[list[RawSocket], int]:
    """``count`` sockets, ``at_once`` connecting at a time; returns (open ones, refused count).
    A socket not connected within ``timeout`` s counts as refused (a server out of threads)."""
    sockets, refused = [], 0
    for start in range(0, count, at_once):
        batch = [RawSocket() for _ in range(min(at_once, count - start))]
        results = await asyncio.gather(*(asyncio.wait_for(s.connect(host, port, join), timeout) for s in batch),
                                       return_exceptions=True)
        for sock, ok in zip(batch, results):
            if ok is True:
                sockets.append(sock)
            else:
                refused += 1
                sock.close()
    return sockets, refused


def run(coroutine):
    """``asyncio.run(coroutine)`` in a thread of its own: in the full suite Playwright's sync API
    (the browser tests' session-wide Chromium) keeps an event loop running in the main thread."""
    outcome: dict = {}

    def target() -> None:
        try:
            outcome["value"] = asyncio.run(coroutine)
        except BaseException as error:  # noqa: BLE001 - raised again in the caller's thread
            outcome["error"] = error

    thread = threading.Thread(target=target, name="raw-sockets")
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")
