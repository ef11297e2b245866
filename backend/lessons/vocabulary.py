"""The teaching steps a lesson adds to the script vocabulary, and a lesson's own top-level keys.

A lesson is a sequence of **stops**: the runner plays the steps up to the next stop and waits
for the student's Continue (``backend/lessons/pacing.py`` says which steps are stops).

* ``say`` — narration (Markdown), a stop: it stays on screen until the student continues. A
  ``caption: true`` narration does not wait (e.g. "the session is expiring…" while an ``await``
  runs); captions stay visible, in order, until the student continues past the next stop.
  ``highlight`` points at the one thing to look at while reading it.
* ``pause`` — an explicit stop (headless runs go on at once).
* ``await`` — wait for a record that matches, e.g. ``{kind: controller, to_state: elected}``; if
  it never comes within ``timeout_ms``, the lesson stops with ``message``.
* ``highlight`` — point at brokers, znodes, partitions or requests (record subjects), at a rule of
  the invariant panel (``rule:leader_in_isr``) or at arrows of the space-time diagram
  (``arrow:request:LeaderAndIsr``, ``arrow:znode:/controller_epoch``, ``arrow:refused``) while the
  lesson plays; its ``note`` is shown like a caption.
* ``predict`` — a stop with a question the real cluster then answers: the student picks one of
  ``choices`` or "I'm not sure" before going on. ``answer`` says where the cluster's answer is
  read (``rule_broken: true``: the first of Kafka's rules that broke after the question, or
  ``none``); ``expected`` is the author's answer (one of the choices), which a headless run checks;
  ``misconceptions`` attaches to a wrong choice the sentence shown to whoever picked it.
* ``reveal`` — the moment the cluster answers a ``predict``: grades everyone's answers.
* ``direct`` — a stage direction that pins a race so the lesson plays the same way every time
  (``winner: 2``: broker 2 wins the next controller election).
"""

from __future__ import annotations

from backend.core.records import FIELD_NAMES
from backend.lessons.answers import UNSURE, canonical
from backend.faultscript.fields import Field, Struct
from backend.faultscript.kafka_types import BROKER, ZNODE_PATH, PartitionKey
from backend.faultscript.types import Choice, FieldType, Int, ListOf, MapOf, Scalar, Str
from backend.faultscript.vocabulary import PARTITION_EXPECTATION, SCRIPT_VOCABULARY, Op, Rule
from backend.view.rules import RULE_IDS

IDENTIFIER = Str(r"[a-z][a-z0-9_]{0,39}", "an identifier (lower case letters, digits, _)")
LESSON_ID = Str(r"[a-z][a-z0-9_]{0,39}(/[a-z][a-z0-9_]{0,39})?",
                "a lesson id (its file name without .yaml, e.g. controller_failover)")
SUBJECT = Str(r"(broker|partition|replica|znode|request|event|arrow):.+|rule:(" + "|".join(RULE_IDS) + ")",
              "a subject like broker:1, partition:t-0, znode:/controller or request:LeaderAndIsr, a rule like "
              "rule:leader_in_isr, or a diagram arrow like arrow:request:LeaderAndIsr")
TEXT = Str(r"[\s\S]+", "text (Markdown)")
BOOL = Choice((True, False), label="true or false")
PARTITION_FIELDS = tuple(f.name for f in PARTITION_EXPECTATION.fields)  # what an `expect` may check, a question may ask
RECORD_MATCH = MapOf(Choice(tuple(n for n in FIELD_NAMES if n not in ("detail", "v", "session_id", "seq", "ts_ms"))),
                     Scalar(), min_items=1)


class ChoiceText(Str):
    """A choice named as a mapping key: YAML reads ``3:`` as a number, the choice is the text "3"."""

    def from_key(self, key):
        return canonical(key) if isinstance(key, (int, bool)) else key


class LaterPartition(PartitionKey):
    """A partition a question asks about: it may not exist yet when the question is asked (the
    steps before its reveal create it), so it names nothing for the step-by-step checks."""

    def refs(self, value, path):
        return ()


