"""Fault scripts: a valid script round trip, and every kind of problem reported with its line.

Scripts are small inline YAML texts built on ``tests.script.support.HEAD`` (steps start on line
6, so a step's line numbers can be read off the text). The vocabulary table and its JSON Schema
are ``test_vocabulary.py``."""

from __future__ import annotations

import pytest

from backend.faultscript.loader import (ClusterSpec, Problem, ScriptError, Step, TopicSpec, load_script,
                                        parse_partition_key, parse_script)
from backend.faultscript.vocabulary import SCRIPT_VOCABULARY
from tests.script.support import EXAMPLE, HEAD, only_problem, problems, steps


# -- a valid script ---------------------------------------------------------------------------

def test_a_valid_script_loads_with_its_cluster_steps_lines_and_defaults():
    script = parse_script(EXAMPLE, "leader.yaml")
    assert script.name == "Leader failure with ISR shrink"
    assert script.description.startswith("Broker 1 dies")
    assert script.filename == "leader.yaml"
    assert script.cluster == ClusterSpec(
        brokers=(0, 1, 2),
        topics={"t": TopicSpec(3, 2, None, {}),
                "u": TopicSpec(2, 2, {0: (1, 0), 1: (0, 1)}, {"unclean.leader.election.enable": True})},
        config={"zookeeper.session.timeout.ms": 3000},
        zookeeper_servers=3)
    assert script.steps == (
        Step(1, 11, "crash_broker", {"broker": 1}),
        Step(2, 13, "wait_stable", {"timeout_ms": 30000}),
        Step(3, 14, "expect", {"within_ms": 5000, "controller": 0, "partitions": {
            "t-0": {"leader": 2, "isr": [2, 0], "leader_epoch": 1, "state": "OnlinePartition"}}}),
        Step(4, 18, "produce", {"topic": "u", "partition": 1, "acks": "all", "count": 1}),
        Step(5, 19, "set_config", {"name": "min.insync.replicas", "value": 2, "topic": "t"}),
        Step(6, 20, "zk_server_stop", {"server": 2}),
    )
    assert script.steps[3].where == "step 4 (line 18)"


def test_load_script_reads_a_file_and_names_it_in_problems(tmp_path):
    path = tmp_path / "leader.yaml"
    path.write_text(EXAMPLE)
    assert load_script(path).filename == str(path)
    path.write_text(steps("- {op: crash_broker, broker: 9}"))
    with pytest.raises(ScriptError) as caught:
        load_script(path)
    assert str(caught.value) == f"{path}:6: step 1 (crash_broker): broker 9 is not in cluster.brokers [0, 1, 2]"


def test_an_unreadable_file_is_a_script_error_for_the_whole_file(tmp_path):
    with pytest.raises(ScriptError) as caught:
        load_script(tmp_path / "missing.yaml")
    assert caught.value.problems[0].line == 0
    assert str(caught.value) == f"{tmp_path / 'missing.yaml'}: cannot read the script: No such file or directory"


def test_defaults_are_filled_in_and_an_assignment_gives_the_counts():
    script = parse_script(steps("- {op: create_topic, topic: a}",
                                "- {op: create_topic, topic: b, assignment: {0: [2, 1], 1: [1, 2]}}",
                                "- {op: expect, brokers: {'1': alive}}"))
    assert [s.args for s in script.steps] == [
        {"topic": "a", "partitions": 1, "replication_factor": 1},
        {"topic": "b", "assignment": {0: [2, 1], 1: [1, 2]}, "partitions": 2, "replication_factor": 2},
        {"brokers": {1: "alive"}, "within_ms": 10000},
    ]


@pytest.mark.parametrize("key, expected", [("t-0", ("t", 0)), ("my-topic-12", ("my-topic", 12)),
                                           ("a.b_c-3", ("a.b_c", 3))])
def test_partition_keys_split_at_the_last_dash(key, expected):
    assert parse_partition_key(key) == expected


@pytest.mark.parametrize("key", ["t", "t-", "t-x", "-0", "bad topic-0", "..-1", 5])
def test_malformed_partition_keys_are_refused(key):
    with pytest.raises(ValueError, match="partition"):
        parse_partition_key(key)


