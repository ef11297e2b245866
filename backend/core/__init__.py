"""Kafka's controller and brokers as pure Python: no ZooKeeper, clock, thread or random source.

Split by what it models, each package read beside its Kafka 2.8 counterpart:

==================  =============================================================================
``controller/``     ``kafka.controller``: the context, events, state machines, elections and the
                    controller's decisions (its own map is in ``controller/__init__.py``)
``broker/``         ``kafka.cluster`` / ``kafka.log`` / ``kafka.server.ReplicaManager``: a broker's
                    log, its partitions as leader, the epoch rules it applies to requests
``model.py``        ``LeaderAndIsr``, ``ReplicaAssignment``, ``TopicPartition``, ``BrokerInfo``
``requests.py``     the controller → broker requests (LeaderAndIsr, UpdateMetadata, StopReplica)
``config.py``       ``KafkaConfig`` (only the settings the controller lab uses)
``errors.py``       Kafka's exceptions the controller and admin raise
``assignment.py``   ``AdminUtils.assignReplicasToBrokers`` (what ``kafka-topics.sh`` computes)
``records.py``      Kafka's state-change log as one flat record type, and the session header
``subjects.py``     records' subjects: the browser's join keys
==================  =============================================================================

The page's folds over records (the cluster view, the lesson view, the replay-log rules, and
Kafka's rules checked on every record for the invariant panel) are pure too, but model the page
rather than Kafka: they live in ``backend.view``.
Dependencies point down: ``controller`` and ``broker`` use the modules of this package, never
each other; nothing here imports anything outside the standard library and this package.
"""
