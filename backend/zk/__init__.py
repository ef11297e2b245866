"""Everything that knows ZooKeeper: the only package that imports kazoo.

Kafka keeps znode paths and byte formats in one place (``kafka.zk.ZkData``) and the calls in
another (``KafkaZkClient``, ``AdminZkClient``); so do we, so that ``backend.core`` can stay pure
and a person with ``zkCli.sh`` sees exactly what a Kafka 2.8 cluster shows (spec §1):

===============  =================================================================================
``paths.py``     every Kafka path (``/controller``, ``/brokers/topics/T/partitions/P/state``, …),
                 the persistent paths a broker creates at startup, chroot helpers
``codec.py``     encode/decode of each payload exactly as Kafka 2.8 writes it; malformed data (a
                 zkCli typo) raises :class:`codec.ZnodeFormatError` naming the znode and the fault
``admin.py``     :class:`admin.AdminZkClient`: what Kafka's admin tools write (create/delete topic,
                 add partitions, reassignment, preferred election, topic config) and nothing more;
                 what they check first (names, assignments, configs) is ``admin_validation.py``
``client.py``    the controller's *fenced* writes (a ``check`` on ``/controller_epoch`` in every
                 transaction, spec §3) — written separately, on top of ``paths`` and ``codec``
===============  =================================================================================
"""