class Number(FieldType):
    """A positive number (integer or decimal)."""

    label = "a positive number"

    def check(self, value, path):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
        return (value, []) if ok else self._bad(value, path)

    def schema(self):
        return {"type": "number", "exclusiveMinimum": 0}


def _f(name, type_, doc, required=False, **kw) -> Field:
    return Field(name, type_, doc, required, **kw)


TIMED = Struct((
    _f("record", RECORD_MATCH, "the records that time a batch of writes (detail.ms), summed per event (cause_seq)",
       required=True),
    _f("bands", ListOf(Number(), min_items=1), "ascending limits between the choices: choice i is below bands[i]",
       required=True),
), label="which timed records, and the limits between the choices")

FIRST_RECORD = Struct((
    _f("match", RECORD_MATCH, "the fields the record has", required=True),
    _f("field", Choice(tuple(n for n in FIELD_NAMES if n not in ("detail", "v", "session_id", "seq", "ts_ms"))),
       "the field whose value is the answer", required=True),
), label="which record's field answers")

ANSWER = Struct((
    _f("partition", LaterPartition(), "read this partition's field (give field too); it may be created after the question"),
    _f("field", Choice(PARTITION_FIELDS), "which field of the partition"),
    _f("controller", Choice(("id", "epoch")), "the active controller's broker id, or the controller epoch"),
    _f("znode", ZNODE_PATH, "this znode's data"),
    _f("produce", Choice(("error",)), "the error of the latest produce (NONE when it succeeded)"),
    _f("znodes_changed", Choice((True,)), "the znodes that changed since the question was asked"),
    _f("duration", TIMED, "how long (ms) the first timed event of the lesson took: the choice of its band"),
    _f("speedup", TIMED, "how many times faster the last timed event of the lesson was than the first: the "
                         "choice of its band"),
    _f("seen", RECORD_MATCH, "yes if a record with these fields came after the question was asked, else no"),
    _f("record", FIRST_RECORD, "a field of the first matching record after the question was asked"),
    _f("rule_broken", Choice((True,)), "the first of Kafka's rules that broke after the question was asked "
                                       "(a rule id such as acked_not_lost, or none)"),
), label="where the cluster's answer is read", min_fields=1)
ANSWER_SOURCES = ("partition", "controller", "znode", "produce", "znodes_changed", "duration", "speedup", "seen",
                  "record", "rule_broken")


def _one_answer_source(args: dict):
    answer = args.get("answer") or {}
    sources = [k for k in ANSWER_SOURCES if k in answer]
    issues = []
    if len(sources) != 1:
        issues.append((("answer",), f"answer must name exactly one of partition (with field), "
                                    f"{', '.join(ANSWER_SOURCES[1:])}; got {', '.join(sources) or 'none'}"))
    if ("partition" in answer) != ("field" in answer):
        issues.append((("answer",), "answer.partition and answer.field go together"))
    return issues


def _answers_are_choices(args: dict):
    """The right answer is a choice, misconceptions belong to wrong choices, and nobody's choice
    is the "I'm not sure" every question offers anyway."""
    choices = [canonical(c) for c in args.get("choices") or []]
    expected = canonical(args.get("expected"))
    issues = []
    if choices and "expected" in args and expected not in choices:
        issues.append((("expected",), f"expected {expected!r} is not one of the choices ({', '.join(choices)}): "
                                      f"a student could never pick the right answer"))
    for index, choice in enumerate(choices):
        if choice == UNSURE:
            issues.append((("choices", index), f"{UNSURE!r} is offered with every question; leave it out"))
    for choice in args.get("misconceptions") or {}:
        if choice not in choices:
            issues.append((("misconceptions", choice), f"misconceptions names {choice!r}, which is not one of "
                                                       f"the choices ({', '.join(choices)})"))
        elif choice == expected:
            issues.append((("misconceptions", choice), f"misconceptions names {choice!r}, the right answer: a "
                                                       f"misconception belongs to a wrong choice"))
    if "seen" in (args.get("answer") or {}) and choices and sorted(choices) != ["no", "yes"]:
        issues.append((("choices",), "a question answered by seen: has the choices yes and no"))
    for timed in ("duration", "speedup"):
        bands = ((args.get("answer") or {}).get(timed) or {}).get("bands")
        if bands is not None and choices and len(choices) != len(bands) + 1:
            issues.append((("answer", timed, "bands"), f"{len(choices)} choices need {len(choices) - 1} bands "
                                                       f"(the limits between them), got {len(bands)}"))
    return issues


