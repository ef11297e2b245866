"""The broker's side of controlled shutdown (§8): Kafka's ``KafkaServer.controlledShutdown``.

A stopping broker asks the controller, up to ``controlled.shutdown.max.retries`` times with
``controlled.shutdown.retry.backoff.ms`` between, to move its leaders elsewhere first; only then
does the process exit. Kept apart from the broker's life cycle because it is a conversation with
the controller, not a state of the process.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from backend.core.config import KafkaConfig
from backend.core.controller import events as ev
from backend.runtime.peers import ClusterServices
from backend.zk.client import KafkaZkClient


def controlled_shutdown(broker_id: int, broker_epoch: int, config: KafkaConfig, zk: KafkaZkClient,
                        services: ClusterServices, note_retry: Callable[[int, dict], None]) -> dict:
    """Ask until the controller answers with nothing left to move (or the retries run out);
    returns the last answer. ``note_retry(attempt, answer)`` records an attempt that did not finish."""
    answer: dict = {"error": "controlled.shutdown.enable is false"}
    if not config["controlled.shutdown.enable"]:
        return answer
    for attempt in range(1, config["controlled.shutdown.max.retries"] + 1):
        answer = _ask_controller(broker_id, broker_epoch, config, zk, services)
        if not answer.get("error") and not answer.get("remaining"):
            break
        note_retry(attempt, answer)
        time.sleep(config["controlled.shutdown.retry.backoff.ms"] / 1000)
    return answer


def _ask_controller(broker_id: int, broker_epoch: int, config: KafkaConfig, zk: KafkaZkClient,
                    services: ClusterServices) -> dict:
    """One ControlledShutdown request to the broker ``/controller`` names, answered or timed out
    after ``request.timeout.ms``."""
    controller_id = zk.get_controller_id()
    target = services.peers.controller_endpoint(controller_id) if controller_id is not None else None
    if target is None:
        return {"error": "NOT_CONTROLLER"}
    done, answer = threading.Event(), {}

    def callback(**result):
        answer.update(result)
        done.set()

    target.put(ev.ControlledShutdown(broker_id, broker_epoch, callback))
    if not done.wait(config["request.timeout.ms"] / 1000):
        return {"error": "REQUEST_TIMED_OUT"}
    return answer
