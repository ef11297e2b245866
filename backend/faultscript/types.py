"""The value types the fault vocabulary is made of: each checks a value, describes itself in JSON
Schema, and names the brokers, topics and partitions a value refers to.

One type object answers all three questions so the loader's checks, the JSON Schema the
browser's editor uses, and the cross-step checks (is broker 7 in the cluster? does topic ``t``
exist yet?) cannot drift apart. Shape checks here know no cluster; references (:class:`Ref`) are
resolved later, step by step, by ``script_checks``.

A check returns ``(normalised value, issues)``; an issue is ``(path, message)`` where ``path``
locates the value below the step (``("partitions", "t-0", "leader")``) so the loader can find its
line. Messages start with the dotted path and say what was expected and what was found.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from typing import Any, Iterable

Issue = tuple[tuple, str]
NO_DEFAULT: Any = type("NoDefault", (), {"__repr__": lambda self: "NO_DEFAULT"})()


@dataclass(frozen=True)
class Ref:
    """Something a value names: ``("broker", 2)``, ``("topic", "t")`` or ``("partition", ("t", 0))``."""

    kind: str
    value: Any
    path: tuple


def name_of(path: Iterable[Any]) -> str:
    return ".".join(str(part) for part in path) or "the value"


def shown(value: Any) -> str:
    """A value as a student would describe it in a message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"the text {value!r}"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, (list, tuple)):
        return "a list"
    return repr(value)


def suggestion(word: Any, choices: Iterable[str]) -> str:
    """``"; did you mean X?"`` when ``word`` looks like a misspelt choice, else ``""``."""
    if not isinstance(word, str):
        return ""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)  # YAML's true is not 1


class FieldType:
    """Base: accept anything. Subclasses narrow ``check`` and ``schema``."""

    label = "any value"

    def check(self, value: Any, path: tuple) -> tuple[Any, list[Issue]]:
        return value, []

    def schema(self) -> dict:
        return {}

    def key_schema(self) -> dict:
        """JSON Schema for this type used as a mapping key (JSON keys are always strings)."""
        return {}

    def from_key(self, key: Any) -> Any:
        """A mapping key as this type's value (YAML may give ``0`` or ``"0"``; JSON gives ``"0"``)."""
        return key

    def refs(self, value: Any, path: tuple) -> Iterable[Ref]:
        return ()

    def _bad(self, value: Any, path: tuple) -> tuple[Any, list[Issue]]:
        return value, [(path, f"{name_of(path)} must be {self.label}, got {shown(value)}")]


@dataclass(frozen=True)
class Int(FieldType):
    minimum: int | None = None
    maximum: int | None = None
    ref: str | None = None  # "broker": the value names a broker (negative values name none)
    label: str = ""

    def __post_init__(self) -> None:
        if not self.label:
            low, high = self.minimum, self.maximum
            text = ("an integer" if low is None and high is None else
                    f"an integer from {low} to {high}" if low is not None and high is not None else
                    f"an integer of at least {low}" if low is not None else f"an integer of at most {high}")
            object.__setattr__(self, "label", text)

    def check(self, value, path):
        if not is_int(value):
            return self._bad(value, path)
        if (self.minimum is not None and value < self.minimum) or (self.maximum is not None and value > self.maximum):
            return self._bad(value, path)
        return value, []

    def schema(self):
        out: dict = {"type": "integer"}
        if self.minimum is not None:
            out["minimum"] = self.minimum
        if self.maximum is not None:
            out["maximum"] = self.maximum
        return out

    def key_schema(self):
        return {"pattern": "^[0-9]+$" if (self.minimum or 0) >= 0 else "^-?[0-9]+$"}

    def from_key(self, key):
        return int(key) if isinstance(key, str) and re.fullmatch(r"-?[0-9]+", key) else key

    def refs(self, value, path):
        return [Ref(self.ref, value, path)] if self.ref and is_int(value) and value >= 0 else []


@dataclass(frozen=True)
class Choice(FieldType):
    values: tuple
    label: str = ""

    def __post_init__(self) -> None:
        if not self.label:
            names = [shown(v) if not isinstance(v, str) else v for v in self.values]
            object.__setattr__(self, "label", "one of " + ", ".join(names))

    def check(self, value, path):
        if any(type(value) is type(choice) and value == choice for choice in self.values):
            return value, []
        strings = [v for v in self.values if isinstance(v, str)]
        return value, [(path, f"{name_of(path)} must be {self.label}, got {shown(value)}"
                              f"{suggestion(value, strings)}")]

    def schema(self):
        return {"enum": list(self.values)}

    def key_schema(self):
        return {"enum": [str(v) for v in self.values]}