# -- each kind of problem, with its line -------------------------------------------------------

def test_unknown_op_suggests_the_closest():
    assert only_problem(steps("- op: crash_brokr", "  broker: 1")) == (
        6, "step 1: unknown op 'crash_brokr'; did you mean crash_broker?")


def test_unknown_op_without_a_close_match_lists_the_ops():
    line, message = only_problem(steps("- op: reboot"))
    assert line == 6 and message.startswith("step 1: unknown op 'reboot'; the ops are: crash_broker, stop_broker, start_broker")


def test_missing_required_field():
    assert only_problem(steps("- op: wait_stable", "- op: crash_broker")) == (
        7, "step 2 (crash_broker): crash_broker needs broker (the broker to crash): a broker id from 0 to 1000")


def test_unknown_field_names_its_line_and_suggests():
    assert only_problem(steps("- op: crash_broker", "  broker: 1", "  brokr: 2")) == (
        8, "step 1 (crash_broker): unknown field 'brokr' in crash_broker; did you mean broker?; "
           "its fields are: broker")


@pytest.mark.parametrize("fields, message", [
    (["partition: 0", "count: 0"], "count must be an integer from 1 to 10000, got 0"),
    (["partition: 0", "count: true"], "count must be an integer from 1 to 10000, got true"),
    (["partition: 0", "acks: 2"], "acks must be one of 0, 1, all, got 2"),
    (["partition: first"], "partition must be a partition number (an integer of at least 0), got the text 'first'"),
])
def test_wrong_types_name_the_field_and_the_value(fields, message):
    lines = ["- op: produce", "  topic: t", *(f"  {field}" for field in fields)]
    assert only_problem(steps(*lines)) == (6 + len(lines) - 1, f"step 1 (produce): {message}")


@pytest.mark.parametrize("step, message", [
    ("{op: crash_broker, broker: 9}", "broker 9 is not in cluster.brokers [0, 1, 2]"),
    ("{op: reassign_partitions, partitions: {t-0: [0, 7]}}",
     "partitions.t-0.1: broker 7 is not in cluster.brokers [0, 1, 2]"),
    ("{op: create_topic, topic: n, assignment: {0: [5]}}",
     "assignment.0.0: broker 5 is not in cluster.brokers [0, 1, 2]"),
    ("{op: expect, controller: 4}", "controller: broker 4 is not in cluster.brokers [0, 1, 2]"),
    ("{op: expect, brokers: {3: dead}}", "brokers.3: broker 3 is not in cluster.brokers [0, 1, 2]"),
    ("{op: expect, replicas: {t-0/3: OnlineReplica}}", "replicas.t-0/3: broker 3 is not in cluster.brokers [0, 1, 2]"),
    ("{op: expect, partitions: {t-0: {isr: [0, 6]}}}", "partitions.t-0.isr.1: broker 6 is not in cluster.brokers [0, 1, 2]"),
])
def test_brokers_not_in_the_cluster(step, message):
    assert only_problem(steps("- op: wait_stable", f"- {step}")) == (7, f"step 2 ({step.split(',')[0][5:]}): {message}")


def test_no_leader_is_minus_one_not_a_broker():
    parse_script(steps("- {op: expect, partitions: {t-0: {leader: -1}}}"))


def test_unknown_topic():
    assert only_problem(steps("- {op: produce, topic: x, partition: 0}")) == (
        6, "step 1 (produce): topic 'x' does not exist at this step: it is not in cluster.topics "
           "and no earlier step creates it")


def test_a_topic_created_earlier_may_be_used_but_not_before():
    assert only_problem(steps("- {op: consume, topic: new, partition: 0}",
                              "- {op: create_topic, topic: new}",
                              "- {op: consume, topic: new, partition: 0}")) == (
        6, "step 1 (consume): topic 'new' does not exist at this step: it is not in cluster.topics "
           "and no earlier step creates it")


def test_a_deleted_topic_cannot_be_used_but_may_be_observed_or_recreated():
    assert only_problem(steps("- {op: delete_topic, topic: t}",
                              "- {op: expect, replicas: {t-0/1: ReplicaDeletionStarted}}",
                              "- {op: produce, topic: t, partition: 0}",
                              "- {op: create_topic, topic: t}",
                              "- {op: produce, topic: t, partition: 0}")) == (
        8, "step 3 (produce): topic 't' was deleted by step 1 (line 6)")


