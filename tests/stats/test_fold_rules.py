"""The statistics' rules fold (``backend.stats.violations.session_violations``) says what the
page's checks say.

It decodes a log's lines its own, cheaper way (issue 16), so it is held here to the plain
reference — every kept line through ``json.loads``, sorted by seq, folded by
``backend.view.page.broken_rules`` — on the real zombie-controller and unclean-election logs,
on those logs changed so that each rule breaks, with their lines shuffled, damaged lines set
aside and a torn last line; and on lines a JSON decoder could read differently. Pure: no Spark.
"""

from __future__ import annotations

import json
import random
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backend.stats.violations import decode_lines, fold_ahead, fold_logs, session_violations
from backend.view.page import broken_rules
from tests.view.breaking import BREAKS, read_records

TRICKY = ['{"a": 1}', ' {"a":1} ', '{"a":1}\t', '{"n": NaN, "i": Infinity, "m": -Infinity}',
          '{"big": 123456789012345678901234567890, "neg": -98765432109876543210}',
          '{"s": "\\ud800 \\u00e9 é \\n"}', '{"f": 1e400, "g": 2.5e-324, "h": -0.0, "k": 1.0000000000000002}',
          '{"a": 1, "a": 2}', '[1, {"b": null}, true]', '"text"', '7', '-0', ' \t{"a": [[[[1]]]]}\r',
          '{"d": 1.00000000000000000000000000001, "e": 0.1e-400, "x": 123e-5, "y": 1E5}',
          '{"raw": "\ud800 a lone surrogate in the text itself"}']


def test_each_line_decodes_as_json_loads_decodes_it():
    # repr tells 1 from 1.0, -0.0 from 0.0, a big int from a float, and writes NaN as nan
    for line in TRICKY:
        assert repr(decode_lines([line])) == repr([json.loads(line)]), line
    assert repr(decode_lines(TRICKY)) == repr([json.loads(line) for line in TRICKY])


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.integers(-2**80, 2**80) | st.text()
                    | st.floats(allow_nan=False, allow_infinity=False),
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                    max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(JSON, st.booleans())
def test_any_json_value_decodes_as_json_loads_decodes_it(value, ascii_only):
    line = json.dumps(value, ensure_ascii=ascii_only)
    assert repr(decode_lines([line])) == repr([json.loads(line)])


@pytest.mark.parametrize("line", ['{"a":1} x', '{"a":1},{"b":2}', '{"a":[1', '', '{"a":"\x01"}', '\x0c{"a":1}', '01'])
def test_a_line_that_is_not_one_json_value_fails_as_json_loads_fails(line):
    with pytest.raises(ValueError) as want:
        json.loads(line)
    with pytest.raises(ValueError) as got:
        decode_lines(['{"seq": 0}', line])
    assert str(got.value) == str(want.value)


def as_log(records: list[dict], like, seed: int) -> tuple[str, list[int]]:
    """``records`` as a log's text with ``like``'s header, in a shuffled order, with damaged lines
    (and a torn last line) among them: the text and the numbers of the lines set aside."""
    lines = [json.dumps(r) for r in records]
    random.Random(seed).shuffle(lines)
    for junk in ("", "not json", '{"kind": "zk", "seq":'):
        lines.insert(random.Random(seed + len(junk)).randrange(len(lines)), junk)
    lines = [like.read_text().splitlines()[0], *lines, '{"kind": "log", "se']
    return "\n".join(lines), [i for i, line in enumerate(lines) if i and not line.endswith("}")]


@pytest.mark.parametrize("name", ["zombie_controller_fenced", "unclean_election_loses_acks1", *sorted(BREAKS)])
def test_a_logs_fold_gives_the_reference_verdicts(name, protocol_logs):
    log_name, mutate, rule = BREAKS.get(name, (name, lambda records: records, None))
    records = mutate(read_records(protocol_logs[log_name]))
    text, set_aside = as_log(records, protocol_logs[log_name], seed=len(name))
    want = broken_rules(sorted((json.loads(json.dumps(r)) for r in records), key=lambda r: r["seq"]))
    assert session_violations(text, set_aside) == want
    if rule is not None:
        assert want.get(rule, 0) >= 1, f"{name} should break {rule}"
    else:
        assert set(want) == ({"acked_not_lost"} if name.startswith("unclean") else set())


