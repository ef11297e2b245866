"""The fault-script format: pure data, no ZooKeeper connection and no threads.

A fault script (``kclab run``, ``lessons/scripts/``) and a lesson (``backend.lessons``, which
extends this format) are YAML files checked completely before anything runs, each problem named
with its file, line and reason. The runtime that carries the steps out is
``backend.runtime.runner``.

=====================  =============================================================================
``vocabulary.py``      the one table of operations that scripts, lessons, the browser and the HTTP
                       API share (each op's fields and rules); the controller events come from the core
``types.py``           the value types fields are made of (check, JSON Schema, references)
``fields.py``          named fields and :class:`fields.Struct`, a mapping with fixed fields
``kafka_types.py``     Kafka-shaped types: brokers, topics, partition keys, assignments, settings
``limits.py``          how big anything a script, a lesson or a request may make may be
``cluster_spec.py``    the ``cluster:`` section (brokers, topics, settings, ZooKeeper servers)
``checks.py``          what needs the script around a step: does broker 7 exist, topic ``t`` yet
``yaml_lines.py``      YAML with every value's line, refusing what PyYAML would silently accept
``loader.py``          a script file -> checked steps, or every problem with its line
``expect.py``          does the cluster look as an ``expect`` step says (a partial match)
``schema.py``          the JSON Schema generated from the vocabulary (``script.schema.json``)
=====================  =============================================================================
"""
