"""The Dockerfile builds an image as images are built (issue 17): a base that exists, by tag and
digest, whose Debian release has the Java package it installs; hash-locked dependencies installed
before the code is copied; the code read-only for a non-root user; a health check.

Debian's package lists of other releases cannot be queried here, so the table below says which
JRE packages each release has (packages.debian.org); the test of this machine's own release
checks that row against apt itself.
"""

from __future__ import annotations

import re
import subprocess

from tests.deploy.conftest import DOCKERFILE, PINNED, ROOT, locked, pyproject

JAVA_RUNTIMES = {  # release codename -> the headless JRE packages of Java 17+ it has
    "bookworm": {"openjdk-17-jre-headless"},                            # Debian 12
    "trixie": {"openjdk-21-jre-headless", "openjdk-25-jre-headless"},   # Debian 13: no 17
}
SPARK_JAVA = {17, 21}  # the Java versions Spark 4 runs on
CODE_DIRS = ("backend", "web", "static", "lessons", "docs")


def instructions() -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` in order, continuation lines joined, comments dropped."""
    text = re.sub(r"\\\n", " ", "\n".join(line for line in DOCKERFILE.read_text().splitlines()
                                         if not line.lstrip().startswith("#")))
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line.strip() else "")
            for line in text.splitlines() if line.strip()]


def arg_default(name: str) -> str:
    for op, rest in instructions():
        if op == "ARG" and rest.startswith(f"{name}="):
            return rest.split("=", 1)[1].strip()
    raise AssertionError(f"the Dockerfile has no ARG {name}=default")


def release_of(image: str) -> str:
    found = re.search(r"-(bookworm|trixie|[a-z]+)@", image)
    assert found and found.group(1) in JAVA_RUNTIMES, f"{image}: the tag must name a known Debian release"
    return found.group(1)


def test_the_base_image_is_pinned_and_names_its_debian_release():
    image = arg_default("PYTHON_IMAGE")
    assert PINNED.match(image), f"{image} is not TAG@sha256:DIGEST (run scripts/pin-images.sh)"
    assert image.startswith("python:3.11."), "the Python the project is tested on (pyproject: >=3.11)"
    release_of(image)
    assert [rest for op, rest in instructions() if op == "FROM"] == ["${PYTHON_IMAGE} AS web-libs", "${PYTHON_IMAGE}"]


def test_the_java_package_exists_in_the_base_images_release_and_runs_spark():
    package = arg_default("JAVA_PACKAGE")
    assert package in JAVA_RUNTIMES[release_of(arg_default("PYTHON_IMAGE"))]
    assert int(re.search(r"openjdk-(\d+)-", package).group(1)) in SPARK_JAVA


def test_the_release_table_agrees_with_apt_on_this_machine():
    codename = dict(line.split("=", 1) for line in open("/etc/os-release").read().splitlines()
                    if "=" in line)["VERSION_CODENAME"].strip('"')
    assert codename in JAVA_RUNTIMES, f"this machine's release {codename} is not in the table"
    for package in {f"openjdk-{n}-jre-headless" for n in (17, 21, 25)}:
        policy = subprocess.run(["apt-cache", "policy", package], capture_output=True, text=True).stdout
        has = bool(re.search(r"Candidate: (?!\(none\))\S", policy))
        assert has == (package in JAVA_RUNTIMES[codename]), (codename, package, policy)


def test_dependencies_are_hash_locked_and_installed_before_the_code_is_copied():
    steps = instructions()
    install = next(i for i, (op, rest) in enumerate(steps) if op == "RUN" and "-r /tmp/requirements.lock" in rest)
    assert "--require-hashes" in steps[install][1]
    copies = [i for i, (op, rest) in enumerate(steps) if op == "COPY" and rest.split()[0] in CODE_DIRS]
    assert len(copies) == len(CODE_DIRS) and min(copies) > install, "every code edit would rebuild pyspark"
    lock = (ROOT / "requirements.lock").read_text()
    for block in re.split(r"\n(?=[A-Za-z0-9])", lock.split("\n", 2)[2]):
        assert "--hash=sha256:" in block, f"no hash for {block.splitlines()[0]}"
    for requirement in pyproject()["project"]["dependencies"]:
        name, version = re.match(r"^([A-Za-z0-9._-]+)(?:\[[^]]*\])?==([^\s;]+)", requirement).groups()
        assert locked(ROOT / "requirements.lock").get(name.lower()) == version, f"{name} is not locked at {version}"


def test_the_test_lock_agrees_with_the_run_lock():
    run, test = locked(ROOT / "requirements.lock"), locked(ROOT / "requirements-test.lock")
    assert {name: test.get(name) for name in run} == run


def test_the_code_is_read_only_for_a_non_root_user_and_health_is_checked():
    steps = instructions()
    users = [(i, rest) for i, (op, rest) in enumerate(steps) if op == "USER"]
    assert users and users[-1][1] not in ("root", "0") and users[-1][0] > max(
        i for i, (op, _) in enumerate(steps) if op == "COPY"), "the runtime user must come after the last COPY"
    assert not [rest for op, rest in steps if op == "COPY" and "--chown" in rest]
    assert not [rest for op, rest in steps if op == "RUN" and re.search(r"ch(own|mod)\b.*\s/app\b", rest)]
    health = [rest for op, rest in steps if op == "HEALTHCHECK"]
    assert health and "/healthz" in health[0]


def test_secrets_stay_out_of_the_build_context():
    ignored = (ROOT / ".dockerignore").read_text().splitlines()
    assert {".env", "certs", ".git", ".venv"} <= set(ignored) and "!.env.example" in ignored
