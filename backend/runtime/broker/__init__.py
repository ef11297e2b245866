"""One simulated broker: Kafka's ``KafkaServer`` and the parts it owns, as the lab runs them.

======================  ==============================================================================
``broker.py``           :class:`broker.SimulatedBroker`: the process — its life (start, crash, clean exit,
                        stop, pause, resume, session expiry) and its ZooKeeper session
``controlled_shutdown.py`` asking the controller to move the leaders before stopping
                        (``KafkaServer.controlledShutdown``)
``connection_notes.py`` the records of a running broker's ZooKeeper connection dropping and coming back
``request_handler.py``  the request queues and handler threads (data plane, KIP-291 control plane)
``data_plane.py``       the replicas at work: logs, leading, the high watermark, produce and consume
``fetcher.py``          a follower's fetching and truncation (``ReplicaFetcherThread``)
``replica_thread.py``   when the replica thread runs: a follower's wait-max or a leader's append (the
                        parked ``DelayedFetch``), and the leader side's deadlines
``replica_scheduler.py`` every broker's replica rounds of the process on a few threads, from one
                        timetable (a thread per broker cost 600 threads' wake-ups at 200 sandboxes)
``alter_isr_manager.py`` a leader's ISR changes as AlterIsr requests to the controller
                        (``DefaultAlterIsrManager``; inter.broker.protocol.version 2.7 and newer)
``isr_manager.py``      a leader's own ISR writes and their propagation (``ZkIsrManager``; below 2.7)
``purgatory.py``        acks=all produces waiting for the ISR (``DelayedProduce``)
======================  ==============================================================================
"""
