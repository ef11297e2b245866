"""Is the server keeping up with the class? What the instructor's page shows, worker by worker.

An instructor of 200 students on one machine cannot see the server: when it falls behind,
students' actions are refused ("overloaded, try again in 2 s") and brokers nobody touched drop
their ZooKeeper connections and lose their sessions (their records say so: ``lab_server_late``,
docs/records.md). The instructor, who can ask the class to slow down or hand out fewer copies,
should know it as soon as the students do. Each worker's own figures are ``web/load_guard.py``'s
(``/healthz`` has them too, but a load balancer sends that to any one worker); with several
workers each publishes its own with its heart-beat (``web/scaleout/workers.py``) and the class's
owner adds them up here. Counters, not rates: the page keeps a minute of samples and says what
changed in it (``static/js/views/server-load.js``).
"""

from __future__ import annotations

COUNTERS = ("refused", "zk_dropped", "zk_expired")
"""Since the worker started; the page tells their increase."""


def this_worker(state) -> dict:
    """This worker's figures (``state``: the app's ``Kclab``): its sandboxes and its load guard's
    ``describe()`` — what it publishes with its heart-beat, and the first row of the answer."""
    load = state.load_guard.describe()
    return {"sandboxes": len(state.sandboxes.all()), "zk_lag_ms": load["zk_lag_ms"],
            "zk_limit_ms": load["zk_limit_ms"], "lag_ms": load["lag_ms"], "shedding": bool(load["shedding"]),
            **{name: int(load[name]) for name in COUNTERS}}


def whole_server(state) -> dict:
    """Every worker's figures (this one first, then the others' as published), their sum, and
    the sandbox cap."""
    workers = state.workers
    mine = {"worker": workers.id if workers is not None else "this", **this_worker(state)}
    return _added_up([mine, *(workers.others_load() if workers is not None else [])],
                     state.sandboxes.places.capacity.sandboxes)


def _added_up(workers: list[dict], cap: int) -> dict:
    return {"workers": workers, "sandboxes": sum(w["sandboxes"] for w in workers), "cap": cap,
            "shedding": any(w["shedding"] for w in workers),
            "zk_lag_ms": max(w["zk_lag_ms"] for w in workers),
            **{name: sum(w[name] for w in workers) for name in COUNTERS}}
