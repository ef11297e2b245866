"""The outermost shell: the Flask/Socket.IO app, its HTTP API and the ``kclab`` command line."""
