"""The teaching steps a lesson adds to the script vocabulary.

* ``say`` — narration (Markdown) for the student.
* ``pause`` — wait for Continue (headless runs go on at once).
* ``await`` — wait for a record that matches, e.g. ``{kind: controller, to_state: elected}``; if
  it never comes within ``timeout_ms``, the lesson stops with ``message``.
* ``highlight`` — point at brokers, znodes, partitions or requests (record subjects), at a rule of
  the invariant panel (``rule:leader_in_isr``) or at arrows of the space-time diagram
  (``arrow:request:LeaderAndIsr``, ``arrow:znode:/controller_epoch``, ``arrow:refused``).
* ``predict`` — a question the real cluster then answers: the student's answer is graded against
  what actually happens, with the rule explained on a wrong answer. ``answer`` says where the
  cluster's answer is read (``rule_broken: true``: the first of Kafka's rules that broke after
  the question, or ``none``); ``expected`` is the author's answer, which a headless run checks.
* ``reveal`` — the moment the cluster answers a ``predict``: grades everyone's answers.
* ``direct`` — a stage direction that pins a race so the lesson plays the same way every time
  (``winner: 2``: broker 2 wins the next controller election).
"""

from __future__ import annotations

from backend.core.records import FIELD_NAMES
from backend.scripts.fields import Field, Record
from backend.scripts.kafka_types import BROKER, ZNODE_PATH, PartitionKey
from backend.scripts.types import Choice, Int, ListOf, MapOf, Scalar, Str
from backend.scripts.vocabulary import PARTITION_EXPECTATION, SCRIPT_VOCABULARY, Op, Rule
from backend.view.rules import RULE_IDS

IDENTIFIER = Str(r"[a-z][a-z0-9_]{0,39}", "an identifier (lower case letters, digits, _)")
SUBJECT = Str(r"(broker|partition|replica|znode|request|event|arrow):.+|rule:(" + "|".join(RULE_IDS) + ")",
              "a subject like broker:1, partition:t-0, znode:/controller or request:LeaderAndIsr, a rule like "
              "rule:leader_in_isr, or a diagram arrow like arrow:request:LeaderAndIsr")
PARTITION_FIELDS = tuple(f.name for f in PARTITION_EXPECTATION.fields)  # what an `expect` may check, a question may ask
RECORD_MATCH = MapOf(Choice(tuple(n for n in FIELD_NAMES if n not in ("detail", "v", "session_id", "seq", "ts_ms"))),
                     Scalar(), min_items=1)


def _f(name, type_, doc, required=False, **kw) -> Field:
    return Field(name, type_, doc, required, **kw)


ANSWER = Record((
    _f("partition", PartitionKey(), "read this partition's field (give field too)"),
    _f("field", Choice(PARTITION_FIELDS), "which field of the partition"),
    _f("controller", Choice(("id", "epoch")), "the active controller's broker id, or the controller epoch"),
    _f("znode", ZNODE_PATH, "this znode's data"),
    _f("produce", Choice(("error",)), "the error of the latest produce (NONE when it succeeded)"),
    _f("znodes_changed", Choice((True,)), "the znodes that changed since the question was asked"),
    _f("rule_broken", Choice((True,)), "the first of Kafka's rules that broke after the question was asked "
                                       "(a rule id such as acked_not_lost, or none)"),
), label="where the cluster's answer is read", min_fields=1)
ANSWER_SOURCES = ("partition", "controller", "znode", "produce", "znodes_changed", "rule_broken")


def _one_answer_source(args: dict):
    answer = args.get("answer") or {}
    sources = [k for k in ANSWER_SOURCES if k in answer]
    issues = []
    if len(sources) != 1:
        issues.append((("answer",), "answer must name exactly one of partition (with field), controller, znode, "
                                    f"produce, znodes_changed, rule_broken; got {', '.join(sources) or 'none'}"))
    if ("partition" in answer) != ("field" in answer):
        issues.append((("answer",), "answer.partition and answer.field go together"))
    return issues


ONE_ANSWER_SOURCE = Rule("the answer is read from exactly one place", _one_answer_source, {})

LESSON_OPS = (
    Op("say", "Narration for the student (Markdown).",
       (_f("text", Str(r"[\s\S]+", "text (Markdown)"), "what to say", required=True),), kind="lesson"),
    Op("pause", "Wait until the student (or the instructor) presses Continue.",
       (_f("prompt", Str(r"[\s\S]+"), "what the Continue button says", default="Continue"),), kind="lesson"),
    Op("await", "Wait for a record that matches; stop the lesson with message if it never comes.",
       (_f("record", RECORD_MATCH, "record fields and the values they must have", required=True),
        _f("timeout_ms", Int(0), "how long to wait", default=10000),
        _f("message", Str(r"[\s\S]+"), "what to tell the student if it never comes", required=True)),
       kind="lesson", observes=True),
    Op("highlight", "Point at things on the page.",
       (_f("targets", ListOf(SUBJECT, min_items=1), "what to point at", required=True),
        _f("note", Str(r"[\s\S]+"), "a caption")), kind="lesson", observes=True),
    Op("predict", "Ask a question the cluster will answer.",
       (_f("id", IDENTIFIER, "names the question (reveal refers to it)", required=True),
        _f("question", Str(r"[\s\S]+"), "the question", required=True),
        _f("choices", ListOf(Str(r".+"), min_items=2, unique=True), "answers to choose from (absent: free text)"),
        _f("answer", ANSWER, "where the cluster's answer is read at reveal", required=True),
        _f("expected", Scalar(), "the right answer (a headless run checks the cluster gives it)", required=True),
        _f("explain", Str(r"[\s\S]+"), "the rule, shown with the answer", required=True)),
       (ONE_ANSWER_SOURCE,), kind="lesson", observes=True),
    Op("reveal", "The cluster answers a question: grade the answers.",
       (_f("predict", IDENTIFIER, "the predict step's id", required=True),
        _f("within_ms", Int(0), "how long the cluster may take to settle on its answer", default=10000)),
       kind="lesson", observes=True),
    Op("direct", "A stage direction that pins a race so the lesson always plays the same way.",
       (_f("winner", BROKER, "this broker wins the next controller election", required=True),
        _f("note", Str(r"[\s\S]+"), "what the direction is for")), kind="lesson"),
)

LESSON_VOCABULARY = SCRIPT_VOCABULARY.extended(*LESSON_OPS)
LESSON_KEYS = {"minutes": Int(1, 60, label="minutes, from 1 to 60")}
