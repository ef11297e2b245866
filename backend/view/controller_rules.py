"""The controller's rules: one controller with the current epoch, epochs that only go up, no
stale request applied (``one_controller``, ``epochs_monotonic``, ``no_stale_apply``).

Who believes it is controller comes from the ``controller`` records (``elected`` … ``resigned``);
the current epoch is the highest in ``/controller_epoch`` or in an election. A believer with an
older epoch is a zombie: named, and marked harmless once ZooKeeper or a broker fenced it.
"""

from __future__ import annotations

from typing import Any

from backend.core.records import BROKER_TO_CONTROLLER_REQUESTS
from backend.view.violations import and_text, close_violation, event_violation, is_int, open_violation


def controller_epoch(c: dict, r: dict, data: Any) -> None:
    memo = c["memo"]
    if not is_int(data):
        memo["zk_epoch"] = None  # deleted (or not a number): the next value starts afresh
        return
    old = memo["zk_epoch"]
    if old is not None and data < old:
        event_violation(c, "epochs_monotonic", r, f"/controller_epoch went down from {old} to {data}.",
                        "znode:/controller_epoch")
    memo["zk_epoch"] = data
    _current_epoch(c, r, data)


def leader_epoch(c: dict, r: dict, key: str, data: Any) -> None:
    epochs = c["memo"]["leader_epochs"]
    epoch = data.get("leader_epoch") if isinstance(data, dict) else None
    if not is_int(epoch):
        epochs.pop(key, None)  # the state znode is gone (topic deleted): a new one starts at 0
        return
    old = epochs.get(key)
    if old is not None and epoch < old:
        event_violation(c, "epochs_monotonic", r, f"{key}'s leader epoch went down from {old} to {epoch}.",
                        f"partition:{key}")
    epochs[key] = epoch


def on_controller(c: dict, view: dict, r: dict) -> None:
    broker, to_state, believers = r.get("broker_id"), r.get("to_state"), c["memo"]["believers"]
    if broker is None:
        return
    if to_state == "elected":
        believers[str(broker)] = {"broker": broker, "epoch": r.get("controller_epoch"), "since": r["seq"],
                                  "fenced": None, "how": None}
        if is_int(r.get("controller_epoch")):
            _current_epoch(c, r, r["controller_epoch"])
            return
    elif to_state == "resigned":
        believers.pop(str(broker), None)
    elif to_state == "fenced":
        fence(c, broker, r, "ZooKeeper refused its write")
        return
    else:
        return
    _check_controllers(c, r)


def _current_epoch(c: dict, r: dict, epoch: int) -> None:
    memo = c["memo"]
    memo["epoch"] = epoch if memo["epoch"] is None else max(memo["epoch"], epoch)
    _check_controllers(c, r)


def fence(c: dict, broker: int, r: dict, how: str) -> None:
    believer = c["memo"]["believers"].get(str(broker))
    if believer is not None and believer["fenced"] is None:
        believer.update(fenced=r["seq"], how=how)
        _check_controllers(c, r)


def _check_controllers(c: dict, r: dict) -> None:
    """At most one believer with the current epoch; older believers are zombies, named."""
    epoch = c["memo"]["epoch"]
    believers = sorted(c["memo"]["believers"].values(), key=lambda b: b["broker"])
    current = [b["broker"] for b in believers if b["epoch"] == epoch]
    zombies = [_zombie(b, epoch) for b in believers if is_int(b["epoch"]) and epoch is not None and b["epoch"] < epoch]
    c["rules"]["one_controller"]["info"] = {"controllers": current, "zombies": zombies}
    key = f"epoch:{epoch}"
    for violation in list(c["rules"]["one_controller"]["open"]):
        if violation["key"] != key or len(current) < 2:
            close_violation(c, "one_controller", violation["key"], r)
    if len(current) >= 2:
        open_violation(c, "one_controller", key, r,
                       f"Brokers {and_text(current)} all act as controller with epoch {epoch}.", "broken",
                       "znode:/controller_epoch")


def _zombie(b: dict, epoch: int) -> dict:
    text = (f"Broker {b['broker']} still believes it is the controller, with epoch {b['epoch']}; the current epoch "
            f"is {epoch}: a zombie. ")
    if b["fenced"] is None:
        text += (f"Not fenced yet: its next write fails ZooKeeper's check on /controller_epoch, and brokers that "
                 f"know epoch {epoch} refuse its requests.")
    else:
        text += f"Fenced at #{b['fenced']} ({b['how']}): harmless."
    return {"broker": b["broker"], "epoch": b["epoch"], "since": b["since"], "fenced": b["fenced"], "text": text}


def on_broker(c: dict, view: dict, r: dict) -> None:
    broker, to_state = r.get("broker_id"), r.get("to_state")
    if to_state == "started":
        c["memo"]["applied"].pop(str(broker), None)  # a new process remembers no controller epoch
    elif to_state in ("crashed", "stopped") and c["memo"]["believers"].pop(str(broker), None) is not None:
        _check_controllers(c, r)


def on_request(c: dict, view: dict, r: dict) -> None:
    to_state, broker, epoch = r.get("to_state"), r.get("broker_id"), r.get("controller_epoch")
    name = r.get("op") or r["subject"][len("request:"):]
    rule = c["rules"]["no_stale_apply"]
    if name in BROKER_TO_CONTROLLER_REQUESTS:
        return  # applied by the controller, not by ``broker_id``: says nothing of the epochs a broker saw
    if to_state == "applied" and broker is not None and is_int(epoch):
        seen = c["memo"]["applied"].get(str(broker))
        if seen is not None and epoch < seen:
            event_violation(c, "no_stale_apply", r,
                            f"Broker {broker} applied {name} from controller {r.get('controller_id')} with epoch "
                            f"{epoch}, although it had already applied epoch {seen}.", f"broker:{broker}")
        else:
            c["memo"]["applied"][str(broker)] = epoch
    elif to_state == "rejected" and r.get("outcome") == "rejected_stale_epoch":
        info = rule["info"] or {"refused": 0, "last": None}
        rule["info"] = {"refused": info["refused"] + 1, "last": r["seq"]}
        if r.get("controller_id") is not None:
            fence(c, r["controller_id"], r, f"broker {broker} refused its {name}")
