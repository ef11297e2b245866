"""The controller module every broker runs: Kafka's ``kafka.controller`` runtime side.

===========================  ==========================================================================
``controller.py``            :class:`controller.KafkaController`: competes for ``/controller``, runs the
                             core's programs against ZooKeeper and the brokers, resigns
``handlers.py``              :data:`handlers.HANDLERS`: what the controller thread does with each event
``event_manager.py``         ``ControllerEventManager``: one queue, one thread (§4.1)
``channel_manager.py``       ``ControllerChannelManager``: the controller's requests to the brokers
``armed_watches.py``         the watches an active controller holds, re-armed after a lost connection
``metrics.py``               ``ControllerStats``: what the controller measures, as records
===========================  ==========================================================================

The controller owns its event manager, channel manager and watches; from its broker it gets
only narrow interfaces (``backend.runtime.peers``, ``backend.runtime.stage``).
"""