def test_creating_an_existing_topic():
    assert only_problem(steps("- {op: create_topic, topic: t}")) == (
        6, "step 1 (create_topic): topic 't' already exists (from cluster.topics)")


@pytest.mark.parametrize("step, message", [
    ("{op: produce, topic: t, partition: 3}", "topic 't' has 3 partitions (0 to 2), so there is no partition 3"),
    ("{op: stall_follower, broker: 1, topic: t, partition: 5}",
     "topic 't' has 3 partitions (0 to 2), so there is no partition 5"),
    ("{op: preferred_election, partitions: [t-0, t-4]}",
     "partitions.1: topic 't' has 3 partitions (0 to 2), so there is no partition 4"),
    ("{op: expect, partitions: {t-3: {leader: 1}}}",
     "partitions.t-3: topic 't' has 3 partitions (0 to 2), so there is no partition 3"),
])
def test_partitions_beyond_the_topics_count(step, message):
    assert only_problem(steps(f"- {step}")) == (6, f"step 1 ({step.split(',')[0][5:]}): {message}")


def test_add_partitions_grows_the_count():
    parse_script(steps("- {op: add_partitions, topic: t, partitions: 5, assignment: {3: [0, 1], 4: [1, 2]}}",
                       "- {op: produce, topic: t, partition: 4}"))
    assert problems(steps("- {op: add_partitions, topic: t, partitions: 3}",
                          "- {op: add_partitions, topic: t, partitions: 5, assignment: {4: [0, 1]}}",
                          "- {op: add_partitions, topic: t, partitions: 6, assignment: {5: [0]}}")) == [
        (6, "step 1 (add_partitions): topic 't' already has 3 partitions; partitions is the new total, "
            "so it must be more than 3"),
        (7, "step 2 (add_partitions): assignment must list the new partitions [3, 4], got [4]"),
        (8, "step 3 (add_partitions): assignment.5 has 1 replicas but topic 't' has replication factor 2"),
    ]


def test_unknown_settings_are_named_with_a_suggestion():
    text = """\
        cluster:
          brokers: [0]
          config: {zookeeper.session.timeout: 3000}
          topics:
            t: {partitions: 1, config: {min.insync.replica: 1}}
        steps:
          - {op: set_config, name: replica.lag.time.max, value: 100}
        """
    assert problems(text) == [
        (3, "unknown setting 'zookeeper.session.timeout'; did you mean zookeeper.session.timeout.ms? "
            "(the lab's settings are listed in backend/core/config.py)"),
        (5, "unknown setting 'min.insync.replica'; did you mean min.insync.replicas? "
            "(the lab's settings are listed in backend/core/config.py)"),
        (7, "step 1 (set_config): unknown setting 'replica.lag.time.max'; did you mean replica.lag.time.max.ms? "
            "(the lab's settings are listed in backend/core/config.py)"),
    ]


def test_setting_values_and_topic_level_settings_are_checked():
    assert problems(steps("- {op: set_config, name: unclean.leader.election.enable, value: 'yes'}",
                          "- {op: set_config, name: replica.lag.time.max.ms, value: -5}",
                          "- {op: set_config, name: replica.lag.time.max.ms, value: 100, topic: t}",
                          "- {op: set_config, name: unclean.leader.election.enable, value: true, topic: t}")) == [
        (6, "step 1 (set_config): unclean.leader.election.enable must be true or false, got the text 'yes'"),
        (7, "step 2 (set_config): replica.lag.time.max.ms must not be negative, got -5"),
        (8, "step 3 (set_config): replica.lag.time.max.ms is a broker-wide setting and cannot be set for one "
            "topic (topic-level settings: unclean.leader.election.enable, min.insync.replicas)"),
    ]


def test_bad_yaml_syntax_reports_yamls_line_and_column():
    assert only_problem(steps("- op: crash_broker", "  broker: 1", "- op: reassign_partitions",
                              "  partitions: {t-0: [1, 2}")) == (
        9, "YAML syntax error (column 28): expected ',' or ']', but got '}' (while parsing a flow sequence)")


