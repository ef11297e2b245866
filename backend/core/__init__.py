"""The controller's decisions as pure Python: no ZooKeeper, clock, thread or random source.

Read it beside Kafka 2.8's ``core/src/main/scala/kafka/controller/``:

==============================  ============================================================
here                            Kafka
==============================  ============================================================
``states.py``                   ``PartitionState`` / ``ReplicaState`` (in the two state machines)
``election.py``                 ``Election.scala``, ``PartitionLeaderElectionAlgorithms``
``assignment.py``               ``AdminUtils.assignReplicasToBrokers``
``model.py``                    ``LeaderAndIsr``, ``ReplicaAssignment``, ``TopicPartition``
``context.py``                  ``ControllerContext.scala``
``config.py``                   ``KafkaConfig`` (only the settings the controller lab uses)
``events.py``                   ``ControllerState.scala`` and the events of ``KafkaController``
``plan.py``                     what ``KafkaZkClient`` is asked to write, and what comes back
``requests.py``                 ``ControllerBrokerRequestBatch`` (``ControllerChannelManager.scala``)
``partition_state_machine.py``  ``PartitionStateMachine.scala``
``replica_state_machine.py``    ``ReplicaStateMachine.scala``
``failover.py``                 ``KafkaController.onControllerFailover`` / resignation
``broker_change.py``            ``processBrokerChange``, ``onBrokerStartup``, ``onBrokerFailure``
``controlled_shutdown.py``      ``doControlledShutdown``
``topic_change.py``             ``processTopicChange``, ``onNewPartitionCreation``
``topic_deletion.py``           ``TopicDeletionManager.scala``
``reassignment.py``             ``onPartitionReassignment`` (KIP-455)
``leader_balance.py``           ``ReplicaLeaderElection``, ``checkAndTriggerAutoLeaderRebalance``
``isr_change.py``               ``processIsrChangeNotification``
``replica_manager.py``          the broker side: ``ReplicaManager`` epoch rules, ``MetadataCache``
``records.py``                  Kafka's state-change log, as one flat record type
==============================  ============================================================

A controller handler is a *sans-I/O program*: a generator that yields :class:`plan.Plan`
values (ZooKeeper writes to attempt, requests to send, records to emit) and receives the
write outcomes back. The runtime runs it against a real ZooKeeper; the tests run it with
literal outcomes. Either way the decisions are made here and only here.
"""
