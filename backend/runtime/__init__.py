"""The imperative shell: threads, clocks, brokers, the controller's event thread, faults.

The runtime is a tree with Kafka's ownership: a :class:`cluster.Cluster` owns its brokers
(``broker/``), its operator session and its client (``producer.py``); a broker owns its
ZooKeeper session, request handler, data plane and controller (``controller/``); the controller
owns its event manager and channel manager. Children get narrow, typed interfaces
(``peers.py``, ``stage.py``), never their parents.

================  =================================================================================
``cluster.py``    a lab cluster: its brokers in their chroot, the record stream, the stage directions
``inspection.py`` the cluster as an ``expect`` step sees it
``peers.py``      what a broker may use of its cluster; the other brokers over the lab's "network"
``stage.py``      a lesson's stage directions and a fault's pause points, as the controller meets them
``producer.py``   the lab's client (produce, consume) and the ledger of acknowledged messages
``faults.py``     the fault vocabulary carried out (checks in ``fault_checks.py``)
``runner.py``     a fault script run against a live cluster (``kclab run``)
``live_rules.py`` Kafka's rules (``backend.view``) folded live beside a run that asks about them
``record_bus.py`` records stamped with their seq and fanned out to the sinks
``replay*.py``    replay logs: written as records arrive, listed and imported
``lab_clock.py``  the lab's timers' clock, which a lesson can hold at a stop
``polling.py``    waiting on a condition with a time-out (never a fixed sleep)
``heap.py``       the garbage collector kept out of a failover's way
``per_process.py`` one instance per process (and per forked worker) of the replica scheduler
================  =================================================================================

Nothing in ``backend.core`` or ``backend.zk`` imports from here; ZooKeeper is reached only
through ``backend.zk`` (the only importer of kazoo).
"""
