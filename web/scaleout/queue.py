"""The workers' message queue: Flask-SocketIO's Redis manager, reading what its workers wrote.

python-socketio's manager decodes every message it reads from the queue with the server's JSON
module, here ``web.sockets.BoundedJson``, whose depth check is for what a browser sends (a
message nested past ``MAX_JSON_DEPTH`` is answered 400, not parsed). Every message on the queue
was written by one of the app's own workers (``json.dumps`` of a batch of records, a class's
roster), and every worker reads every message, its own included. At 200 students on two workers
the check's scan cost 0.5 ms of a 7 KB batch, three times the decoding itself, and made the
queue's reader the costliest thread the second worker adds (docs/performance.md, issue 14,
thirty-fifth round). So the queue reads with the standard ``json``; pages still read with the
bounded one.
"""

from __future__ import annotations

import json

import socketio


class WorkerQueue(socketio.RedisManager):
    """``socketio.RedisManager`` on Flask-SocketIO's channel, decoding with the standard ``json``."""

    def __init__(self, url: str) -> None:
        super().__init__(url, channel="flask-socketio")

    def set_server(self, server) -> None:
        super().set_server(server)  # takes the server's JSON module, for pages' messages
        self.json = json
