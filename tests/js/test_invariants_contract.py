"""The page's rule checks (static/js/invariants-model.js) and Python's (backend/view/invariants.py)
agree: the same logs, the same verdicts, record by record.

Python is the reference; the page folds the same records itself (live, scrubbed, in a class),
so after every record of a log both must hold exactly the same ``view["invariants"]`` — every
rule's status, count, open and closed violations with their words, and the memory behind them.
The logs: the real zombie-controller and unclean-election runs, and each of them changed the
way a bug would have changed it, so that every rule is seen broken in both languages.
"""

from __future__ import annotations

import json
import subprocess

import pytest

from backend.view.page import fold
from backend.view.rules import JS_CATALOGUE, RULE_IDS, RULES, catalogue_js
from tests.js.test_model_contract import ROOT, js_fold, node
from tests.view.breaking import BREAKS, read_records, write_log


def python_each(records: list[dict]) -> list[dict]:
    view, out = None, []
    for record in records:
        view = fold([record], view)
        out.append(json.loads(json.dumps(view["invariants"])))
    return out


def assert_agree(records: list[dict], log, tmp_path, name: str) -> list[dict]:
    path = write_log(tmp_path / f"{name}.jsonl", records, like=log)
    python, js = python_each(records), js_fold(path, "--each", "invariants")
    assert len(js) == len(python) == len(records)
    for record, p, j in zip(records, python, js):
        assert p == j, (f"{name}: the checks differ after seq {record['seq']} ({record['kind']} {record['subject']}):\n"
                        f"  python {json.dumps(p['rules'], sort_keys=True)[:1500]}\n"
                        f"  js     {json.dumps(j['rules'], sort_keys=True)[:1500]}")
    return python


@pytest.mark.parametrize("name", ["zombie_controller_fenced", "unclean_election_loses_acks1"])
def test_real_logs_agree_record_by_record(name, protocol_logs, tmp_path):
    states = assert_agree(read_records(protocol_logs[name]), protocol_logs[name], tmp_path, name)
    broken = {rule for rule in RULE_IDS if states[-1]["rules"][rule]["count"]}
    assert broken == ({"acked_not_lost"} if name.startswith("unclean") else set())


@pytest.mark.parametrize("name", sorted(BREAKS))
def test_logs_where_a_rule_breaks_agree_record_by_record(name, protocol_logs, tmp_path):
    log_name, mutate, rule = BREAKS[name]
    log = protocol_logs[log_name]
    states = assert_agree(mutate(read_records(log)), log, tmp_path, name)
    final = states[-1]["rules"][rule]
    assert final["count"] >= 1, f"{name} should break {rule}: {final}"
    assert any(s["rules"][rule]["status"] == "broken" for s in states)


def test_the_pages_catalogue_of_rules_is_generated_from_pythons():
    """Written once: the page's catalogue is the generated file, unchanged since it was generated."""
    assert (ROOT / JS_CATALOGUE).read_text() == catalogue_js(), \
        f"regenerate it: .venv/bin/python -m backend.view.rules > {JS_CATALOGUE}"
    done = subprocess.run([node(), "--input-type=module", "-e",
                           "import {RULES} from './static/js/invariants-model.js';"
                           "console.log(JSON.stringify(RULES));"],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [{"id": r.id, "title": r.title, "statement": r.statement} for r in RULES]
