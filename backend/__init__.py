"""Kafka Controller Lab backend: Kafka 2.8's ZooKeeper-mode controller against a real ZooKeeper.

Layers, dependencies pointing down only: ``runtime`` (processes, threads, time) over ``zk`` (the
only kazoo user) over ``core`` (pure controller decisions). See DESIGN.md.
"""
