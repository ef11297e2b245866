"""Find the jars of a ZooKeeper server on this machine.

The lab never downloads ZooKeeper itself: the server comes from one of three places, tried in
this order by default:

1. ``ZOOKEEPER_HOME`` -- an unpacked Apache release (``lib/*.jar`` and, in old releases, a
   ``zookeeper-*.jar`` at its root), for people who already have one;
2. Debian's ``zookeeper`` package -- ``/usr/share/java/zookeeper.jar``, which
   ``scripts/setup.sh`` installs. Its manifest ``Class-Path`` names most dependencies, but not the
   logging binding, nor the netty pieces that the Netty connection factory needs (without
   ``netty-codec`` clients of such a server time out after minutes, see environment notes);
3. the ZooKeeper 3.9 jars bundled in the ``pyspark`` wheel, a pinned dependency, so a machine
   without apt still has a working server.

The result is a plain value (classpath string, where it came from, ZooKeeper version), so the
launcher and the ``kclab zk`` banner can say which server a student is talking to.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import re
import zipfile
from pathlib import Path
from typing import NamedTuple, Sequence

log = logging.getLogger(__name__)

SOURCES = ("home", "debian", "pyspark")
DEBIAN_JAVA_DIR = "/usr/share/java"
# zookeeper.jar's manifest Class-Path covers the rest; these it leaves out.
DEBIAN_EXTRA_JARS = (
    "servlet-api.jar",  # only for the AdminServer, harmless otherwise
    "slf4j-log4j12.jar",  # without a binding ZooKeeper logs nothing at all
    "log4j-1.2.jar",
    "netty-codec.jar",
    "netty-resolver.jar",
    "netty-transport-native-unix-common.jar",
)
_JAR_VERSION = re.compile(r"^zookeeper-(\d+\.\d+\.\d+)\.jar$")


class ZooKeeperNotFound(RuntimeError):
    """No ZooKeeper server jars in any of the places we look."""


class ZooKeeperClasspath(NamedTuple):
    classpath: str
    source: str
    version: str


def find_zookeeper_classpath(
    order: Sequence[str] = SOURCES,
    *,
    zookeeper_home: str | None = None,
    debian_java_dir: str = DEBIAN_JAVA_DIR,
    pyspark_dir: str | None = None,
) -> ZooKeeperClasspath:
    """Return the first usable ZooKeeper classpath among ``order``.

    ``order`` may name a subset of ``SOURCES`` (tests force ``("pyspark",)``). The keyword
    arguments replace the usual locations; ``None`` means: ``$ZOOKEEPER_HOME`` and the installed
    ``pyspark`` package respectively.
    """
    unknown = [name for name in order if name not in SOURCES]
    if unknown:
        raise ValueError(f"unknown ZooKeeper jar source(s) {unknown}; choose from {SOURCES}")
    if zookeeper_home is None:
        zookeeper_home = os.environ.get("ZOOKEEPER_HOME", "")
    finders = {
        "home": lambda: _from_home(zookeeper_home),
        "debian": lambda: _from_debian(Path(debian_java_dir)),
        "pyspark": lambda: _from_pyspark(pyspark_dir),
    }
    reasons = []
    for name in order:
        found, reason = finders[name]()
        if found:
            return found
        reasons.append(reason)
        if name == "home" and zookeeper_home:
            log.warning("ignoring ZOOKEEPER_HOME: %s", reason)
    raise ZooKeeperNotFound(
        "No ZooKeeper server jars found. Looked in:\n  - "
        + "\n  - ".join(reasons)
        + "\nRun `make setup` (installs Debian's zookeeper package and pyspark), "
        "or set ZOOKEEPER_HOME to an unpacked Apache ZooKeeper release."
    )


def _from_home(home: str):
    where = "$ZOOKEEPER_HOME/lib/*.jar and $ZOOKEEPER_HOME/zookeeper-*.jar"
    if not home:
        return None, where + " -- ZOOKEEPER_HOME is not set"
    root = Path(home)
    where += f" (ZOOKEEPER_HOME={home})"
    jars = sorted(root.glob("lib/*.jar")) + sorted(root.glob("zookeeper-*.jar"))
    server = [j for j in jars if _JAR_VERSION.match(j.name)]
    if not server:
        return None, where + " -- no zookeeper-X.Y.Z.jar there"
    version = _jar_version(server[0])
    return ZooKeeperClasspath(_join(jars), f"ZOOKEEPER_HOME {root}", version), where


def _from_debian(java_dir: Path):
    main = java_dir / "zookeeper.jar"
    where = f"Debian package 'zookeeper': {main}"
    if not main.is_file():
        return None, where + " -- missing (apt-get install zookeeper)"
    extras = [java_dir / name for name in DEBIAN_EXTRA_JARS if (java_dir / name).is_file()]
    found = ZooKeeperClasspath(_join([main, *extras]), f"Debian package ({main})", _jar_version(main))
    return found, where


def _from_pyspark(pyspark_dir: str | None):
    where = "pyspark package: pyspark/jars/zookeeper-*.jar"
    root = Path(pyspark_dir) if pyspark_dir else _pyspark_location()
    if root is None:
        return None, where + " -- pyspark is not installed"
    jars_dir = root / "jars"
    server = sorted(j for j in jars_dir.glob("zookeeper-*.jar") if _JAR_VERSION.match(j.name))
    if not server:
        return None, f"{where} -- none in {jars_dir}"
    # Java expands the wildcard itself; ZooKeeper needs only a few of the ~280 jars, and the
    # JVM opens the others lazily, so listing them all costs little.
    found = ZooKeeperClasspath(str(jars_dir / "*"), f"pyspark package ({jars_dir})", _jar_version(server[0]))
    return found, where


def _pyspark_location() -> Path | None:
    """Locate pyspark without importing it (importing pyspark takes ~0.1 s and drags in py4j)."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _jar_version(jar: Path) -> str:
    """ZooKeeper's version from the jar's Maven metadata, else from its file name."""
    try:
        with zipfile.ZipFile(jar) as zf:
            props = zf.read("META-INF/maven/org.apache.zookeeper/zookeeper/pom.properties")
        for line in props.decode("utf-8", "replace").splitlines():
            if line.startswith("version="):
                return line.split("=", 1)[1].strip()
    except (OSError, KeyError, zipfile.BadZipFile):
        pass
    match = _JAR_VERSION.match(jar.name)
    return match.group(1) if match else "unknown"


def _join(jars) -> str:
    return os.pathsep.join(str(j) for j in jars)
