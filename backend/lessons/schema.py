"""The JSON Schema of lesson files (the page's lesson editor shows its errors inline), generated
from the lesson vocabulary: ``python -m backend.lessons.schema`` writes it, ``--check`` verifies
it is current (a test runs that)."""

from __future__ import annotations

import json
import sys

from backend.lessons.loader import LESSONS_DIR
from backend.lessons.vocabulary import LESSON_KEYS, LESSON_VOCABULARY
from backend.faultscript.schema import build_schema, write_or_check

SCHEMA_PATH = LESSONS_DIR / "lesson.schema.json"


def schema_text() -> str:
    schema = build_schema(LESSON_VOCABULARY, LESSON_KEYS, title="Kafka Controller Lab lesson",
                          source="backend/lessons/vocabulary.py by python -m backend.lessons.schema",
                          required=("name", "minutes", "cluster", "steps"))
    return json.dumps(schema, indent=2) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write ``lesson.schema.json``; with ``--check``, only say whether it is up to date."""
    return write_or_check(SCHEMA_PATH, schema_text(), "backend.lessons.schema", argv)


if __name__ == "__main__":
    sys.exit(main())
