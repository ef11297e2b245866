"""One instance per process of a class whose work runs on threads of its own.

The process's replica scheduler (``broker/replica_scheduler.py``) serves every sandbox of the
process from a thread or two. (The loop of every ZooKeeper session and cable,
``backend/zk/io_loop.py``, keeps the same rule itself: ``backend/zk`` sits below the
runtime and cannot import it.) A forked child (a scale-out worker) inherits the parent's object but not its threads, so the
instance is made again the first time the child asks for it.
"""

from __future__ import annotations

import os
import threading
from typing import TypeVar

T = TypeVar("T", bound="PerProcess")

_lock = threading.Lock()


class PerProcess:
    _instance: tuple[int, PerProcess] | None = None
    """(pid, instance): the process that made it."""

    @classmethod
    def shared(cls: type[T]) -> T:
        """This process's instance, made on first use."""
        with _lock:
            made = cls.__dict__.get("_instance")
            if made is None or made[0] != os.getpid():
                made = (os.getpid(), cls())
                cls._instance = made
            return made[1]
