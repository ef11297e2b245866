"""Fault scripts: read a YAML script, check all of it before anything runs, and hand the runner
its steps with the line each one starts on.

A script that fails half-way because step 9 names a broker that does not exist wastes a class's
time and leaves a cluster in a state nobody planned, so everything that can be known before
running is checked first, and every problem is reported at once as ``file:line: reason``:
YAML syntax (with YAML's own line and column), duplicate keys (which PyYAML would silently
merge), unknown ops and fields (with a "did you mean"), types, unknown brokers, topics and
partitions, settings. The runner then only meets problems that depend on timing.

Lessons extend the format: pass ``vocabulary=SCRIPT_VOCABULARY.extended(...)`` with their
teaching steps; everything else (lines, references, errors) works for those steps unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any, Mapping

from backend.faultscript.checks import World
from backend.faultscript.cluster_spec import ClusterSpec, TopicSpec, check_cluster
from backend.faultscript.kafka_types import parse_partition_key
from backend.faultscript.limits import MAX_STEPS
from backend.faultscript.types import FieldType, Issue, shown, suggestion
from backend.faultscript.yaml_lines import LineDict, line_of, load_yaml, plain
from backend.faultscript.vocabulary import SCRIPT_VOCABULARY, Op, check_step

__all__ = ["ClusterSpec", "Problem", "Script", "ScriptError", "Step", "TopicSpec", "load_script",
           "parse_partition_key", "parse_script"]

TOP_LEVEL_KEYS = ("name", "description", "cluster", "steps")


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a script, where it is (line 0: the file as a whole)."""

    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}" if self.line else f"{self.file}: {self.message}"


class ScriptError(ValueError):
    """A script that cannot run; ``problems`` lists every reason, ``str()`` one per line."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = list(problems)
        super().__init__("\n".join(str(problem) for problem in self.problems))


@dataclass(frozen=True)
class Step:
    """One checked step: ``index`` counts from 1 as people do, ``line`` is where it starts.

    ``args`` are the step's fields without ``op``, with defaults filled in and values normalised
    (partition keys canonical, ``{0: [1, 0]}`` keys as ints, setting values parsed).
    """

    index: int
    line: int
    op: str
    args: dict[str, Any]

    @property
    def where(self) -> str:
        return f"step {self.index} (line {self.line})"


@dataclass(frozen=True)
class Script:
    """A checked script: everything in it was valid before anything ran."""

    name: str | None
    description: str | None
    cluster: ClusterSpec
    steps: tuple[Step, ...]
    filename: str
    meta: Mapping[str, Any] = field(default_factory=dict)
    """Top-level keys a format adds (a lesson's ``minutes``), checked by ``extra_keys``."""


def load_script(path: str | PathLike, *, vocabulary: Mapping[str, Op] = SCRIPT_VOCABULARY,
                extra_keys: Mapping[str, FieldType] | None = None) -> Script:
    """Read and check the script at ``path``; raise :class:`ScriptError` listing every problem."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        raise ScriptError([Problem(str(path), 0, f"cannot read the script: {reason}")]) from None
    return parse_script(text, str(path), vocabulary=vocabulary, extra_keys=extra_keys)


def parse_script(text: str, filename: str = "<string>", *, vocabulary: Mapping[str, Op] = SCRIPT_VOCABULARY,
                 extra_keys: Mapping[str, FieldType] | None = None) -> Script:
    """Check the script ``text`` completely; raise :class:`ScriptError` listing every problem.

    ``extra_keys`` admits more top-level keys, each checked by its type (lessons add some)."""
    doc, yaml_issues = load_yaml(text)
    problems = [Problem(filename, issue.line, issue.message) for issue in yaml_issues]
    if any(issue.fatal for issue in yaml_issues):
        raise ScriptError(problems)
    if not isinstance(doc, LineDict):
        found = "empty" if doc is None else shown(doc)
        raise ScriptError(problems + [Problem(filename, getattr(doc, "line", 1), f"a script must be a mapping "
                                              f"with cluster: and steps: at the top, but this document is {found}")])

    def report(container: Any, issues: list[Issue], prefix: str = "", default: int = 1) -> None:
        problems.extend(Problem(filename, line_of(container, path, default), prefix + message)
                        for path, message in issues)

    extra_keys = dict(extra_keys or {})
    report(doc, _top_level_issues(doc, extra_keys))
    meta = {}
    for key, key_type in extra_keys.items():
        if key in doc:
            value, issues = key_type.check(doc[key], (key,))
            report(doc, issues)
            meta[key] = plain(value)
    cluster, world, issues = check_cluster(doc["cluster"]) if "cluster" in doc else (None, World(None, None), [])
    report(doc, issues)
    raw_steps = doc.get("steps")
    if "steps" in doc and not isinstance(raw_steps, list):
        report(doc, [(("steps",), f"steps must be a list of steps, each like {{op: crash_broker, broker: 1}}, "
                                  f"got {shown(raw_steps)}")])
        raw_steps = []
    if len(raw_steps or []) > MAX_STEPS:
        report(doc, [(("steps",), f"a script may have at most {MAX_STEPS} steps, this one has {len(raw_steps)}")])
        raw_steps = []
    steps = _check_steps(raw_steps or [], world, vocabulary, report)
    # A value YAML could not build was read as null; what the checks then say about it is noise.
    replaced = {issue.line for issue in yaml_issues if issue.replaced}
    problems = problems[:len(yaml_issues)] + [p for p in problems[len(yaml_issues):] if p.line not in replaced]
    if problems:
        raise ScriptError(sorted(problems, key=lambda problem: problem.line))
    return Script(doc.get("name"), doc.get("description"), cluster, tuple(steps), filename, meta)


def _top_level_issues(doc: LineDict, extra_keys: Mapping[str, FieldType]) -> list[Issue]:
    issues: list[Issue] = []
    allowed = (*TOP_LEVEL_KEYS, *extra_keys)
    for key in doc:
        if key not in allowed:
            issues.append(((key,), f"unknown top-level key {key!r}{suggestion(key, allowed)}; "
                                   f"a script has: {', '.join(allowed)}"))
    for key in ("name", "description"):
        if key in doc and not isinstance(doc[key], str):
            issues.append(((key,), f"{key} must be text, got {shown(doc[key])}"))
    for key in ("cluster", "steps"):
        if key not in doc:
            issues.append(((), f"the script needs {key}:"))
    return issues


def _check_steps(raw_steps: list, world: World, vocabulary: Mapping[str, Op], report) -> list[Step]:
    """Check each step alone, then against the world the steps before it leave."""
    steps = []
    lines = getattr(raw_steps, "item_lines", [1] * len(raw_steps))
    for index, (raw, line) in enumerate(zip(raw_steps, lines), start=1):
        checked = check_step(raw, vocabulary)
        op, args, origin = checked.op, checked.args, f"step {index} (line {line})"
        if args is None:
            issues = checked.issues + world.check_unsound_step(op, checked.sound, raw, origin)
        else:
            issues = world.check_step(op, args, origin)
            steps.append(Step(index, line, op.name, plain(args)))
        report(raw, issues, f"step {index} ({op.name}): " if op else f"step {index}: ", default=line)
    return steps
