"""What the deployment tests share: the files they read, and the settings an admin's ``.env`` gives.

There is no Docker engine here. The compose file and the Dockerfile are checked by the validators
a registry gives us and read for the rules of a department install; the parts that can run here
do run: deploy/Caddyfile with Debian's caddy, scripts/setup.sh as a user without root.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml

from tests.support import LineReader

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"
DOCKERFILE = ROOT / "Dockerfile"
# What an admin's .env holds (.env.example, filled in): `docker compose` refuses to start without it.
ADMIN_ENV = {"KCLAB_PUBLIC_HOST": "lab.example.edu", "KCLAB_INSTRUCTOR_TOKEN": "a-token-of-twenty-four-ch",
             "KCLAB_TLS": "internal"}
PINNED = re.compile(r"^[a-z0-9][a-z0-9./_-]*:[A-Za-z0-9._-]+@sha256:[0-9a-f]{64}$")


def compose_tool() -> str:
    """Debian 12's docker-compose 1.29 command, or the v2 plugin of newer releases (standalone)."""
    tool = shutil.which("docker-compose") or shutil.which("docker-compose",
                                                           path="/usr/libexec/docker/cli-plugins")
    assert tool, "docker-compose is not installed: make setup installs Debian's docker-compose"
    return tool


def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def pinned_dependency(name: str) -> str:
    """The exact version pyproject.toml pins ``name`` to."""
    for requirement in pyproject()["project"]["dependencies"]:
        found = re.match(rf"^{re.escape(name)}==([^\s;]+)$", requirement.strip())
        if found:
            return found.group(1)
    raise AssertionError(f"pyproject.toml does not pin {name} with ==")


def locked(lock: Path) -> dict[str, str]:
    """``{package: version}`` of a lock file written by ``make lock``."""
    return {name.lower(): version
            for name, version in re.findall(r"^([A-Za-z0-9._-]+)==([^\s;\\]+)", lock.read_text(), re.M)}


@pytest.fixture(scope="module")
def services() -> dict:
    return yaml.safe_load(COMPOSE.read_text())["services"]


def start(command: list[str], env: dict[str, str], cwd: Path, *, inherit: bool = True):
    """A child in its own process group (it may start more: make, gunicorn, a JVM) and its output."""
    proc = subprocess.Popen(command, cwd=cwd, env={**os.environ, **env} if inherit else env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    return proc, LineReader(proc.stdout)


def stop(proc: subprocess.Popen) -> None:
    """Stop the child's whole process group: politely, then for sure."""
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
