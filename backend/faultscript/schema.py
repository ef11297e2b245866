"""The JSON Schema of fault scripts (and of lessons' script parts), generated from the vocabulary.

The browser's lesson editor validates as the author types with this schema; the loader
(``parse_script``) stays the authority. The schema is built from the same field types as the
loader's checks, so the two agree on shapes, types, names and defaults; what a schema cannot say
(is broker 7 in *this* cluster, does topic ``t`` exist at step 5, are all assignment lists the
same length) only the loader checks.

``script.schema.json`` beside this module is the generated file, committed so the front end can
serve it without Python; a test fails when it is stale. Regenerate it with::

    .venv/bin/python -m backend.faultscript.schema
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Mapping

from backend.faultscript.cluster_spec import CLUSTER_FIELDS
from backend.faultscript.fields import fields_schema
from backend.faultscript.vocabulary import SCRIPT_VOCABULARY, Op

SCHEMA_PATH = Path(__file__).with_name("script.schema.json")


def op_schema(op: Op) -> dict:
    """One op's step: ``op`` plus exactly its fields, and its rules."""
    out = fields_schema(op.fields, *(dict(rule.schema) for rule in op.rules))
    out["properties"] = {"op": {"const": op.name}, **out["properties"]}
    out["required"] = ["op", *out.get("required", [])]
    return {"title": op.name, "description": op.doc, **out}


def build_schema(vocabulary: Mapping[str, Op] = SCRIPT_VOCABULARY, extra_keys: Mapping | None = None,
                 title: str = "Kafka Controller Lab fault script", source: str = "backend/faultscript/vocabulary.py",
                 required: tuple[str, ...] = ("cluster", "steps")) -> dict:
    """The whole script's schema: ``name``, ``description``, ``cluster`` and ``steps`` (plus
    ``extra_keys``, the top-level keys a format such as lessons adds)."""
    step = {
        "type": "object",
        "required": ["op"],
        "properties": {"op": {"enum": list(vocabulary), "description": "the operation"}},
        "allOf": [{"if": {"type": "object", "properties": {"op": {"const": name}}, "required": ["op"]},
                   "then": {"$ref": f"#/$defs/op.{name}"}} for name in vocabulary],
    }
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": title,
        "description": f"Generated from {source}; do not edit by hand.",
        "type": "object",
        "additionalProperties": False,
        "required": list(required),
        "properties": {
            "name": {"type": "string", "description": "a title"},
            "description": {"type": "string", "description": "what the script shows"},
            "cluster": {**fields_schema(CLUSTER_FIELDS), "description": "the cluster the script starts from"},
            "steps": {"type": "array", "items": {"$ref": "#/$defs/step"}, "description": "run in order"},
            **{key: key_type.schema() for key, key_type in (extra_keys or {}).items()},
        },
        "$defs": {"step": step, **{f"op.{name}": op_schema(op) for name, op in vocabulary.items()}},
    }


def schema_text(vocabulary: Mapping[str, Op] = SCRIPT_VOCABULARY) -> str:
    return json.dumps(build_schema(vocabulary), indent=2) + "\n"


def write_or_check(path: Path, text: str, module: str, argv: list[str] | None) -> int:
    """Write a generated schema file; with ``--check``, only say whether it is up to date
    (the tests check that the committed schema is what ``module`` generates)."""
    argv = sys.argv[1:] if argv is None else argv
    if "--check" in argv:
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != text:
            print(f"{path} is stale; run: python -m {module}", file=sys.stderr)
            return 1
        return 0
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path}")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Write ``script.schema.json``; with ``--check``, only say whether it is up to date."""
    return write_or_check(SCHEMA_PATH, schema_text(), "backend.faultscript.schema", argv)


if __name__ == "__main__":
    sys.exit(main())
