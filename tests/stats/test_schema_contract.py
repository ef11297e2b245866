"""The Spark schema, the Record dataclass and docs/records.md cannot drift apart: same fields,
compatible types, and every example in the docs parses with the schema without loss."""

from __future__ import annotations

import json
import re
from dataclasses import fields
from pathlib import Path

from pyspark.sql import functions as F
from pyspark.sql import types as T

from backend.core.records import FIELD_NAMES, Record, SessionHeader
from backend.stats.schema import (CORRUPT, HEADER_TYPES, JSON_OPTIONS, JSON_TEXT_FIELDS, LINE_SCHEMA, RECORD_TYPES,
                                  REQUIRED_RECORD_FIELDS)

DOC = Path(__file__).resolve().parents[2] / "docs" / "records.md"
INTEGERS = (T.IntegerType, T.LongType)


def python_type_allows(annotation: str, dtype: T.DataType, name: str) -> bool:
    """Does the Spark type hold what the dataclass annotation says (``int | None`` etc.)?"""
    base = annotation.replace(" | None", "").strip()
    if base == "int":
        return isinstance(dtype, INTEGERS)
    if base == "str":
        return isinstance(dtype, T.StringType)
    if base == "bool":
        return isinstance(dtype, T.BooleanType)
    if base.startswith("tuple[int"):
        return isinstance(dtype, T.ArrayType) and isinstance(dtype.elementType, INTEGERS)
    if base.startswith("dict"):
        return isinstance(dtype, T.StringType) and name in JSON_TEXT_FIELDS
    raise AssertionError(f"no rule for annotation {annotation!r} of {name}")


DOC_TYPES = {
    "int": lambda d: isinstance(d, INTEGERS),
    "string": lambda d: isinstance(d, T.StringType),
    "bool": lambda d: isinstance(d, T.BooleanType),
    "[int]": lambda d: isinstance(d, T.ArrayType) and isinstance(d.elementType, INTEGERS),
    "object": lambda d: isinstance(d, T.StringType),
}


def doc_field_types() -> dict[str, list[str]]:
    """Field -> the type words the docs' field table allows (``string/int`` allows either;
    one type per name when the cell lists as many types as the row names fields)."""
    table = re.search(r"## Fields\n(.*?)\n## ", DOC.read_text(), re.S).group(1)
    out: dict[str, list[str]] = {}
    for row in re.findall(r"^\| (`.*?) \| (.*?) \|", table, re.M):
        names = re.findall(r"`(\w+)`", row[0])
        types = [t.strip() for t in row[1].split(",")]
        for i, name in enumerate(names):
            cell = types[i] if len(types) == len(names) else types[0]
            out[name] = cell.split("/")
    return out


def test_the_schema_has_every_record_field_and_only_those_besides_the_header():
    names = [f.name for f in LINE_SCHEMA.fields]
    assert list(RECORD_TYPES) == list(FIELD_NAMES)
    assert set(names) == set(FIELD_NAMES) | set(HEADER_TYPES) | {CORRUPT}
    assert len(names) == len(set(names))


def test_schema_types_hold_what_the_dataclass_declares():
    for f in fields(Record):
        assert python_type_allows(str(f.type), RECORD_TYPES[f.name], f.name), f"{f.name}: {f.type} vs {RECORD_TYPES[f.name]}"


def test_required_fields_are_the_dataclass_fields_without_none():
    required = {f.name for f in fields(Record) if "None" not in str(f.type) and f.name != "detail"}
    assert set(REQUIRED_RECORD_FIELDS) == required


def test_every_session_header_field_is_in_the_schema_with_a_fitting_type():
    by_name = {f.name: f.dataType for f in LINE_SCHEMA.fields}
    for f in fields(SessionHeader):
        assert f.name in by_name, f"session header field {f.name} is missing from the Spark schema"
        annotation = str(f.type).replace(" | None", "")
        if annotation.startswith("dict"):
            assert isinstance(by_name[f.name], T.StringType) and f.name in JSON_TEXT_FIELDS
        else:
            assert python_type_allows(annotation, by_name[f.name], f.name)


def test_the_docs_field_table_agrees_with_the_schema():
    documented = doc_field_types()
    assert set(documented) == set(FIELD_NAMES)
    for name, words in documented.items():
        assert any(DOC_TYPES[w](RECORD_TYPES[name]) for w in words), f"{name}: docs say {words}, schema {RECORD_TYPES[name]}"


def test_every_docs_example_parses_with_the_schema_without_loss(spark):
    blocks = [b for b in re.findall(r"```json\n(.*?)\n```", DOC.read_text(), re.S)]
    df = spark.createDataFrame([(b,) for b in blocks], "text string")
    parsed = df.select("text", F.from_json("text", LINE_SCHEMA, JSON_OPTIONS).alias("r")).collect()
    for row in parsed:
        original = json.loads(row.text)
        got = row.r.asDict()
        assert got[CORRUPT] is None, f"the docs example does not fit the schema: {row.text[:120]}"
        for key, value in original.items():
            if key in JSON_TEXT_FIELDS:
                assert json.loads(got[key]) == value
            else:
                assert got[key] == value, f"{key}: {got[key]!r} != {value!r}"