ONE_ANSWER_SOURCE = Rule("the answer is read from exactly one place", _one_answer_source, {})
ANSWERS_ARE_CHOICES = Rule("expected is a choice; misconceptions name wrong choices", _answers_are_choices, {})

LESSON_OPS = (
    Op("say", "Narration for the student (Markdown): a stop, unless it is a caption.",
       (_f("text", TEXT, "what to say", required=True),
        _f("caption", BOOL, "true: show it and go on (it stays visible until the next stop is passed)",
           default=False),
        _f("highlight", ListOf(SUBJECT, min_items=1), "what to look at while reading it")), kind="lesson"),
    Op("pause", "Wait until the student (or the instructor) presses Continue.",
       (_f("prompt", Str(r"[\s\S]+"), "what the Continue button says", default="Continue"),), kind="lesson"),
    Op("await", "Wait for a record that matches; stop the lesson with message if it never comes.",
       (_f("record", RECORD_MATCH, "record fields and the values they must have", required=True),
        _f("timeout_ms", Int(0), "how long to wait", default=10000),
        _f("message", Str(r"[\s\S]+"), "what to tell the student if it never comes", required=True)),
       kind="lesson", observes=True),
    Op("highlight", "Point at things on the page while the lesson plays (its note shows like a caption).",
       (_f("targets", ListOf(SUBJECT, min_items=1), "what to point at", required=True),
        _f("note", Str(r"[\s\S]+"), "a caption")), kind="lesson", observes=True),
    Op("predict", "A stop with a question the cluster will answer; the student answers before going on.",
       (_f("id", IDENTIFIER, "names the question (reveal refers to it)", required=True),
        _f("question", Str(r"[\s\S]+"), "the question", required=True),
        _f("choices", ListOf(Str(r".+"), min_items=2, unique=True),
           f"the answers to choose from (every question also offers {UNSURE!r})", required=True),
        _f("misconceptions", MapOf(ChoiceText(r".+"), Str(r"[\s\S]+"), min_items=1),
           "for a wrong choice, the sentence shown to whoever picks it (and counted in the class statistics)"),
        _f("answer", ANSWER, "where the cluster's answer is read at reveal", required=True),
        _f("expected", Scalar(), "the right answer, one of the choices (a headless run checks the cluster gives it)",
           required=True),
        _f("explain", Str(r"[\s\S]+"), "the rule, shown with the answer", required=True)),
       (ONE_ANSWER_SOURCE, ANSWERS_ARE_CHOICES), kind="lesson", observes=True),
    Op("reveal", "The cluster answers a question: grade the answers.",
       (_f("predict", IDENTIFIER, "the predict step's id", required=True),
        _f("within_ms", Int(0), "how long the cluster may take to settle on its answer", default=10000)),
       kind="lesson", observes=True),
    Op("direct", "A stage direction that pins a race so the lesson always plays the same way.",
       (_f("winner", BROKER, "this broker wins the next controller election", required=True),
        _f("note", Str(r"[\s\S]+"), "what the direction is for")), kind="lesson"),
)

LESSON_VOCABULARY = SCRIPT_VOCABULARY.extended(*LESSON_OPS)
LESSON_KEYS = {
    "minutes": Int(1, 60, label="minutes, from 1 to 60"),
    "requires": ListOf(LESSON_ID, unique=True, label="a list of lesson ids (the lessons to take first)"),
    "teaches": ListOf(Str(r".{1,60}", "a short concept name"), min_items=1, unique=True,
                      label="a list of short concept names"),
}