def test_lines_past_the_parses_count_are_not_read(protocol_logs):
    """A session still being recorded grows between the parse and the fold: the fold reads the
    lines the parse counted (the next run reads the log again), so a half-written new line is
    not decoded (it would fail the whole log)."""
    text = protocol_logs["zombie_controller_fenced"].read_text()
    counted = text.count("\n")
    assert session_violations(text + '{"kind": "zk", "se', [], counted) == session_violations(text, [])
    with pytest.raises(ValueError):
        session_violations(text + '{"kind": "zk", "se\n', [])


def test_the_drivers_fold_reads_each_log_as_its_own_fold(protocol_logs, tmp_path):
    """``fold_logs`` gives, per session key, what ``session_violations`` gives for the log's
    text; a log removed since the parse gives no rows."""
    path = protocol_logs["unclean_election_loses_acks1"]
    (tmp_path / "a log.jsonl").write_bytes(path.read_bytes())
    n_lines = path.read_text().count("\n")
    rows = fold_logs(tmp_path, {7: ("a log.jsonl", n_lines, []), 8: ("gone.jsonl", 3, [])}).to_pylist()
    want = session_violations(path.read_text(), [])
    assert want and rows == [{"sk": 7, "rule": rule, "violations": n} for rule, n in want.items()]


def test_a_fold_ahead_of_the_parse_counts_only_where_the_parse_agrees(protocol_logs, tmp_path):
    """The driver folds a small batch while Spark parses it, as if only a torn last line were
    set aside; a verdict counts only where the parse then counted the same lines and set aside
    the same ones, else the log is folded again with the parse's word."""
    text = protocol_logs["unclean_election_loses_acks1"].read_text()
    n = text.count("\n")
    want = session_violations(text, [])
    lines = text.split("\n")
    (tmp_path / "clean.jsonl").write_text(text)
    (tmp_path / "torn.jsonl").write_text(text + '{"kind": "log", "se')
    (tmp_path / "damaged.jsonl").write_text("\n".join(lines[:5] + ['{"kind": "zk", "se'] + lines[5:]))
    ahead = fold_ahead(tmp_path, ["clean.jsonl", "torn.jsonl", "damaged.jsonl", "gone.jsonl"], threading.Event())
    assert want and ahead["clean.jsonl"] == (n, [], want) and ahead["torn.jsonl"] == (n + 1, [n], want)
    assert ahead["damaged.jsonl"] == (n + 1, [], None) and "gone.jsonl" not in ahead

    def verdicts(rows):
        out = {}
        for row in rows.to_pylist():
            out.setdefault(row["sk"], {})[row["rule"]] = row["violations"]
        return out

    (tmp_path / "clean.jsonl").unlink()  # from here on only the fold ahead knows these two
    (tmp_path / "torn.jsonl").unlink()
    agreed = {1: ("clean.jsonl", n, []), 2: ("torn.jsonl", n + 1, [n]), 3: ("damaged.jsonl", n + 1, [5])}
    assert verdicts(fold_logs(tmp_path, agreed, ahead)) == {1: want, 2: want, 3: want}
    # The parse saw otherwise (the log grew; it set another line aside): read again, and gone.
    disagreed = {1: ("clean.jsonl", n + 1, []), 2: ("torn.jsonl", n + 1, [])}
    assert fold_logs(tmp_path, disagreed, ahead).num_rows == 0
    stopped = threading.Event()
    stopped.set()
    assert fold_ahead(tmp_path, ["damaged.jsonl"], stopped) == {}
