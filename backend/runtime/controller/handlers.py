"""What the controller thread does with each event: :data:`HANDLERS`, one function per event.

Each handler reads what it needs from ZooKeeper (re-arming its watch as it reads, as Kafka's
do) and hands the decision to the pure core; ``controller.run`` carries out the program. The
table is built from the core's list of events (``backend.core.controller.events.EVENTS``), so
an event without a handler stops the import rather than the controller thread.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

from backend.core.controller import (
    alter_isr, broker_change, controlled_shutdown, isr_change, leader_balance, reassignment, topic_change,
    topic_deletion,
)
from backend.core.controller import events as ev
from backend.core.controller.partition_state_machine import trigger_online_partition_state_change
from backend.core.dispatch import dispatch_table
from backend.core.broker.replica_manager import STALE_CONTROLLER_EPOCH
from backend.core.errors import ControllerMovedException, KafkaException
from backend.core.records import Record
from backend.core.subjects import request_subject

if TYPE_CHECKING:
    from backend.runtime.controller.controller import KafkaController


def on_startup(controller: KafkaController, event) -> None:
    controller.elect()


def on_controller_change(controller: KafkaController, event) -> None:
    controller.maybe_resign()


def on_reelect(controller: KafkaController, event) -> None:
    controller.maybe_resign()
    controller.elect()


def on_register_broker_and_reelect(controller: KafkaController, event) -> None:
    controller.register_broker()
    controller.maybe_resign()
    controller.elect()


def on_expire(controller: KafkaController, event) -> None:
    was_active = controller.is_active
    controller.active_controller_id = -1
    if was_active:
        controller.resign("its ZooKeeper session expired.")


def on_broker_change(controller: KafkaController, event) -> None:
    if controller.is_active:
        watches = controller.watches.for_handlers()
        brokers = controller.zk.get_all_brokers(watch=watches["brokers"])
        controller.zk.watch_brokers(brokers, watches["broker"])
        controller.run(broker_change.process_broker_change(controller.ctx, brokers))


def on_broker_modifications(controller: KafkaController, event: ev.BrokerModifications) -> None:
    if controller.is_active:
        current = controller.zk.get_broker(event.broker_id, watch=controller.watches.for_handlers()["broker"](event.broker_id))
        controller.run(broker_change.process_broker_modification(controller.ctx, event.broker_id, current))


def on_topic_change(controller: KafkaController, event) -> None:
    if not controller.is_active:
        return
    watches, zk = controller.watches.for_handlers(), controller.zk
    topics = zk.get_all_topics(watch=watches["topics"])
    new = topic_change.topics_to_read(controller.ctx, topics)
    assignments = zk.get_topic_assignments(new, watch=watches["topic"])
    configs = zk.get_topic_configs(new)
    controller.run(topic_change.process_topic_change(controller.ctx, topics, assignments, configs))


def on_partition_modifications(controller: KafkaController, event: ev.PartitionModifications) -> None:
    if not controller.is_active:
        return
    assignments = controller.zk.get_topic_assignments([event.topic], watch=controller.watches.for_handlers()["topic"])
    if event.topic in assignments:
        controller.run(topic_change.process_partition_modifications(controller.ctx, event.topic,
                                                                    assignments[event.topic]))


def on_topic_deletion(controller: KafkaController, event) -> None:
    if controller.is_active:
        topics = controller.zk.get_topic_deletions(watch=controller.watches.for_handlers()["delete_topics"])
        controller.run(topic_deletion.process_topic_deletion(controller.ctx, topics))


def on_stop_replica_response(controller: KafkaController, event: ev.TopicDeletionStopReplicaResponseReceived) -> None:
    """Only partitions of a topic deletion in progress count: a reassignment deletes its
    removed replicas with StopReplica too, and that answer is nobody's event."""
    deleting = controller.ctx.topics_with_deletion_started
    errors = tuple((tp, error) for tp, error in event.partition_errors if tp.topic in deleting)
    if controller.is_active and errors:
        controller.run(topic_deletion.process_stop_replica_response(controller.ctx, event.replica_id, errors))


def on_zk_partition_reassignment(controller: KafkaController, event) -> None:
    if controller.is_active:
        requested = controller.zk.get_partition_reassignment(watch=controller.watches.for_handlers()["reassign"])
        if requested is not None:
            controller.run(reassignment.process_zk_partition_reassignment(controller.ctx, requested))