def test_bad_indentation_is_a_syntax_error_on_its_line():
    line, message = only_problem("cluster:\n  brokers: [0]\n steps: []\n")
    assert line == 3 and message.startswith("YAML syntax error (column")


@pytest.mark.parametrize("text, line, found", [
    ("- op: crash_broker\n", 1, "a list"), ("just text\n", 1, "the text 'just text'"),
    ("", 1, "empty"), ("# only a comment\n", 1, "empty")])
def test_a_document_that_is_not_a_mapping(text, line, found):
    assert only_problem(text) == (line, "a script must be a mapping with cluster: and steps: at the top, "
                                        f"but this document is {found}")


def test_duplicate_keys_are_reported_with_both_lines():
    text = steps("- op: crash_broker", "  broker: 1", "  broker: 2")
    assert only_problem(text) == (8, "duplicate key 'broker' (first on line 7); YAML would silently keep "
                                     "only the last value, so remove one of them")
    assert only_problem(HEAD.replace("steps:", "cluster: {}\nsteps: []")) == (
        5, "duplicate key 'cluster' (first on line 1); YAML would silently keep only the last value, "
           "so remove one of them")


def test_merge_keys_are_not_duplicates():
    script = parse_script(steps("- &crash {op: crash_broker, broker: 1}", "- {<<: *crash, broker: 2}"))
    assert [s.args for s in script.steps] == [{"broker": 1}, {"broker": 2}]


def test_several_problems_are_reported_together_in_line_order():
    text = """\
        name: [not, text]
        cluster:
          brokers: [0, 1, 2]
          topics:
            bad topic: {partitions: 1}
            t: {partitions: 2, replication_factor: 5}
          zookeeper: {servers: 2}
        steps:
          - {op: crash_broker, broker: 1, extra: true}
          - op: expect
          - {op: zk_server_start, server: 1}
          - {op: create_topic, topic: x, partitions: 2, assignment: {0: [0]}}
          - {op: produce, topic: x, partition: 1}
          - {op: stall_follower, broker: 0, partition: 1}
          - {op: pause_broker, broker: 0, during: BrokerChanged}
          - crash_broker
          - {broker: 1}
          - {op: start_broker, broker: 1001}
        """
    assert problems(text) == [
        (1, "name must be text, got a list"),
        (5, "cluster.topics.bad topic must be a topic name (1 to 249 letters, digits, '.', '_' or '-'), "
            "got the text 'bad topic'"),
        (6, "cluster.topics.t: replication factor 5 is larger than the cluster's 3 brokers"),
        (7, "cluster.zookeeper.servers must be one of 1, 3, got 2"),
        (9, "step 1 (crash_broker): unknown field 'extra' in crash_broker; its fields are: broker"),
        (10, "step 2 (expect): expect needs at least one of: controller, controller_epoch, brokers, partitions, "
             "replicas, znodes, rules"),
        (12, "step 4 (create_topic): give either assignment or partitions, not both: an assignment already "
             "says how many partitions and replicas there are"),
        (14, "step 6 (stall_follower): partition needs topic: say which topic's partition"),
        (15, "step 7 (pause_broker): during must be a ControllerEvent name such as BrokerChange, got the text "
             "'BrokerChanged'; did you mean BrokerChange?"),
        (16, "step 8: a step must be a mapping like {op: crash_broker, broker: 1}, got the text 'crash_broker'"),
        (17, "step 9: a step needs op: one of " + ", ".join(SCRIPT_VOCABULARY)),
        (18, "step 10 (start_broker): broker must be a broker id from 0 to 1000, got 1001"),
    ]


def test_a_broken_create_topic_still_creates_its_topic_for_later_steps():
    assert [line for line, _ in problems(steps("- {op: create_topic, topic: x, partitons: 2}",
                                                "- {op: produce, topic: x, partition: 0}"))] == [6]


def test_zookeeper_server_steps_need_an_ensemble():
    assert only_problem(steps("- {op: zk_server_stop, server: 1}")) == (
        6, "step 1 (zk_server_stop): zk_server_stop needs a three-server ZooKeeper ensemble: "
           "set cluster.zookeeper.servers: 3")


