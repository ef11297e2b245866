"""Several worker processes (``kclab serve --workers N``), or several machines, as one app.

Flask-SocketIO's documented scale-out: a message queue (Redis) through which an emit from any
worker reaches every client; any worker accepts any request, and a request for a sandbox or
class another worker holds is forwarded to it. With one worker none of this runs.

==================  ==============================================================================
``redis_server.py`` a real ``redis-server`` as a child process when ``--redis`` names none
``queue.py``        Flask-SocketIO's Redis manager, reading what the workers wrote with plain JSON
``workers.py``      heartbeats, who holds which sandbox and class, the cap counted across workers,
                    and a stopped worker's sandboxes told so
``forward.py``      request/answer over Redis with a deadline: a request run by its owner
``routes.py``       which requests and socket events go elsewhere, and what the owner runs for them
==================  ==============================================================================
"""
