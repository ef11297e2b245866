"""The one SparkSession of a process.

A SparkSession costs about 4 s and most of a gigabyte (environment notes §5), and a JVM can
hold only one SparkContext, so a process — the CLI, the web app, the test session — creates it
once, on first use, and keeps it. The web app never creates one per request: its background job
thread calls :func:`spark_session` and gets the same session every time.

Settings (environment notes §5): ``SPARK_LOCAL_IP=127.0.0.1`` in local mode only (with a real
master the executors must be able to reach the driver), ``PYSPARK_PYTHON`` = this interpreter,
four shuffle partitions (the default 200 wastes seconds on small inputs), no UI, no console
progress bar (we print our own from the StatusTracker), UTC so a session's date does not depend
on the machine's time zone. Adaptive query execution is off: the job is many small queries over
small event tables, where AQE's re-planning after every stage cost more than it saved (the same
run over 76 sessions took 24–28 s warm with it, 14–15 s without; docs/performance.md).

A setting one read needs (``one_split_per_file``: no log split between tasks) is set for that read
only, on the same session, and restored after it.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from contextlib import contextmanager

DEFAULT_MASTER = "local[2]"

LOCAL_JAVA_OPTIONS = ("-XX:+UseParallelGC -XX:Tier4InvocationThreshold=100000 -XX:Tier4MinInvocationThreshold=50000 "
                      "-XX:Tier4CompileThreshold=120000")
"""The local-mode JVM's garbage collector and JIT (issue 16). A cold ``kclab stats`` over 1M
records spent 30 % of its CPU in the JVM's C2 compiler, compiling hundreds of methods that ran
a few thousand times (the plans' generated code, Spark's setup) — more than its tasks used. C2
now waits for ten times the calls Java's defaults ask; the code a task runs millions of times
is still compiled early in the run. The parallel collector (throughput first, no concurrent
marking) costs the tasks less than G1's write barriers: together 80-87 -> 68 CPU-s and 48-52 ->
43 s for the cold 1M run (docs/performance.md, issue 16, seventh round)."""

_lock = threading.Lock()
_session = None


def configured_master() -> str:
    """The master a run uses unless told otherwise: ``KCLAB_SPARK_MASTER`` (docker-compose sets
    it to the compose file's Spark cluster), else local mode."""
    return os.environ.get("KCLAB_SPARK_MASTER") or DEFAULT_MASTER


def is_local(master: str) -> bool:
    return master == "local" or master.startswith("local[")


def spark_session(master: str | None = DEFAULT_MASTER, driver_memory: str | None = None, app_name: str = "kclab-stats"):
    """The process's SparkSession, created on the first call.

    ``master=None`` leaves the master to ``spark-submit`` (its ``--master``) or Spark's default.
    Later calls return the existing session whatever they ask for: a JVM has one context, and
    changing the master of a running one is not possible."""
    global _session
    with _lock:
        if _session is not None and _session.sparkContext._jsc is not None:
            return _session
        from pyspark.sql import SparkSession

        if master is not None and is_local(master):
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = (SparkSession.builder.appName(app_name)
                   .config("spark.sql.shuffle.partitions", "4")
                   .config("spark.ui.enabled", "false")
                   .config("spark.ui.showConsoleProgress", "false")
                   .config("spark.sql.session.timeZone", "UTC")
                   .config("spark.sql.adaptive.enabled", "false")
                   # The ingest names the files it reads; list them in the driver, not in a
                   # Spark job of one task per file.
                   .config("spark.sql.sources.parallelPartitionDiscovery.threshold", "1000000")
                   # A replay log is small (tens of KB): Spark's default 4 MB "cost of opening a
                   # file" would make a task of every 30 logs.
                   .config("spark.sql.files.openCostInBytes", str(64 * 1024))
                   # One run compiles a few hundred query stages; with the default 100 the cache
                   # of generated code is emptied within a run, and every dashboard Run compiled
                   # (and the JIT optimised) them all again: 12-13 CPU-s instead of 17 for 1M.
                   .config("spark.sql.codegen.cache.maxEntries", "4000"))
        if master:
            builder = builder.master(master)
        if driver_memory:
            builder = builder.config("spark.driver.memory", driver_memory)  # only before the JVM starts
        if master is not None and is_local(master):
            builder = builder.config("spark.driver.extraJavaOptions", LOCAL_JAVA_OPTIONS)  # likewise
        _session = builder.getOrCreate()
        _session.sparkContext.setLogLevel("ERROR")
        return _session


def existing_session():
    """The session if one was created (by us or by a caller such as a test fixture), else None."""
    with _lock:
        if _session is not None and _session.sparkContext._jsc is not None:
            return _session
    from pyspark.sql import SparkSession
    return SparkSession.getActiveSession()



class LazySpark:
    """The job's SparkSession, created when a step first needs it (issue 16).

    Since the aggregation runs in the driver with Arrow, only parsing new or grown logs (and a
    compaction that merges batches) runs Spark: a run with nothing new needs no JVM, whose start
    cost 5-10 s of a ~1 s run. Calling the object returns the session, starting it the first
    time (``seconds`` is what that took); ``on_start`` callbacks learn of it (the progress bar
    then follows its stages). Given a ``spark`` (the dashboard's warm session), it is used as is."""

    def __init__(self, spark=None, master: str | None = DEFAULT_MASTER, driver_memory: str | None = None) -> None:
        self._spark = spark
        self.master = master
        self._driver_memory = driver_memory
        self.seconds = 0.0
        self._listeners = []

    @property
    def started(self) -> bool:
        return self._spark is not None

    def __call__(self):
        if self._spark is None:
            t = time.monotonic()
            self._spark = spark_session(self.master, driver_memory=self._driver_memory)
            self.seconds = time.monotonic() - t
            for listener in self._listeners:
                listener(self._spark)
        return self._spark

    def on_start(self, listener) -> None:
        """Call ``listener(session)`` when the session starts (at once if it has)."""
        self._listeners.append(listener)
        if self._spark is not None:
            listener(self._spark)


@contextmanager
def one_split_per_file(spark, sizes: list[int]):
    """Within the block, Spark reads each of files of these ``sizes`` whole in one task.

    Spark splits a file larger than ``min(maxPartitionBytes, max(openCostInBytes, bytes per
    core))``, the bytes per core being the files' bytes (each plus the open cost) over
    ``minPartitionNum`` (by default the parallelism): a day's logs of a few MB each are not split,
    but a batch of one 5 MB log on two cores is, in two. Both settings are raised, for this
    read only, just enough that the largest file fits; a batch of many logs keeps Spark's
    defaults (and its parallelism: the tasks are still many files each)."""
    conf = spark.conf
    largest = max(sizes, default=0)
    open_cost = _bytes(conf.get("spark.sql.files.openCostInBytes"))
    total = sum(size + open_cost for size in sizes)
    parallelism = spark.sparkContext.defaultParallelism
    settings = {"spark.sql.files.maxPartitionBytes": str(max(largest, _bytes(conf.get("spark.sql.files.maxPartitionBytes")))),
                "spark.sql.files.minPartitionNum": str(max(1, min(parallelism, total // max(largest, 1))))}
    before = {key: conf.get(key, None) for key in settings}
    for key, value in settings.items():
        conf.set(key, value)
    try:
        yield
    finally:
        for key, value in before.items():
            conf.unset(key) if value is None else conf.set(key, value)


def _bytes(text: str) -> int:
    """A Spark size setting ("128MB", "134217728b", "134217728") in bytes."""
    units = {"b": 1, "k": 2**10, "kb": 2**10, "m": 2**20, "mb": 2**20, "g": 2**30, "gb": 2**30}
    text = text.strip().lower()
    number = text.rstrip("kmgb")
    return int(number) * units.get(text[len(number):], 1)
