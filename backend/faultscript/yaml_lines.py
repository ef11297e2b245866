"""Load YAML keeping line numbers, and refuse what PyYAML would silently accept.

``yaml.safe_load`` returns plain values without positions, so a script's validator could only
say *what* is wrong, not *where*. It also keeps the last of two equal keys in a mapping, so a
lesson author who writes ``broker:`` twice gets one of them ignored without a word. Here we let
PyYAML compose its node tree (each node knows its ``start_mark``), and build the values
ourselves: mappings become :class:`LineDict` and sequences :class:`LineList`, plain ``dict`` and
``list`` subclasses that also remember the line of each key or item. Scalars cannot carry an
attribute (an ``int`` is an ``int``), which is why the container records its children's lines.

Lines are 1-based, as an editor shows them. Merge keys (``<<: *defaults``) and anchors work as in
YAML 1.1; keys written in the mapping itself override merged ones without being duplicates.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

import yaml

from backend.faultscript.limits import MAX_YAML_BYTES, MAX_YAML_DEPTH, MAX_YAML_NODES

_MERGE_TAG = "tag:yaml.org,2002:merge"
_MAP_TAGS = {"tag:yaml.org,2002:map"}
_SEQ_TAGS = {"tag:yaml.org,2002:seq"}


class LineDict(dict):
    """A mapping read from YAML: ``line`` is where it starts, ``key_lines[key]`` where each key is."""

    def __init__(self, line: int) -> None:
        super().__init__()
        self.line = line
        self.key_lines: dict[Any, int] = {}


class LineList(list):
    """A sequence read from YAML: ``line`` is where it starts, ``item_lines[i]`` where item i is."""

    def __init__(self, line: int) -> None:
        super().__init__()
        self.line = line
        self.item_lines: list[int] = []


@dataclass(frozen=True)
class YamlIssue:
    """A problem found while reading the YAML itself (before any meaning is checked)."""

    line: int
    message: str
    fatal: bool = False  # True when no document could be built (a syntax error)
    replaced: bool = False  # True when a value on this line was replaced by null to go on


def load_yaml(text: str) -> tuple[Any, list[YamlIssue]]:
    """The single document in ``text`` as Line* containers and scalars, and what is wrong with it.

    An empty document gives ``None``. A syntax error gives ``(None, [fatal issue])`` with YAML's
    own line and column, since nothing after it can be trusted.
    """
    if len(text) > MAX_YAML_BYTES:
        return None, [YamlIssue(1, f"the document is {len(text)} characters long; at most {MAX_YAML_BYTES} "
                                   f"are read", True)]
    try:
        too_deep = _too_deep(text)
    except yaml.MarkedYAMLError as error:
        return None, [_syntax_issue(error)]
    except yaml.reader.ReaderError as error:
        line = text[: error.position].count("\n") + 1
        return None, [YamlIssue(line, f"the file cannot be read as YAML text: {error.reason}", True)]
    if too_deep is not None:
        return None, [too_deep]
    loader = yaml.SafeLoader(text)
    try:
        try:
            node = loader.get_single_node()
        except yaml.MarkedYAMLError as error:
            return None, [_syntax_issue(error)]
        if node is None:
            return None, []
        issues: list[YamlIssue] = []
        try:
            return _Builder(loader, issues).build(node), issues
        except _TooLarge as error:
            return None, [YamlIssue(error.line, str(error), True)]
    finally:
        loader.dispose()


def _too_deep(text: str) -> YamlIssue | None:
    """The first place mappings and lists nest deeper than ``MAX_YAML_DEPTH``, found from
    PyYAML's events (its parser keeps an explicit stack; its composer and our builder recurse,
    and 3,000 levels would end in a RecursionError)."""
    depth = 0
    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                return YamlIssue(event.start_mark.line + 1, f"mappings and lists are nested more than "
                                                            f"{MAX_YAML_DEPTH} deep here", True)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1
    return None


class _TooLarge(ValueError):
    def __init__(self, line: int) -> None:
        super().__init__(f"the document expands to more than {MAX_YAML_NODES} values (aliases count each time "
                         f"they are used): it is too large to be a script")
        self.line = line


def plain(value: Any) -> Any:
    """``value`` with every Line* container turned into a plain ``dict``/``list``."""
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [plain(item) for item in value]
    return value


def line_of(container: Any, path: Iterable[Any], default: int = 1) -> int:
    """The line of the deepest part of ``path`` that can be found below ``container``.

    Keys that were normalised after reading (``"0"`` read, ``0`` used) are tried both ways; when
    a part cannot be found, the line of the closest enclosing container is the best answer.
    """
    line = getattr(container, "line", default)
    node = container
    for part in path:
        if isinstance(node, LineDict):
            key = next((k for k in (part, str(part)) if k in node.key_lines), None)
            if key is None and isinstance(part, str) and part.lstrip("-").isdigit():
                key = int(part) if int(part) in node.key_lines else None
            if key is None:
                break
            line, node = node.key_lines[key], node[key]
        elif isinstance(node, LineList) and isinstance(part, int) and 0 <= part < len(node):
            line, node = node.item_lines[part], node[part]
        else:
            break
    return line


def _syntax_issue(error: yaml.MarkedYAMLError) -> YamlIssue:
    mark = error.problem_mark or error.context_mark
    line = mark.line + 1 if mark else 1
    where = f" (column {mark.column + 1})" if mark else ""
    context = ""
    if error.context and error.context_mark and mark and error.context_mark.line != mark.line:
        context = f" ({error.context}, which starts on line {error.context_mark.line + 1})"
    elif error.context:
        context = f" ({error.context})"
    return YamlIssue(line, f"YAML syntax error{where}: {error.problem}{context}", True)


class _Builder:
    """Builds values from a composed node tree, recording lines and reporting duplicate keys."""

    def __init__(self, loader: yaml.SafeLoader, issues: list[YamlIssue]) -> None:
        self.loader = loader
        self.issues = issues
        self.active: set[int] = set()  # nodes being built: an alias to one of them is a cycle
        self.built = 0  # values built, an alias's again each time: the alias bomb's budget

    def build(self, node: yaml.Node) -> Any:
        line = node.start_mark.line + 1
        self.built += 1
        if self.built > MAX_YAML_NODES:
            raise _TooLarge(line)
        if isinstance(node, yaml.ScalarNode):
            try:
                return self.loader.construct_object(node, deep=True)
            except yaml.MarkedYAMLError as error:
                self.issues.append(YamlIssue(line, f"{error.problem} (a script uses plain YAML values)",
                                             replaced=True))
                return None
            except ValueError as error:  # e.g. an integer of 5,000 digits
                self.issues.append(YamlIssue(line, f"this value cannot be read: {error}", replaced=True))
                return None
        if id(node) in self.active:
            self.issues.append(YamlIssue(line, "an alias refers to a mapping or list that contains it; "
                                               "a script cannot be recursive", replaced=True))
            return None
        self.active.add(id(node))
        try:
            if isinstance(node, yaml.SequenceNode):
                self._check_tag(node, _SEQ_TAGS)
                return self._sequence(node)
            self._check_tag(node, _MAP_TAGS)
            return self._mapping(node)
        finally:
            self.active.discard(id(node))

    def _check_tag(self, node: yaml.Node, allowed: set[str]) -> None:
        if node.tag not in allowed:
            self.issues.append(YamlIssue(node.start_mark.line + 1,
                                         f"unsupported YAML tag {node.tag}; a script uses plain YAML values"))

    def _sequence(self, node: yaml.SequenceNode) -> LineList:
        out = LineList(node.start_mark.line + 1)
        for child in node.value:
            out.append(self.build(child))
            out.item_lines.append(child.start_mark.line + 1)
        return out

    def _mapping(self, node: yaml.MappingNode) -> LineDict:
        out = LineDict(node.start_mark.line + 1)
        merged: list[LineDict] = []
        for key_node, value_node in node.value:
            key_line = key_node.start_mark.line + 1
            if key_node.tag == _MERGE_TAG:
                merged.extend(self._merge_sources(value_node))
                continue
            key = self.build(key_node)
            if isinstance(key, (dict, list)):
                self.issues.append(YamlIssue(key_line, "a mapping key must be a plain value (a name or a "
                                                       "number), not a mapping or a list"))
                continue
            if key in out.key_lines:
                self.issues.append(YamlIssue(
                    key_line, f"duplicate key {key!r} (first on line {out.key_lines[key]}); YAML would "
                              f"silently keep only the last value, so remove one of them"))
                continue
            out[key] = self.build(value_node)
            out.key_lines[key] = key_line
        for source in merged:  # earlier merge sources win, as in YAML 1.1; own keys win over all
            for key, value in source.items():
                if key not in out.key_lines:
                    out[key] = value
                    out.key_lines[key] = source.key_lines[key]
        return out

    def _merge_sources(self, node: yaml.Node) -> list[LineDict]:
        nodes = node.value if isinstance(node, yaml.SequenceNode) else [node]
        sources = []
        for source_node in nodes:
            source = self.build(source_node)
            if isinstance(source, LineDict):
                sources.append(source)
            else:
                self.issues.append(YamlIssue(source_node.start_mark.line + 1,
                                             "a merge key (<<) takes a mapping or a list of mappings"))
        return sources
