"""The rules Kafka 2.8's controller and replication keep, by id: the one catalogue.

Every place that names a rule uses these ids — the page's invariant panel (a port of this table
in ``static/js/invariants-model.js``, checked against it), ``kclab check``, a script's
``expect: {rules: …}``, a lesson's ``highlight: rule:<id>`` and ``predict`` answer
``rule_broken``, and the statistics' ``violations`` dataset. ``statement`` is the rule as a
student reads it; ``why`` says which part of Kafka keeps it, so the rule can be looked up in
Kafka's source. The checks themselves are ``backend.view.invariants``.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    statement: str
    why: str


RULES: tuple[Rule, ...] = (
    Rule("one_controller", "One controller",
         "At most one broker acts as controller with the current /controller_epoch.",
         "KafkaController.elect creates /controller and bumps /controller_epoch in one transaction; a zombie "
         "that still believes it is controller has an older epoch, so its writes and requests are refused."),
    Rule("epochs_monotonic", "Epochs only go up",
         "/controller_epoch and every partition's leader_epoch never go down.",
         "Each new controller writes the epoch it read plus one; each leader election writes leader_epoch + 1 "
         "(LeaderAndIsr.newLeaderAndIsr)."),
    Rule("leader_in_isr", "Leader is live and in the ISR",
         "Every online partition's leader is a live broker in its ISR, and the ISR is a subset of the replicas.",
         "PartitionStateMachine elects only a live ISR member (or, unclean, a live replica with ISR = [it]); "
         "a BrokerChange moves a dead leader's partitions offline and elects again."),
    Rule("no_stale_apply", "No stale requests applied",
         "No broker applies a request from a controller epoch lower than one it has already seen.",
         "ReplicaManager answers STALE_CONTROLLER_EPOCH to LeaderAndIsr, UpdateMetadata and StopReplica from "
         "an older controller epoch."),
    Rule("acked_not_lost", "Acknowledged messages are not lost",
         "No acknowledged message is lost. Kafka promises it for acks=all while unclean leader election is off; "
         "acks=1 and unclean elections give the promise up.",
         "A clean election picks an ISR member, which has every message acknowledged with acks=all."),
    Rule("hw_le_leo", "High watermark within the log",
         "On every replica the high watermark is at most the log end offset.",
         "Partition.maybeIncrementLeaderHW takes the smallest log end offset in the ISR; a follower's high "
         "watermark is min(leader's HW, its own LEO)."),
    Rule("min_isr_ack", "acks=all waited for min.insync.replicas",
         "An acks=all acknowledgement had at least min.insync.replicas replicas in the ISR.",
         "Partition.checkEnoughReplicasReachOffset answers NOT_ENOUGH_REPLICAS_AFTER_APPEND when the ISR "
         "shrank below min.insync.replicas."),
)

RULE_IDS: tuple[str, ...] = tuple(rule.id for rule in RULES)
BY_ID: dict[str, Rule] = {rule.id: rule for rule in RULES}
STATUSES = ("holds", "waiting", "broken")
"""A rule's status now: ``waiting`` — broken for a moment the controller is about to repair (a
leader whose broker just died, before the controller handled the BrokerChange)."""

JS_CATALOGUE = "static/js/rules-catalogue.js"


def catalogue_js() -> str:
    """The page's copy of the catalogue as an ES module (``static/js/rules-catalogue.js``).

    Generated, never retyped: the page needs the titles and statements before any request (the
    invariant panel, a lesson's ``rule:`` highlight and the dashboard draw them at load), so the
    file is written from this table — ``python -m backend.view.rules > static/js/rules-catalogue.js``
    — and a test fails when the committed file differs from what this returns.
    """
    import json
    rules = ",\n".join(f"  {json.dumps({'id': r.id, 'title': r.title, 'statement': r.statement})}" for r in RULES)
    return ("// GENERATED from backend/view/rules.py by `python -m backend.view.rules`: do not edit.\n"
            "/** The rules Kafka's controller keeps: id, title, the rule in words. */\n"
            f"export const RULES = [\n{rules},\n];\n")


if __name__ == "__main__":
    print(catalogue_js(), end="")
