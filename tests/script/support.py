"""What the fault-script tests share: ``HEAD``, a cluster of brokers 0-2 with topic ``t`` (3
partitions) whose steps start on line 6, so a step's line numbers can be read off the text; the
problems ``parse_script`` reports; and ``EXAMPLE``, a valid script using most of the format."""

from __future__ import annotations

import textwrap

import pytest

from backend.faultscript.loader import ScriptError, parse_script

HEAD = """\
cluster:
  brokers: [0, 1, 2]
  topics:
    t: {partitions: 3, replication_factor: 2}
steps:
"""


def problems(text: str) -> list[tuple[int, str]]:
    """The (line, message) pairs ``parse_script`` reports for ``text``; fails if it loads."""
    with pytest.raises(ScriptError) as caught:
        parse_script(textwrap.dedent(text), "lesson.yaml")
    assert all(p.file == "lesson.yaml" for p in caught.value.problems)
    return [(p.line, p.message) for p in caught.value.problems]


def only_problem(text: str) -> tuple[int, str]:
    found = problems(text)
    assert len(found) == 1, found
    return found[0]


def steps(*lines: str) -> str:
    return HEAD + "".join(f"  {line}\n" for line in lines)


EXAMPLE = """\
name: Leader failure with ISR shrink
description: Broker 1 dies; its partitions elect new leaders.
cluster:
  brokers: [0, 1, 2]
  topics:
    t: {partitions: 3, replication_factor: 2}
    u: {assignment: {0: [1, 0], 1: [0, 1]}, config: {unclean.leader.election.enable: true}}
  config: {zookeeper.session.timeout.ms: 3000}
  zookeeper: {servers: 3}
steps:
  - op: crash_broker
    broker: 1
  - op: wait_stable
  - op: expect
    within_ms: 5000
    controller: 0
    partitions: {t-0: {leader: 2, isr: [2, 0], leader_epoch: 1, state: OnlinePartition}}
  - {op: produce, topic: u, partition: 1, acks: all}
  - {op: set_config, name: min.insync.replicas, value: 2, topic: t}
  - {op: zk_server_stop, server: 2}
"""
