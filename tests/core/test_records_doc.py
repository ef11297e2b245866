"""docs/records.md and the record type cannot drift: the field table lists exactly the fields,
and every example is a valid record of schema version 1."""

import json
import re
from pathlib import Path

from backend.core.records import FIELD_NAMES, KINDS, Record, SessionHeader

DOC = Path(__file__).resolve().parents[2] / "docs" / "records.md"


def examples():
    return [json.loads(block) for block in re.findall(r"```json\n(.*?)\n```", DOC.read_text(), re.S)]


def test_the_field_table_lists_every_field_once():
    table = re.search(r"## Fields\n(.*?)\n## ", DOC.read_text(), re.S).group(1)
    names = [n for row in re.findall(r"^\| (`.*?) \|", table, re.M) for n in re.findall(r"`(\w+)`", row)]
    assert sorted(names) == sorted(FIELD_NAMES)


def test_every_example_is_a_valid_record_and_every_kind_has_one():
    blocks = examples()
    headers = [b for b in blocks if b.get("kind") == "session"]
    assert len(headers) == 1 and SessionHeader.from_dict(headers[0])
    records = [Record.from_dict(b) for b in blocks if b.get("kind") != "session"]
    assert {r.kind for r in records} == set(KINDS)


def test_the_kinds_table_names_every_kind():
    table = re.search(r"## Kinds\n(.*?)\n## ", DOC.read_text(), re.S).group(1)
    assert set(re.findall(r"^\| `(\w+)` \|", table, re.M)) == set(KINDS)