@pytest.mark.parametrize("cluster, message", [
    ("brokers: [0, 1, 2, 3, 4, 5, 6, 7]", "cluster.brokers must have at least 1 and at most 7 items, got 8"),
    ("brokers: [0, 0]", "cluster.brokers lists 0 twice; each may appear once"),
    ("brokers: []", "cluster.brokers must have at least 1 and at most 7 items, got 0"),
    ("{}", "cluster needs brokers (the brokers, started in this order): a list of 1 to 7 distinct broker ids"),
    ("brokers: [0]\n  borkers: [1]", "unknown field 'borkers' in cluster; did you mean brokers?; its fields are: "
                                     "brokers, topics, config, zookeeper"),
    ("brokers: [0, 1]\n  topics: {t: {assignment: {0: [0], 2: [1]}}}",
     "cluster.topics.t.assignment must list partitions 0 to 1 (got [0, 2])"),
    ("brokers: [0, 1]\n  topics: {t: {assignment: {0: [0], 1: [1, 0]}}}",
     "cluster.topics.t.assignment: every partition must have the same number of replicas (got [1, 2])"),
    ("brokers: [0, 1]\n  topics: {t: {assignment: {0: [0, 0]}}}",
     "cluster.topics.t.assignment.0 lists 0 twice; each may appear once"),
    ("brokers: [0]\n  topics: {t: {config: {zookeeper.session.timeout.ms: 1}}}",
     "zookeeper.session.timeout.ms is a broker-wide setting and cannot be set for one topic (topic-level "
     "settings: unclean.leader.election.enable, min.insync.replicas)"),
])
def test_cluster_problems(cluster, message):
    line, found = only_problem(f"cluster:\n  {cluster}\nsteps: []\n")
    assert found == message
    assert line in (1, 2, 3)


def test_top_level_keys():
    assert problems("cluster: {brokers: [0]}\nstep: []\n") == [
        (1, "the script needs steps:"),
        (2, "unknown top-level key 'step'; did you mean steps?; a script has: name, description, cluster, steps"),
    ]
    assert only_problem("cluster: {brokers: [0]}\nsteps: {op: wait_stable}\n") == (
        2, "steps must be a list of steps, each like {op: crash_broker, broker: 1}, got a mapping")


def test_problem_and_error_text():
    error = ScriptError([Problem("a.yaml", 3, "one"), Problem("a.yaml", 7, "two")])
    assert str(error) == "a.yaml:3: one\na.yaml:7: two"


# -- more lines ---------------------------------------------------------------------------------

def test_a_nested_problem_is_reported_on_its_own_line():
    assert only_problem(steps("- op: expect", "  partitions:", "    t-0: {leader: 1}", "    t-7:",
                              "      leader: 1")) == (
        9, "step 1 (expect): partitions.t-7: topic 't' has 3 partitions (0 to 2), so there is no partition 7")
    assert only_problem(steps("- op: expect", "  brokers:", "    0: alive", "    '1': sleeping")) == (
        9, "step 1 (expect): brokers.1 must be one of alive, dead, paused, shutting_down, got the text 'sleeping'")


def test_duplicate_keys_in_nested_mappings():
    assert only_problem(steps("- op: expect", "  partitions:", "    t-0: {leader: 1, leader: 2}")) == (
        8, "duplicate key 'leader' (first on line 8); YAML would silently keep only the last value, "
           "so remove one of them")


def test_replication_factor_larger_than_the_cluster():
    assert problems(steps("- {op: create_topic, topic: a, replication_factor: 4}",
                          "- {op: create_topic, topic: b, assignment: {0: [0, 1, 2, 2]}}")) == [
        (6, "step 1 (create_topic): replication factor 4 is larger than the cluster's 3 brokers"),
        (7, "step 2 (create_topic): assignment.0 lists 2 twice; each may appear once"),
    ]


def test_yaml_tags_and_recursive_aliases_are_refused():
    assert only_problem(steps("- {op: crash_broker, broker: !!python/int 1}"))[0] == 6
    line, message = only_problem(HEAD + "  - &a [*a]\n")
    assert (line, message) == (6, "an alias refers to a mapping or list that contains it; a script cannot be "
                                  "recursive")
