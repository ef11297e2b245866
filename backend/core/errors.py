"""Kafka's exceptions, by Kafka's names, for the decisions that refuse bad input.

The message always starts with the exception's name, so whoever reads it (a student in the
page, an instructor in a script's error) can look it up in Kafka's documentation.
"""


class KafkaException(Exception):
    def __str__(self) -> str:
        return f"{type(self).__name__}: {super().__str__()}"


class InvalidReplicationFactorException(KafkaException):
    pass


class InvalidPartitionsException(KafkaException):
    pass


class InvalidReplicaAssignmentException(KafkaException):
    pass


class TopicExistsException(KafkaException):
    pass


class UnknownTopicOrPartitionException(KafkaException):
    pass


class InvalidTopicException(KafkaException):
    pass


class BrokerNotAvailableException(KafkaException):
    pass


class StaleBrokerEpochException(KafkaException):
    pass


class ControllerMovedException(KafkaException):
    pass


class NodeExistsException(KafkaException):
    """ZooKeeper's ``KeeperException.NodeExistsException``, as Kafka's ``checkedEphemeralCreate``
    throws it when ``/brokers/ids/<id>`` is held by another session (a crashed process's, not yet
    expired): the new broker fails to start."""
