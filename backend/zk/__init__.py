"""Everything that knows ZooKeeper: the only package that imports kazoo (a test keeps it so).

Kafka keeps znode paths and byte formats in one place (``kafka.zk.ZkData``) and the calls in
another (``KafkaZkClient``, ``AdminZkClient``); so do we, so that ``backend.core`` can stay pure,
the runtime never sees a kazoo type, and a person with ``zkCli.sh`` sees exactly what a Kafka
2.8 cluster shows (spec §1):

=====================  ===========================================================================
``paths.py``           every Kafka path (``/controller``, ``/brokers/topics/T/partitions/P/state``, …),
                       the persistent paths a broker creates at startup, chroot and host helpers
``codec/``             encode/decode of each payload exactly as Kafka 2.8 writes it, one module per
                       znode family; malformed data (a zkCli typo) raises ``codec.ZnodeFormatError``
``znode_decoder.py``   a znode's bytes as a value (JSON, else text): what ``expect``, lessons and the
                       ZooKeeper view read
``client.py``          :class:`client.KafkaZkClient`: every read and write a broker or controller makes
``fenced.py``          the controller's *fenced* writes (a ``check`` on ``/controller_epoch`` in every
                       transaction, spec §3), one table entry per kind of write
``multi_read.py``      many znodes in one request (ZooKeeper 3.6's ``multiRead``) when every server has it
``handler.py``         kazoo's threading handler with a cheaper ``select`` and batched wake-ups
``jitter.py``          kazoo's jitter from its own ``random.Random``, not the process's (installed here)
``watches.py``         ZooKeeper's notifications as our own types: ``WatchEvent``, ``SessionState``
``session.py``         :class:`session.ZkSession`: one broker's session (connect, state, close, expire)
``io_loop.py``         one thread and one selector for every session of the process (``SessionLoop``)
``session_loop.py``    kazoo's connection handler as steps of that loop (``LoopConnection``)
``cable.py``           a broker's cable to the ensemble: paused (blackholed) or cut (a crash)
``teardown.py``        a stopped client's reference cycles broken, so its state dies with it
``operator.py``        :class:`operator.OperatorSession`: a cluster's operator session (admin tools,
                       ``zkCli.sh``'s ``deleteall /controller``, the lab's own reads)
``observer.py``        what ZooKeeper holds, as ``zk`` records: the page's ZooKeeper view
``persistent_watch.py`` one watch on a whole subtree that stays set (ZooKeeper 3.6's ``addWatch``), the
                       observer's when every server has it
``admin.py``           :class:`admin.AdminZkClient`: what Kafka's admin tools write and nothing more;
                       what they check first is ``admin_validation.py``
``app_session.py``     the app's own session: is ZooKeeper there, which chroots are owned
=====================  ===========================================================================
"""

from backend.zk import jitter

jitter.install()
