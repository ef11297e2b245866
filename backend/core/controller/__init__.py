"""The controller's decisions as pure Python: Kafka 2.8's ``core/src/main/scala/kafka/controller/``.

==============================  ============================================================
here                            Kafka
==============================  ============================================================
``states.py``                   ``PartitionState`` / ``ReplicaState`` (in the two state machines)
``election_algorithms.py``      ``PartitionLeaderElectionAlgorithms`` (the four choosers)
``election.py``                 ``Election.scala``: one batch function per election strategy
``context.py``                  ``ControllerContext.scala``
``events.py``                   ``ControllerState.scala`` and the events of ``KafkaController``
``plan.py``                     what ``KafkaZkClient`` is asked to write, and what comes back
``program.py``                  a handler as a sans-I/O program: ``Done(ctx, value)``, running one
``request_batch.py``            ``ControllerBrokerRequestBatch`` (``ControllerChannelManager.scala``)
``partition_state_machine.py``  ``PartitionStateMachine.scala``
``replica_state_machine.py``    ``ReplicaStateMachine.scala``
``state_change_log.py``         the ``state.change.logger`` lines, as records
``failover.py``                 ``KafkaController.onControllerFailover`` / resignation
``broker_change.py``            ``processBrokerChange``, ``onBrokerStartup``, ``onBrokerFailure``
``controlled_shutdown.py``      ``doControlledShutdown``
``topic_change.py``             ``processTopicChange``, ``onNewPartitionCreation``
``topic_deletion.py``           ``TopicDeletionManager.scala``
``reassignment.py``             ``onPartitionReassignment`` (KIP-455)
``leader_balance.py``           ``ReplicaLeaderElection``, ``checkAndTriggerAutoLeaderRebalance``
``isr_change.py``               ``processIsrChangeNotification`` (inter.broker.protocol.version < 2.7)
``alter_isr.py``                ``processAlterIsr`` (2.7 and newer)
==============================  ============================================================

A controller handler is a *sans-I/O program*: a generator that yields :class:`plan.Plan`
values (ZooKeeper writes to attempt, requests to send, records to emit), receives the write
outcomes back and returns :class:`program.Done` — the new context and its result, one shape
for every program. The runtime runs it against a real ZooKeeper; the tests run it with
literal outcomes. Either way the decisions are made here and only here.
"""
