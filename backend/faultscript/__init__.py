"""The fault-script format: pure data, no ZooKeeper and no threads.

``vocabulary.py`` is the one table of operations that scripts, lessons, the browser and the
HTTP API share; ``loader.py`` reads a script (YAML, with every value's line) and checks it
completely before anything runs, naming file, line and reason for each problem; ``expect.py``
matches an ``expect`` step against a view of the live cluster. The runtime that carries the
steps out is ``backend.runtime.runner``.
"""
