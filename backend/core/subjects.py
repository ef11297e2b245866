"""Record subjects: the browser's join keys (``broker:2``, ``partition:t-0``, ``request:LeaderAndIsr#17``).

Built in one place so every producer of records — the controller, the brokers, the ZooKeeper
observer — names the same thing the same way (``docs/records.md``).
"""

from __future__ import annotations

def broker_subject(broker_id: int) -> str:
    return f"broker:{broker_id}"


def partition_subject(topic: str, partition: int) -> str:
    return f"partition:{topic}-{partition}"


def replica_subject(topic: str, partition: int, replica: int) -> str:
    return f"replica:{topic}-{partition}/{replica}"


def znode_subject(path: str) -> str:
    return f"znode:{path}"


def request_subject(name: str, correlation_id: int) -> str:
    return f"request:{name}#{correlation_id}"


def metric_subject(name: str) -> str:
    return f"metric:{name}"


def event_subject(name: str, event_id: int) -> str:
    return f"event:{name}#{event_id}"
