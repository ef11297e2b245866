"""``kclab check LOG``: the verdicts a script or CI reads, and exit statuses it can rely on."""

from __future__ import annotations

import json

from web.cli import main


def check(capsys, *args):
    status = main(["check", *map(str, args)])
    out = capsys.readouterr()
    return status, out.out, out.err


def test_the_zombie_log_keeps_every_rule(protocol_logs, capsys):
    status, out, _ = check(capsys, protocol_logs["zombie_controller_fenced"])
    assert status == 0 and out.strip().endswith("every rule held")
    assert "held   one_controller" in out


def test_the_unclean_election_breaks_the_data_rule_and_names_the_messages(protocol_logs, capsys):
    log = protocol_logs["unclean_election_loses_acks1"]
    status, out, _ = check(capsys, log)
    assert status == 1
    assert "BROKE  acked_not_lost" in out and "offset(s) 2–6 (acks=1)" in out
    assert out.strip().endswith("broke: acked_not_lost (not allowed)")
    status, out, _ = check(capsys, log, "--allow", "acked_not_lost")
    assert status == 0 and out.strip().endswith("broke: acked_not_lost")


def test_json_names_the_record_that_broke_the_rule_and_its_cause(protocol_logs, capsys):
    status, out, _ = check(capsys, protocol_logs["unclean_election_loses_acks1"], "--json")
    report = json.loads(out)
    assert status == 1 and report["broke"] == ["acked_not_lost"] and report["ok"] is False
    [violation] = report["rules"]["acked_not_lost"]["violations"]
    assert violation["status"] == "broken" and violation["cause_seq"] < violation["seq"]
    assert report["rules"]["leader_in_isr"]["count"] == 0
    assert set(report["rules"]) == {"one_controller", "epochs_monotonic", "leader_in_isr", "no_stale_apply",
                                    "acked_not_lost", "hw_le_leo", "min_isr_ack"}


def test_a_damaged_log_is_checked_up_to_the_damage_and_exits_2(protocol_logs, capsys, tmp_path):
    lines = protocol_logs["unclean_election_loses_acks1"].read_text().splitlines(keepends=True)
    torn = tmp_path / "torn.jsonl"
    torn.write_text("".join(lines[:40]) + lines[40][:20])
    status, out, _ = check(capsys, torn)
    assert status == 2 and "damaged: torn.jsonl:41:" in out and "39 records" in out


def test_what_cannot_be_checked_says_why(capsys, tmp_path):
    status, _, err = check(capsys, tmp_path / "missing.jsonl")
    assert status == 2 and "cannot read" in err and "No such file" in err
    (tmp_path / "notes.jsonl").write_text('{"hello": 1}\n')
    status, _, err = check(capsys, tmp_path / "notes.jsonl")
    assert status == 2 and "not a replay log" in err
    status, _, err = check(capsys, tmp_path / "notes.jsonl", "--allow", "leader_in_irs")
    assert status == 2 and "unknown rule(s) leader_in_irs" in err
