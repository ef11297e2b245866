"""The workers' message queue reads what the workers wrote with the standard JSON, and pages'
messages are still read with the bounded one (``web/scaleout/queue.py``)."""

from __future__ import annotations

import json

import socketio

from backend.faultscript.limits import MAX_JSON_DEPTH
from web.scaleout.queue import WorkerQueue
from web.sockets import TOO_DEEP, BoundedJson, JsonPacket


def test_the_queue_decodes_with_plain_json_and_pages_with_the_bounded_one(redis_server):
    """A message nested deeper than a page may send crosses the queue whole (the queue carries
    only what the app's workers wrote); the same text from a page is still refused before
    parsing. Built as ``web.app`` builds it, on the suite's real Redis."""
    queue = WorkerQueue(redis_server.url)
    server = socketio.Server(client_manager=queue, json=BoundedJson, serializer=JsonPacket)
    nested = 1
    for _ in range(MAX_JSON_DEPTH + 5):
        nested = [nested]
    deep = json.dumps({"method": "emit", "event": "records", "data": [{"records": nested}]})
    assert queue.json.loads(deep) == json.loads(deep)
    assert server.packet_class.json.loads('["records", ' + deep + "]") == ["records", TOO_DEEP]
    assert queue.channel == "flask-socketio" and not queue.write_only
