"""``kclab check LOG``: which of Kafka's controller rules held in a replay log, and which broke.

The same checks the page's invariant panel runs (``backend/view``), over a recorded session, so
a script, a lesson's author or CI can ask "did the zombie ever get a write through? were
acknowledged messages lost?" without a browser. Every violation names the record that broke the
rule and its cause.

Exit status: 0 when every rule held (``--allow RULE`` lets a rule break on purpose, e.g. an
unclean-election demo), 1 when a rule broke, 2 when the log cannot be read or is damaged (the
verdicts then cover the records before the damage). ``--json`` prints one JSON object instead.
"""

from __future__ import annotations

import json
import sys


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "check", help="check a replay log against the rules Kafka's controller keeps",
        description="Fold a replay log with the invariant checks of the page's panel and say, rule by rule, "
                    "whether it held; every violation names the record that broke it and its cause.")
    parser.add_argument("log", help="a replay log (.jsonl)")
    parser.add_argument("--json", action="store_true", help="print the verdicts as one JSON object")
    parser.add_argument("--allow", action="append", default=[], metavar="RULE",
                        help="a rule that may break without failing the check (repeatable)")
    parser.set_defaults(func=run)


def run(args) -> int:
    from backend.runtime.replay import read_replay
    from backend.view.rules import BY_ID, RULE_IDS

    unknown = [rule for rule in args.allow if rule not in BY_ID]
    if unknown:
        print(f"kclab check: unknown rule(s) {', '.join(unknown)}; the rules are {', '.join(RULE_IDS)}",
              file=sys.stderr)
        return 2
    try:
        replay = read_replay(args.log)
    except OSError as error:
        print(f"kclab check: cannot read {args.log}: {error.strerror or error}", file=sys.stderr)
        return 2
    if replay.header is None:
        print(f"kclab check: {replay.problem}: not a replay log", file=sys.stderr)
        return 2
    report = build_report(args.log, replay, set(args.allow))
    print(json.dumps(report, indent=1) if args.json else report_text(report))
    if replay.damage is not None:
        return 2
    return 0 if report["ok"] else 1


def build_report(name: str, replay, allowed: set[str]) -> dict:
    from backend.view.page import fold
    from backend.view.rules import RULES

    records = [r.to_dict() for r in replay.records]
    rules = fold(records)["invariants"]["rules"]
    out = {rule.id: {"title": rule.title, "status": rules[rule.id]["status"], "count": rules[rule.id]["count"],
                     "violations": [_violation(v) for v in rules[rule.id]["closed"] + rules[rule.id]["open"]],
                     "info": rules[rule.id]["info"]} for rule in RULES}
    broke = [rule for rule, verdict in out.items() if verdict["count"]]
    return {"log": str(name), "session_id": replay.header.session_id, "records": len(records),
            "damage": replay.problem, "rules": out, "broke": broke,
            "ok": not [rule for rule in broke if rule not in allowed]}


def _violation(v: dict) -> dict:
    return {key: v.get(key) for key in ("seq", "cause_seq", "status", "text", "until")}


def report_text(report: dict) -> str:
    lines = [f"{report['log']}: {report['records']} records of session {report['session_id']}"]
    if report["damage"]:
        lines.append(f"  damaged: {report['damage']} — the verdicts cover the records before it")
    for rule, verdict in report["rules"].items():
        word = "BROKE" if verdict["count"] else "held"
        lines.append(f"  {word:5}  {rule:17} {verdict['title']}"
                     + (f" — {verdict['count']} violation(s)" if verdict["count"] else ""))
        for v in verdict["violations"]:
            if v["status"] == "broken" or v["until"] is None:
                cause = f", cause #{v['cause_seq']}" if v["cause_seq"] is not None else ""
                until = f", repaired at #{v['until']}" if v["until"] is not None else ""
                lines.append(f"         #{v['seq']}{cause}{until}: {v['text']}")
        info = verdict["info"] if isinstance(verdict["info"], dict) else {}
        lines += [f"         zombie: {zombie['text']}" for zombie in info.get("zombies", [])]
    broke = report["broke"]
    lines.append("every rule held" if not broke else f"broke: {', '.join(broke)}"
                 + ("" if report["ok"] else " (not allowed)"))
    return "\n".join(lines)
