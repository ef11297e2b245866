"""The imperative shell: child processes (ZooKeeper), threads, clocks, brokers and faults.

Nothing in ``backend.core`` may import from here; this package may import the core.
"""
