"""How big anything a script, a lesson or a request can make may be.

A sandbox is one student's cluster on a shared machine: a topic of 2**63 partitions, a million
messages in one click or a 600-byte YAML alias bomb must be refused with a reason before any of
it is built, not discovered when the server runs out of memory. The numbers are far above what
a student's sandbox needs and far below what hurts the machine; they are stated in the
vocabulary and so in the JSON Schema and the OpenAPI document.

A lesson's own cluster (its ``cluster:`` section, written by an author rather than made by a
request) may be larger: ``MAX_LESSON_PARTITIONS``. The course's lesson on Kafka 1.1's pipelined
ZooKeeper writes fails a broker of a 2,000-partition topic, because only a batch that large
takes long enough to time; every step and click within that lesson keeps the bounds below.
"""

from __future__ import annotations

MAX_BROKERS = 7
MAX_TOPICS = 20
"""Topics a cluster may hold at once (its own and those created by steps or clicks)."""
MAX_PARTITIONS_PER_TOPIC = 100
MAX_PARTITIONS = 200
"""Partitions of all topics of one cluster together (each costs a znode and a state in every view)."""
MAX_LESSON_PARTITIONS = 2_000
"""Partitions a lesson's or script's ``cluster:`` section may start with, per topic and in all."""
MAX_REPLICATION_FACTOR = MAX_BROKERS
MAX_PRODUCE_COUNT = 10_000
"""Messages one ``produce`` may send."""
MAX_MESSAGES = 100_000
"""Messages one cluster may be sent over its life (they are kept in memory, as a log)."""
MAX_STEPS = 500
"""Steps of one script or lesson."""

MAX_YAML_BYTES = 128 * 1024
MAX_YAML_DEPTH = 40
"""Mappings and lists nested in one another."""
MAX_YAML_NODES = 50_000
"""Values built from one document, counting every use of an alias again: the budget that stops
an alias bomb (a few lines that expand to billions of values)."""
MAX_JSON_DEPTH = 40
"""Objects and arrays nested in one JSON request body."""
