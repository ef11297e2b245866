"""Real logs made to break a rule: what a broken implementation would have recorded.

A correct cluster keeps almost every rule, so the checks could pass by never saying "broken".
Each function here takes the records of a real replay log (the zombie-controller or the
unclean-election script) and changes the few records a particular bug would have changed —
a broker applying a stale request, a leader epoch written lower, a controller that forgets a
dead leader — keeping seqs dense. ``BREAKS`` maps each to the log it starts from and the rule
it must break; the Python checks and the page's port are compared on every one of them.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Callable

STATE_ZNODE = "znode:/brokers/topics/t/partitions/{}/state"


def read_records(path: Path) -> list[dict]:
    lines = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    return lines[1:]


def write_log(path: Path, records: list[dict], like: Path) -> Path:
    """``records`` as a replay log with ``like``'s session header."""
    header = Path(like).read_text().splitlines()[0]
    path.write_text("\n".join([header, *(json.dumps(r) for r in records)]) + "\n")
    return path


def _first(records: list[dict], test: Callable[[dict], bool], last: bool = False) -> dict:
    found = [r for r in records if test(r)]
    assert found, "the log lacks the record this mutation changes"
    return found[-1] if last else found[0]


def two_controllers(records: list[dict]) -> list[dict]:
    """The second controller writes epoch 1 again (no +1): the paused zombie and it both believe
    they are controller with the current epoch."""
    out = copy.deepcopy(records)
    second = [r for r in out if r["kind"] == "controller" and r.get("to_state") == "elected"][1]
    second["controller_epoch"] = 1
    for r in out:
        if r["subject"] == "znode:/controller_epoch" and (r.get("detail") or {}).get("data") == 2:
            r["detail"]["data"] = 1
    return out


def epoch_goes_down(records: list[dict]) -> list[dict]:
    """The last write of t-0's state znode carries leader epoch 0 again."""
    out = copy.deepcopy(records)
    state = _first(out, lambda r: r["subject"] == STATE_ZNODE.format(0) and r.get("to_state") == "changed", last=True)
    state["detail"]["data"]["leader_epoch"] = 0
    return out


def leader_outside_isr(records: list[dict]) -> list[dict]:
    """The last write of t-1's state znode leaves its leader out of the ISR."""
    out = copy.deepcopy(records)
    state = _first(out, lambda r: r["subject"] == STATE_ZNODE.format(1) and r.get("to_state") == "changed", last=True)
    data = state["detail"]["data"]
    data["isr"] = [b for b in data["isr"] if b != data["leader"]]
    return out


def leader_left_behind(records: list[dict]) -> list[dict]:
    """The new controller never takes t-0 away from its dead leader: the records of it doing so
    (ISR change, offline partition, the state znode's leader -1) are gone."""
    crash = _first(records, lambda r: r["kind"] == "fault" and r.get("op") == "stop_broker")["seq"]  # the leader goes
    election = _first(records, lambda r: r["kind"] == "election" and r.get("to_state") == "elected"
                      and r["seq"] > crash)["seq"]

    def moved_away(r: dict) -> bool:
        if not crash < r["seq"] < election or r.get("topic", "t") != "t":
            return False
        return (r["kind"] in ("isr", "partition") or (r["subject"] == STATE_ZNODE.format(0)
                                                       and r["detail"]["data"]["leader"] == -1))
    return renumbered([r for r in records if not moved_away(r)])


def stale_request_applied(records: list[dict]) -> list[dict]:
    """A broker applies the zombie's LeaderAndIsr instead of refusing it."""
    out = copy.deepcopy(records)
    bounced = _first(out, lambda r: r["kind"] == "request" and r.get("outcome") == "rejected_stale_epoch")
    bounced.update(to_state="applied", outcome="ok")
    return out


def acks_all_lost(records: list[dict]) -> list[dict]:
    """The lost messages were acks=all and the election clean: Kafka's promise broken."""
    out = copy.deepcopy(records)
    _first(out, lambda r: r.get("to_state") == "lost")["acks"] = "all"
    _first(out, lambda r: r.get("election") == "offline_unclean")["election"] = "offline"
    return out


def hw_above_leo(records: list[dict]) -> list[dict]:
    """A follower reports a high watermark beyond its own log."""
    out = copy.deepcopy(records)
    fetched = _first(out, lambda r: r["kind"] == "log" and r.get("to_state") == "fetched")
    fetched["detail"]["hw"] = fetched["detail"]["leo"] + 3
    return out


def acked_with_short_isr(records: list[dict]) -> list[dict]:
    """An acks=all acknowledgement while the ISR was below min.insync.replicas."""
    out = copy.deepcopy(records)
    ack = _first(out, lambda r: r.get("to_state") == "acknowledged" and r.get("acks") == "all")
    assert "isr" in ack, "an acks=all acknowledgement records the ISR the leader counted"
    ack["isr"] = ack["isr"][:1]
    ack["detail"]["min_insync_replicas"] = 2
    return out


def renumbered(records: list[dict]) -> list[dict]:
    """Dense seqs again after records were left out (causes follow their records)."""
    out = copy.deepcopy(records)
    new = {r["seq"]: i for i, r in enumerate(out)}
    for i, r in enumerate(out):
        r["seq"] = i
        cause = r.get("cause_seq")
        if cause is not None and cause not in new:  # its cause was left out: the record before it
            cause = max((s for s in new if s < cause), default=None)
        if cause is not None:
            r["cause_seq"] = new[cause]
    return out


ZOMBIE, UNCLEAN = "zombie_controller_fenced", "unclean_election_loses_acks1"
BREAKS = {  # name: (log, mutation, the rule it breaks)
    "two_controllers": (ZOMBIE, two_controllers, "one_controller"),
    "epoch_goes_down": (ZOMBIE, epoch_goes_down, "epochs_monotonic"),
    "leader_outside_isr": (ZOMBIE, leader_outside_isr, "leader_in_isr"),
    "leader_left_behind": (UNCLEAN, leader_left_behind, "leader_in_isr"),
    "stale_request_applied": (ZOMBIE, stale_request_applied, "no_stale_apply"),
    "unclean_election": (UNCLEAN, lambda records: records, "acked_not_lost"),
    "acks_all_lost": (UNCLEAN, acks_all_lost, "acked_not_lost"),
    "hw_above_leo": (UNCLEAN, hw_above_leo, "hw_le_leo"),
    "acked_with_short_isr": (UNCLEAN, acked_with_short_isr, "min_isr_ack"),
}
