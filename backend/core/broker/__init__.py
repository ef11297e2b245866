"""A broker's side of the lab as pure Python: what it stores and what it believes.

=======================  ===================================================================
here                     Kafka
=======================  ===================================================================
``log.py``               ``kafka.log.Log`` with its leader-epoch cache (KIP-101 truncation)
``partition.py``         ``kafka.cluster.Partition`` as leader: followers' progress, ISR
                         shrink and expand, the high watermark
``replica_manager.py``   ``ReplicaManager`` / ``MetadataCache``: the epoch rules a broker
                         applies to the controller's requests
=======================  ===================================================================

The runtime's data plane (``backend.runtime.broker.data_plane``) runs these on a thread per
broker; nothing here knows threads, clocks or ZooKeeper.
"""