def on_isr_change_notification(controller: KafkaController, event) -> None:
    if not controller.is_active:
        return
    zk = controller.zk
    sequence_numbers = zk.get_isr_change_notifications(watch=controller.watches.for_handlers()["isr_change"])
    partitions = zk.get_partitions_from_isr_change_notifications(sequence_numbers)
    states = {tp: s for tp, s in zk.get_partition_states(partitions).items() if s is not None}
    controller.run(isr_change.process_isr_change_notification(controller.ctx, tuple(sequence_numbers), states))


def on_alter_isr(controller: KafkaController, event: ev.AlterIsrReceived) -> None:
    """Kafka's ``processAlterIsr``: NOT_CONTROLLER, STALE_BROKER_EPOCH, or a result per
    partition; the work runs in a ``try`` whose failure (a fenced write included) is answered
    UNKNOWN_SERVER_ERROR, without resigning. After the answer, reassignments may complete."""
    if not controller.is_active:
        _answer_alter_isr(controller, event, "NOT_CONTROLLER")
        return
    error = alter_isr.check_request(controller.ctx, event.broker_id, event.broker_epoch)
    if error is not None:
        _answer_alter_isr(controller, event, error)
        return
    try:
        done = controller.run(alter_isr.process_alter_isr(controller.ctx, event.broker_id, dict(event.partitions)),
                              resign_when_fenced=False)
    except Exception:  # noqa: BLE001 - Kafka's ``catch { case e: Throwable }``: the leader retries
        done = None
    if done is None:
        _answer_alter_isr(controller, event, alter_isr.UNKNOWN_SERVER_ERROR)
        return
    _answer_alter_isr(controller, event, "NONE", done.value)
    controller.run(alter_isr.complete_reassignments(controller.ctx, done.value))


def _answer_alter_isr(controller: KafkaController, event: ev.AlterIsrReceived, error: str,
                      partitions: dict | None = None) -> None:
    """The AlterIsr response: a ``request`` record of the controller's (the arrow's end) and the callback."""
    partitions = partitions or {}
    failed = sorted(f"{tp}: {e}" for tp, (e, _) in partitions.items() if e != "NONE")
    if error != "NONE":
        note = f"Controller {controller.broker_id} refused broker {event.broker_id}'s AlterIsr: {error}."
    elif failed:
        note = f"Controller {controller.broker_id} answered broker {event.broker_id}'s AlterIsr with errors: {'; '.join(failed)}."
    else:
        note = (f"Controller {controller.broker_id} changed the ISR broker {event.broker_id} asked for and answers "
                f"with the new state (and its znode version).")
    controller.emit([Record(
        kind="request", subject=request_subject("AlterIsr", event.correlation_id), op="AlterIsr",
        to_state="applied" if error == "NONE" else "rejected", broker_id=event.broker_id,
        outcome="ok" if error == "NONE" and not failed else "refused", note=note,
        detail={"error": error, "partitions": {str(tp): {"error": e, **({} if s is None else {
            "leader": s.leader, "leader_epoch": s.leader_epoch, "isr": list(s.isr), "zk_version": s.zk_version})}
            for tp, (e, s) in sorted(partitions.items())}})])
    event.callback(error=error, partitions=partitions)


def on_partition_reassignment_isr_change(controller: KafkaController, event: ev.PartitionReassignmentIsrChange
                                         ) -> None:
    """Kafka's ``processPartitionReassignmentIsrChange`` (below IBP 2.7): a reassigning
    partition's state changed — perhaps its new replicas joined the ISR. Re-arms the watch."""
    tp = event.partition
    if controller.is_active and tp in controller.ctx.partitions_being_reassigned:
        controller.zk.watch_partition_states([tp], controller.watches.for_handlers()["reassign_isr"])
        controller.run(reassignment.maybe_complete_reassignment(controller.ctx, tp))


def watch_reassigning_isr(controller: KafkaController) -> None:
    """Below IBP 2.7, ``onPartitionReassignment`` registers a data watch on each reassigning
    partition's state znode (leaders write ISR changes there themselves); from 2.7 the AlterIsr
    answer checks the reassignment instead. Called after every event."""
    if controller.is_active and not controller.alter_isr_enabled:
        new = controller.watches.not_yet_watched(controller.ctx.partitions_being_reassigned)
        if new:
            controller.zk.watch_partition_states(new, controller.watches.for_handlers()["reassign_isr"])


