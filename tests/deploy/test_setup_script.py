"""scripts/setup.sh on a laptop without admin rights (issue 17): it reads every Java version
right, says exactly what is missing and how to get it, and when a JRE is there ``make run`` runs.

"Without admin rights": the scripts run with a PATH that has no sudo, as the suite's own user
when that is not root, as ``nobody`` (setpriv) when it can run this checkout's .venv, else as
root with a fake ``id`` (see ``unprivileged``). Other stand-ins: a fake ``java`` for the
``java -version`` texts of other releases, a fake ``dpkg-query`` for "no Debian package".
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
import requests

from backend.zkserver.server import free_ports
from tests.deploy.conftest import ROOT, start, stop
from tests.support import wait_until

NOBODY = 65534
SYSTEM_DIRS = ("/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin")
COPIED = ("Makefile", "scripts", "pyproject.toml", "requirements.lock", "requirements-test.lock", "package.json",
          "package-lock.json", "README.md", "backend", "web", "static", "lessons", "docs")


def reachable_by_others(path: Path) -> bool:
    return all(os.stat(part).st_mode & 0o001 for part in [path, *path.parents])


def unprivileged(bin_dir: Path) -> list[str]:
    """The command prefix that runs a command without root.

    As root: the user ``nobody``, when it can run this checkout's .venv; otherwise (a venv on an
    interpreter under /root, as on CI) a fake ``id`` in ``bin_dir`` that answers a user's uid --
    the only thing the script asks -- while the PATH still has no sudo."""
    if os.geteuid() != 0:
        return []
    if reachable_by_others(ROOT) and reachable_by_others(Path(os.path.realpath(ROOT / ".venv" / "bin" / "python"))):
        return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--"]
    write_tool(bin_dir, "id", 'case "$1" in -u) echo 1000 ;; -un) echo student ;; *) exec /usr/bin/id "$@" ;; esac')
    return []


@pytest.fixture
def open_tmp(tmp_path):
    """A temporary directory that ``nobody`` can reach (pytest's own are private to their user)."""
    directory = Path(tempfile.mkdtemp(prefix="kclab-noroot-"))
    directory.chmod(0o755)
    if os.geteuid() == 0:
        os.chown(directory, NOBODY, NOBODY)
    yield directory
    shutil.rmtree(directory, ignore_errors=True)


def write_tool(directory: Path, name: str, body: str) -> None:
    tool = directory / name
    tool.write_text(f"#!/bin/sh\n{body}\n")
    tool.chmod(0o755)


def path_without(directory: Path, *left_out: str) -> str:
    """A PATH of ``directory`` plus links to every system command except ``left_out``."""
    directory.mkdir(parents=True, exist_ok=True)
    for system_dir in SYSTEM_DIRS:
        for command in Path(system_dir).iterdir() if Path(system_dir).is_dir() else ():
            link = directory / command.name
            if command.name not in left_out and not link.exists() and not link.is_symlink():
                link.symlink_to(command)
    directory.chmod(0o755)
    return str(directory)


def fake_java(directory: Path, version_text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    write_tool(directory, "java", f"cat >&2 <<'EOF'\n{version_text}\nEOF")
    return directory


def setup_env(path: str, home: Path, **extra: str) -> dict[str, str]:
    env = {"PATH": path, "HOME": str(home), "LANG": "C.UTF-8"}
    env.update(extra)
    return env


def java_major(tmp_path: Path, version_text: str, java_home: Path | None = None) -> str:
    bin_dir = fake_java(tmp_path / "fake", version_text)
    env = setup_env(f"{bin_dir}:/usr/bin:/bin", tmp_path, **({"JAVA_HOME": str(java_home)} if java_home else {}))
    result = subprocess.run(["bash", "-c", "source scripts/setup.sh && java_major"], cwd=ROOT, env=env,
                            capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


@pytest.mark.parametrize("version_text, major", [
    ('java version "1.8.0_392"\nJava(TM) SE Runtime Environment (build 1.8.0_392-b08)', "8"),
    ('openjdk version "11.0.22" 2024-01-16', "11"),
    ('openjdk version "17.0.15" 2025-04-15\nOpenJDK Runtime Environment (build 17.0.15+6-Debian-1deb12u1)', "17"),
    ('openjdk version "21" 2023-09-19', "21"),
    ('Picked up JAVA_TOOL_OPTIONS: -Dfile.encoding=UTF-8\nopenjdk version "21.0.4" 2024-07-16 LTS', "21"),
    ('openjdk version "25-ea" 2025-09-16', "25"),
])
def test_every_java_version_text_is_read_as_its_major_version(tmp_path, version_text, major):
    assert java_major(tmp_path, version_text) == major


def test_java_home_comes_before_the_java_on_path(tmp_path):
    home = tmp_path / "jdk-21"
    fake_java(home / "bin", 'openjdk version "21.0.4" 2024-07-16')
    assert java_major(tmp_path, 'java version "1.8.0_392"', java_home=home) == "21"


@pytest.mark.parametrize("java, found", [(None, "no java on PATH, JAVA_HOME unset"),
                                         ('java version "1.8.0_392"', "found Java 8 at ")])
def test_without_root_a_missing_java_is_named_with_the_way_to_get_it(open_tmp, java, found):
    path = path_without(open_tmp / "bin", "sudo", "java")
    if java:
        fake_java(open_tmp / "bin", java)
    result = subprocess.run([*unprivileged(open_tmp / "bin"), "bash", "scripts/setup.sh", "run"], cwd=ROOT,
                            env=setup_env(path, open_tmp), capture_output=True, text=True, timeout=60)
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    assert "not root, and sudo is missing" in result.stderr
    assert f"a Java runtime 17 or newer ({found}" in result.stderr
    assert "JAVA_HOME=$HOME/" in result.stderr and "make run" in result.stderr
    assert "sudo apt-get install --no-install-recommends openjdk-" in result.stderr
    assert "chromium" not in result.stderr, "running needs no browser"


def test_without_root_and_without_debian_packages_the_run_set_up_goes_on_with_notes(open_tmp):
    bin_dir = open_tmp / "bin"
    bin_dir.mkdir()
    write_tool(bin_dir, "dpkg-query", "exit 1")  # as on a laptop without zookeeper and redis-server
    prefix = unprivileged(bin_dir)
    path = path_without(bin_dir, "sudo")
    result = subprocess.run([*prefix, "bash", "scripts/setup.sh", "run"], cwd=ROOT,
                            env=setup_env(path, open_tmp), capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, (result.stdout, result.stderr)
    assert ("zookeeper is not installed (Debian's ZooKeeper server jars): the app uses the ZooKeeper jars inside "
            "the pyspark package") in result.stderr
    assert "redis-server is not installed (the message queue of several app workers): the app runs one worker" \
           in result.stderr
    assert "setup OK for run" in result.stdout and "no redis-server (one app worker)" in result.stdout


def test_make_run_without_root_serves_the_app(open_tmp):
    """A copy of the checkout that ``nobody`` owns, sharing this checkout's installed packages."""
    copy_without_root = open_tmp / "kclab"
    copy_without_root.mkdir()
    for name in COPIED:
        subprocess.run(["cp", "-a", str(ROOT / name), str(copy_without_root / name)], check=True)
    (copy_without_root / ".venv").symlink_to(ROOT / ".venv")
    (copy_without_root / "node_modules").symlink_to(ROOT / "node_modules")
    if os.geteuid() == 0:
        subprocess.run(["chown", "-R", f"{NOBODY}:{NOBODY}", str(copy_without_root)], check=True)
    port = free_ports(1)[0]
    (open_tmp / "bin").mkdir()
    prefix = unprivileged(open_tmp / "bin")
    path = path_without(open_tmp / "bin", "sudo")
    proc, output = start([*prefix, "make", "run", f"ARGS=--port {port}"], setup_env(path, copy_without_root),
                         copy_without_root, inherit=False)
    try:
        output.wait_for(r"setup OK for run", 120, proc)
        output.wait_for(rf"serving at http://127\.0\.0\.1:{port}/", 60, proc)
        health = wait_until(lambda: requests.get(f"http://127.0.0.1:{port}/healthz", timeout=5), 30,
                            "the app to answer", retry_on=(requests.ConnectionError,))
        assert health.status_code == 200
    finally:
        stop(proc)
    assert "chromium" not in output.text().lower()
