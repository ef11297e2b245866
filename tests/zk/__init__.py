"""Tests of backend.zk: paths, payload formats, admin writes (against a real ZooKeeper)."""
