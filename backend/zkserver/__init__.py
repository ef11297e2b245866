"""The embedded ZooKeeper: a real server (or ensemble) started as a child JVM, never a fake.

Nothing here knows Kafka or kazoo; it runs ZooKeeper and talks to it only through its
four-letter words, so the app, ``kclab zk`` and the tests share one launcher:

=================  ===============================================================================
``server.py``      :class:`server.ZooKeeperServer`: one ``QuorumPeerMain`` on a free loopback port,
                   its own data directory, reliably stopped (never a leaked JVM)
``ensemble.py``    :class:`ensemble.ZooKeeperEnsemble`: three servers for the quorum lessons
``classpath.py``   where the jars come from (``ZOOKEEPER_HOME``, Debian's package, pyspark's)
``four_letter.py`` ``srvr``/``ruok`` over a raw socket: is a server serving, which version is it
``supervisor.py``  :class:`supervisor.Supervisor`: start the embedded server again if its JVM dies
=================  ===============================================================================
"""