def on_replica_leader_election(controller: KafkaController, event: ev.ReplicaLeaderElection) -> None:
    if not controller.is_active:
        return
    partitions = event.partitions
    if partitions is None:
        partitions = controller.zk.get_preferred_replica_election(watch=controller.watches.for_handlers()["preferred"])
        if partitions is None:
            return
    controller.run(leader_balance.process_replica_leader_election(
        controller.ctx, partitions, event.election_type, event.trigger))


def on_auto_rebalance(controller: KafkaController, event) -> None:
    """Kafka's ``processAutoPreferredReplicaLeaderElection``: the next check is scheduled in a
    ``finally``, so an error in this one does not stop the checks (a resignation cancels it)."""
    if not controller.is_active:
        return
    try:
        controller.run(leader_balance.check_and_trigger_auto_leader_rebalance(controller.ctx))
    finally:
        if controller.is_active:
            controller.schedule_rebalance(controller.ctx.config["leader.imbalance.check.interval.seconds"])


def on_controlled_shutdown(controller: KafkaController, event: ev.ControlledShutdown) -> None:
    """Kafka's ``processControlledShutdown``: the work runs in a ``Try`` and every failure is
    the broker's answer. A broker that is not (or no longer) the controller, or whose write is
    fenced on the way, answers STALE_CONTROLLER_EPOCH (``ControllerMovedException``) — and a
    fenced write here does not make it resign: it learns of the move from its watch."""
    if not controller.is_active:
        _refuse_controlled_shutdown(controller, event, ControllerMovedException(
            "Controller moved to another broker. Aborting controlled shutdown"))
        return
    try:
        done = controller.run(controlled_shutdown.do_controlled_shutdown(controller.ctx, event.broker_id,
                                                                         event.broker_epoch),
                              resign_when_fenced=False)
    except KafkaException as exc:
        _refuse_controlled_shutdown(controller, event, exc)
        return
    if done is None:
        event.callback(error=STALE_CONTROLLER_EPOCH, message="ControllerMovedException: a write was fenced")
    else:
        event.callback(remaining=[str(tp) for tp in done.value])


def _refuse_controlled_shutdown(controller: KafkaController, event: ev.ControlledShutdown, exc: KafkaException) -> None:
    error = STALE_CONTROLLER_EPOCH if isinstance(exc, ControllerMovedException) else type(exc).__name__
    controller.emit([controller.note("controlled_shutdown_refused", f"{exc} — broker {event.broker_id} is answered "
                                                                    f"{error}.", outcome="error")])
    event.callback(error=error, message=str(exc))


def on_unclean_leader_election_enable(controller: KafkaController, event) -> None:
    if controller.is_active:
        controller.run(trigger_online_partition_state_change(controller.ctx))


def on_topic_unclean_leader_election_enable(controller: KafkaController,
                                            event: ev.TopicUncleanLeaderElectionEnable) -> None:
    if not controller.is_active:
        return
    configs = controller.zk.get_topic_configs([event.topic])
    controller.ctx = controller.ctx.evolve(topic_configs={**controller.ctx.topic_configs, **configs})
    controller.run(trigger_online_partition_state_change(controller.ctx, event.topic))


def logged_only(controller: KafkaController, event) -> None:
    """A response the request records already show (log-dir failures are not simulated)."""


HANDLERS: dict[str, Callable[[KafkaController, object], None]] = dispatch_table(ev.EVENTS, {
    "Startup": on_startup,
    "ControllerChange": on_controller_change,
    "Reelect": on_reelect,
    "RegisterBrokerAndReelect": on_register_broker_and_reelect,
    "Expire": on_expire,
    "BrokerChange": on_broker_change,
    "BrokerModifications": on_broker_modifications,
    "TopicChange": on_topic_change,
    "PartitionModifications": on_partition_modifications,
    "TopicDeletion": on_topic_deletion,
    "TopicDeletionStopReplicaResponseReceived": on_stop_replica_response,
    "ZkPartitionReassignment": on_zk_partition_reassignment,
    "IsrChangeNotification": on_isr_change_notification,
    "AlterIsrReceived": on_alter_isr,
    "PartitionReassignmentIsrChange": on_partition_reassignment_isr_change,
    "LeaderAndIsrResponseReceived": logged_only,
    "UpdateMetadataResponseReceived": logged_only,
    "ReplicaLeaderElection": on_replica_leader_election,
    "AutoPreferredReplicaLeaderElection": on_auto_rebalance,
    "ControlledShutdown": on_controlled_shutdown,
    "UncleanLeaderElectionEnable": on_unclean_leader_election_enable,
    "TopicUncleanLeaderElectionEnable": on_topic_unclean_leader_election_enable,
}, "controller events")
