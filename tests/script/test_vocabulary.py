"""The fault vocabulary as one table: a step checked on its own, what a student may click, the
lessons' own steps, and the JSON Schema generated from the table agreeing with it."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml

from backend.core.controller import events
from backend.faultscript.fields import Field
from backend.faultscript.loader import Step, parse_script
from backend.faultscript.schema import SCHEMA_PATH, build_schema, schema_text
from backend.faultscript.types import Str
from backend.faultscript.vocabulary import (EVENT_NAMES, FAULT_VOCABULARY, SCRIPT_VOCABULARY, Op, check_step,
                                            validate_step)
from tests.script.support import EXAMPLE, only_problem, steps


# -- the vocabulary table ------------------------------------------------------------------------

def test_validate_step_checks_one_step_on_its_own():
    assert validate_step({"op": "crash_broker", "broker": 1}) == []
    assert validate_step({"op": "produce", "topic": "t", "partition": -1}) == [
        "partition must be a partition number (an integer of at least 0), got -1"]
    assert check_step({"op": "produce", "topic": "t", "partition": 0}).args == {
        "topic": "t", "partition": 0, "count": 1, "acks": 1}


def test_fault_vocabulary_is_what_a_student_may_click():
    assert "crash_broker" in FAULT_VOCABULARY and "zk_server_stop" in FAULT_VOCABULARY
    assert not {"wait_stable", "wait_ms", "expect"} & set(FAULT_VOCABULARY)
    assert validate_step({"op": "expect", "controller": 0}, FAULT_VOCABULARY)[0].startswith("unknown op 'expect'")


def test_every_pause_point_is_a_controller_event_of_the_core():
    for name in EVENT_NAMES:
        assert issubclass(getattr(events, name), events.ControllerEvent), name


def test_lessons_extend_the_vocabulary_with_their_own_steps():
    say = Op("say", "Show the class a sentence.", (Field("text", Str(r"(?s).+", "text"), "what to say", True),),
             kind="lesson")
    lesson = SCRIPT_VOCABULARY.extended(say)
    text = steps("- {op: say, text: Watch broker 1.}", "- {op: crash_broker, broker: 1}")
    assert parse_script(text, vocabulary=lesson).steps[0] == Step(1, 6, "say", {"text": "Watch broker 1."})
    assert only_problem(text)[1].startswith("step 1: unknown op 'say'")
    with pytest.raises(ValueError, match="defined twice"):
        lesson.extended(say)


# -- the JSON Schema agrees with the table ------------------------------------------------------

SAMPLES = {  # a valid step of every op, checked by both the table and the schema
    "crash_broker": {"broker": 1}, "stop_broker": {"broker": 1}, "start_broker": {"broker": 1}, "shutdown_broker": {"broker": 1},
    "expire_session": {"broker": 1}, "pause_broker": {"broker": 1, "during": "BrokerChange"},
    "resume_broker": {"broker": 1}, "delete_controller_znode": {},
    "create_topic": {"topic": "n", "assignment": {0: [0, 1]}, "config": {"min.insync.replicas": 2}},
    "delete_topic": {"topic": "t"}, "add_partitions": {"topic": "t", "partitions": 4, "assignment": {3: [0, 1]}},
    "reassign_partitions": {"partitions": {"t-0": [2, 0]}}, "preferred_election": {"partitions": ["t-0"]},
    "produce": {"topic": "t", "partition": 0, "count": 5, "acks": "all"}, "consume": {"topic": "t", "partition": 0},
    "stall_follower": {"broker": 1, "topic": "t", "partition": 0}, "resume_follower": {"broker": 1},
    "set_config": {"name": "unclean.leader.election.enable", "value": True, "topic": "t"},
    "zk_server_stop": {"server": 1}, "zk_server_start": {"server": 1},
    "wait_stable": {"timeout_ms": 1000}, "wait_ms": {"ms": 0},
    "expect": {"controller": None, "controller_epoch": 2, "brokers": {0: "alive"},
               "partitions": {"t-0": {"leader": -1, "isr": [0], "leader_epoch": 0, "state": "OfflinePartition"}},
               "replicas": {"t-0/1": "OfflineReplica"},
               "znodes": {"/controller": {"exists": False}, "/brokers/topics/t": {"partitions": {"0": [0, 1]}}}},
}


def schema_errors(document) -> list[str]:
    """Errors of the schema for ``document`` as the browser sees it (JSON: keys are text)."""
    validator = jsonschema.Draft202012Validator(json.loads(SCHEMA_PATH.read_text()))
    return [error.message for error in validator.iter_errors(json.loads(json.dumps(document)))]


def script_with(*step_list) -> dict:
    return {"cluster": {"brokers": [0, 1, 2], "topics": {"t": {"partitions": 3, "replication_factor": 2}}},
            "steps": list(step_list)}


def test_the_schema_file_is_generated_from_the_table():
    assert SCHEMA_PATH.read_text() == schema_text(), "run: .venv/bin/python -m backend.faultscript.schema"
    jsonschema.Draft202012Validator.check_schema(build_schema())
    schema = build_schema()
    assert schema["$defs"]["step"]["properties"]["op"]["enum"] == list(SCRIPT_VOCABULARY)
    for name, op in SCRIPT_VOCABULARY.items():
        definition = schema["$defs"][f"op.{name}"]
        assert list(definition["properties"]) == ["op", *(f.name for f in op.fields)]
        assert definition["required"] == ["op", *(f.name for f in op.fields if f.required)]


def test_every_op_has_a_sample_that_both_the_table_and_the_schema_accept():
    assert set(SAMPLES) == set(SCRIPT_VOCABULARY)
    for name, args in SAMPLES.items():
        step = {"op": name, **args}
        assert validate_step(step) == [], name
        assert schema_errors(script_with(step)) == [], name


def test_the_table_and_the_schema_refuse_the_same_wrong_steps():
    for name, args in SAMPLES.items():
        for field in SCRIPT_VOCABULARY[name].fields:
            step = {"op": name, **args, field.name: {"wrong": [1]}}
            assert validate_step(step), (name, field.name)
            assert schema_errors(script_with(step)), (name, field.name)
        step = {"op": name, **args, "unknown_field": 1}
        assert validate_step(step) and schema_errors(script_with(step)), name
        for field in SCRIPT_VOCABULARY[name].fields:
            if field.required:
                step = {"op": name, **{k: v for k, v in args.items() if k != field.name}}
                assert validate_step(step) and schema_errors(script_with(step)), (name, field.name)


@pytest.mark.parametrize("step", [
    {"op": "create_topic", "topic": "n", "partitions": 2, "assignment": {0: [0]}},
    {"op": "stall_follower", "broker": 1, "partition": 0},
    {"op": "set_config", "name": "min.insync.replicas", "value": True},
    {"op": "set_config", "name": "replica.lag.time.max.ms", "value": 5, "topic": "t"},
    {"op": "expect", "within_ms": 100},
    {"op": "expect", "znodes": {"/a": {"exists": False, "data": 1}}},
    {"op": "produce", "topic": "..", "partition": 0},
])
def test_rules_between_fields_are_in_both(step):
    assert validate_step(step) and schema_errors(script_with(step))


def test_the_example_script_is_valid_for_the_schema():
    assert schema_errors(yaml.safe_load(EXAMPLE)) == []
