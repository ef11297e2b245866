"""Named fields: the unit of the vocabulary table, of a step's mapping, and of nested records.

A :class:`Field` is one line of the table (name, type, required, default, doc);
:func:`check_fields` checks a mapping against a tuple of them and :func:`fields_schema` writes
the same tuple as JSON Schema, so a step, a cluster section and an expected partition are all
checked, documented and described to the browser the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from backend.faultscript.types import NO_DEFAULT, FieldType, Issue, name_of, suggestion


@dataclass(frozen=True)
class Field:
    """One named field of a step (or of a nested record): its type, whether required, its default."""

    name: str
    type: FieldType
    doc: str
    required: bool = False
    default: Any = NO_DEFAULT

    def describe(self) -> str:
        default = "" if self.default is NO_DEFAULT else f", default {self.default!r}"
        need = "required" if self.required else "optional"
        return f"{self.name} ({self.type.label}; {need}{default}): {self.doc}"


def check_fields(value: dict, fields: tuple[Field, ...], path: tuple, owner: str,
                 ignore: tuple[str, ...] = ()) -> tuple[dict, list[Issue]]:
    """Check a mapping against named fields: unknown keys, missing required ones, each value's type.

    The returned mapping holds the fields that passed, even when others did not.
    """
    by_name = {f.name: f for f in fields}
    out, issues = {}, []
    for key, item in value.items():
        if key in ignore:
            continue
        known = by_name.get(key)
        if known is None:
            names = ", ".join(by_name) or "none"
            issues.append((path + (key,), f"unknown field {key!r} in {owner}{suggestion(key, by_name)}; "
                                          f"its fields are: {names}"))
            continue
        checked, field_issues = known.type.check(item, path + (key,))
        if field_issues:
            issues += field_issues
        else:
            out[key] = checked  # only sound values: callers may still check references in them
    for missing in (f for f in fields if f.required and f.name not in value):
        issues.append((path, f"{owner} needs {missing.name} ({missing.doc}): {missing.type.label}"))
    return out, issues


@dataclass(frozen=True)
class Struct(FieldType):
    """A mapping with fixed, named fields (e.g. one partition's expected state)."""

    fields: tuple[Field, ...]
    label: str = "a mapping"
    min_fields: int = 0

    def check(self, value, path):
        if not isinstance(value, dict):
            return self._bad(value, path)
        out, issues = check_fields(value, self.fields, path, name_of(path))
        if len(value) < self.min_fields:
            issues.append((path, f"{name_of(path)} must give at least one of: "
                                 f"{', '.join(f.name for f in self.fields)}"))
        return out, issues

    def schema(self):
        return fields_schema(self.fields, {"minProperties": self.min_fields} if self.min_fields else {})

    def refs(self, value, path):
        by_name = {f.name: f for f in self.fields}
        return [ref for key, item in value.items() if key in by_name
                for ref in by_name[key].type.refs(item, path + (key,))]


def fields_schema(fields: tuple[Field, ...], *extra: dict) -> dict:
    """JSON Schema of a mapping with exactly ``fields``; ``extra`` adds rules (merged with allOf)."""
    out: dict = {"type": "object", "additionalProperties": False, "properties": {}}
    for f in fields:
        prop = {**f.type.schema(), "description": f.doc}
        if f.default is not NO_DEFAULT:
            prop["default"] = f.default
        out["properties"][f.name] = prop
    required = [f.name for f in fields if f.required]
    if required:
        out["required"] = required
    extra = tuple(e for e in extra if e)
    if extra:
        out["allOf"] = list(extra)
    return out