@dataclass(frozen=True)
class Str(FieldType):
    pattern: str = ".*"
    label: str = "text"
    ref: str | None = None

    def check(self, value, path):
        if not isinstance(value, str) or not re.fullmatch(self.pattern, value):
            return self._bad(value, path)
        return value, []

    def schema(self):
        return {"type": "string", **self.key_schema()}

    def key_schema(self):
        return {"pattern": f"^(?:{self.pattern})$"}

    def refs(self, value, path):
        return [Ref(self.ref, value, path)] if self.ref else []


@dataclass(frozen=True)
class Nullable(FieldType):
    inner: FieldType
    meaning: str = "none"

    @property
    def label(self) -> str:  # type: ignore[override]
        return f"{self.inner.label} or null ({self.meaning})"

    def check(self, value, path):
        return (None, []) if value is None else self.inner.check(value, path)

    def schema(self):
        return {"anyOf": [self.inner.schema(), {"type": "null"}]}

    def refs(self, value, path):
        return [] if value is None else self.inner.refs(value, path)


class Scalar(FieldType):
    """Text, an integer, true/false or null: what a Kafka setting's value can be."""

    label = "a plain value (text, an integer, true/false or null)"

    def check(self, value, path):
        return (value, []) if value is None or isinstance(value, (str, int)) else self._bad(value, path)

    def schema(self):
        return {"type": ["string", "integer", "boolean", "null"]}


@dataclass(frozen=True)
class ListOf(FieldType):
    item: FieldType
    min_items: int = 0
    max_items: int | None = None
    unique: bool = False
    label: str = ""

    def __post_init__(self) -> None:
        if not self.label:
            object.__setattr__(self, "label", f"a list of {self.item.label}")

    def check(self, value, path):
        if not isinstance(value, (list, tuple)):
            return self._bad(value, path)
        out, issues = [], []
        for index, item in enumerate(value):
            checked, item_issues = self.item.check(item, path + (index,))
            out.append(checked)
            issues += item_issues
        if len(value) < self.min_items or (self.max_items is not None and len(value) > self.max_items):
            high = f" and at most {self.max_items}" if self.max_items is not None else ""
            last = self.min_items if self.max_items is None else self.max_items
            issues.append((path, f"{name_of(path)} must have at least {self.min_items}{high} "
                                 f"item{'s' if last != 1 else ''}, got {len(value)}"))
        if self.unique:
            seen: list = []
            for index, item in enumerate(out):
                if item in seen:
                    issues.append((path + (index,), f"{name_of(path)} lists {item!r} twice; each may appear once"))
                seen.append(item)
        return out, issues

    def schema(self):
        out = {"type": "array", "items": self.item.schema()}
        if self.min_items:
            out["minItems"] = self.min_items
        if self.max_items is not None:
            out["maxItems"] = self.max_items
        if self.unique:
            out["uniqueItems"] = True
        return out

    def refs(self, value, path):
        return [ref for index, item in enumerate(value) for ref in self.item.refs(item, path + (index,))]


@dataclass(frozen=True)
class MapOf(FieldType):
    key: FieldType
    value: FieldType
    min_items: int = 0
    max_items: int | None = None
    label: str = ""

    def __post_init__(self) -> None:
        if not self.label:
            object.__setattr__(self, "label", f"a mapping from {self.key.label} to {self.value.label}")

    def check(self, value, path):
        if not isinstance(value, dict):
            return self._bad(value, path)
        out, issues, written = {}, [], {}
        for raw_key, item in value.items():
            key, key_issues = self.key.check(self.key.from_key(raw_key), path + (raw_key,))
            checked, item_issues = self.value.check(item, path + (raw_key,))
            issues += key_issues + item_issues
            if key in out:
                issues.append((path + (raw_key,), f"{name_of(path)} names {key!r} twice "
                                                  f"({written[key]!r} and {raw_key!r})"))
            out[key], written[key] = checked, raw_key
        if len(value) < self.min_items:
            issues.append((path, f"{name_of(path)} must have at least {self.min_items} entr"
                                 f"{'ies' if self.min_items != 1 else 'y'}"))
        if self.max_items is not None and len(value) > self.max_items:
            issues.append((path, f"{name_of(path)} may have at most {self.max_items} entries, got {len(value)}"))
        return out, issues

    def schema(self):
        out = {"type": "object", "propertyNames": self.key.key_schema(),
               "additionalProperties": self.value.schema()}
        if self.min_items:
            out["minProperties"] = self.min_items
        if self.max_items is not None:
            out["maxProperties"] = self.max_items
        return out

    def refs(self, value, path):
        # Paths keep the key as normalised; ``line_of`` finds "0" for 0 and back.
        return [ref for key, item in value.items()
                for ref in [*self.key.refs(key, path + (key,)), *self.value.refs(item, path + (key,))]]
