"""Kafka Controller Lab tests. Shared helpers live in ``tests.support``; fixtures in conftest."""
