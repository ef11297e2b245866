"""docker-compose.yml: valid for the validators we can run, and holding the rules of a department
install that an engine would only reveal in front of a class (issue 17): images that exist by tag
and digest, one Spark version, a ZooKeeper ensemble sized for a class, admin ports on 127.0.0.1,
limits and log rotation everywhere, the settings from .env."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import yaml

from backend.core.config import SETTINGS
from tests.deploy.conftest import (ADMIN_ENV, COMPOSE, PINNED, ROOT, compose_tool, locked, pinned_dependency,
                                   pyproject)

SPARK_MASTER = "spark://spark-master:7077"
APP_SERVICES = {"app", "spark-master", "spark-worker", "stats", "redis"}
PUBLIC_PORTS = {"proxy": {"80:80", "443:443", "443:443/udp"}}
# The variables the zookeeper image's docker-entrypoint.sh (3.8.6) and zkServer.sh read: a typo
# here would be ignored silently and the ensemble would run on the image's defaults.
ZOOKEEPER_VARIABLES = {"ZOO_MY_ID", "ZOO_SERVERS", "ZOO_TICK_TIME", "ZOO_INIT_LIMIT", "ZOO_SYNC_LIMIT",
                       "ZOO_AUTOPURGE_PURGEINTERVAL", "ZOO_AUTOPURGE_SNAPRETAINCOUNT", "ZOO_MAX_CLIENT_CNXNS",
                       "ZOO_STANDALONE_ENABLED", "ZOO_ADMINSERVER_ENABLED", "ZOO_4LW_COMMANDS_WHITELIST",
                       "ZOO_CFG_EXTRA", "JVMFLAGS"}


def run_compose_config(env: dict[str, str], compose: Path = COMPOSE) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("KCLAB_")}
    return subprocess.run([compose_tool(), "-f", str(compose), "config", "-q"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60, env={**clean, **env})


def schema_check(compose: Path) -> subprocess.CompletedProcess:
    """check-jsonschema with the Compose Specification's schema, which that package ships."""
    return subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.compose-spec",
                           str(compose)], capture_output=True, text=True, timeout=60)


def lesson_session_timeouts() -> set[int]:
    """Every zookeeper.session.timeout.ms a lesson or script asks for, and the lab's default."""
    found = {SETTINGS["zookeeper.session.timeout.ms"].lab_default}
    for path in (ROOT / "lessons").rglob("*.yaml"):
        config = ((yaml.safe_load(path.read_text()) or {}).get("cluster") or {}).get("config") or {}
        if "zookeeper.session.timeout.ms" in config:
            found.add(int(config["zookeeper.session.timeout.ms"]))
    return found


# --- validators ---------------------------------------------------------------------------------
def test_docker_compose_accepts_the_file_with_an_admins_env():
    result = run_compose_config(ADMIN_ENV)
    assert result.returncode == 0, result.stderr


def test_docker_compose_refuses_to_start_without_the_token_or_the_public_name():
    for missing in ("KCLAB_INSTRUCTOR_TOKEN", "KCLAB_PUBLIC_HOST"):
        result = run_compose_config({k: v for k, v in ADMIN_ENV.items() if k != missing})
        assert result.returncode != 0 and f"set {missing} in .env" in result.stderr, (missing, result.stderr)


def test_the_compose_specification_schema_accepts_the_file_and_rejects_a_misspelt_key(tmp_path):
    assert schema_check(COMPOSE).returncode == 0, schema_check(COMPOSE).stdout
    broken = tmp_path / "docker-compose.yml"
    broken.write_text(COMPOSE.read_text().replace("    expose: [", "    expoze: [", 1))
    result = schema_check(broken)
    assert result.returncode != 0 and "expoze" in result.stdout, result.stdout


# --- images and versions ------------------------------------------------------------------------
def test_every_external_image_is_pinned_by_tag_and_digest(services):
    for name, service in services.items():
        image = service.get("image", "")
        if name in APP_SERVICES:
            continue
        assert PINNED.match(image), f"{name}: {image!r} is not TAG@sha256:DIGEST (run scripts/pin-images.sh)"
        assert ":latest@" not in image, f"{name}: a moving tag"


def test_the_app_image_is_versioned_and_every_service_that_runs_it_can_build_it(services):
    version = pyproject()["project"]["version"]
    for name in APP_SERVICES:
        assert services[name]["image"] == f"kclab:{version}", f"{name}: not the versioned app image"
        assert services[name]["build"] == ".", f"{name}: without `build` Compose v2 would try to pull kclab"


def test_one_spark_version_the_cluster_runs_the_drivers_pyspark(services):
    assert locked(ROOT / "requirements.lock")["pyspark"] == pinned_dependency("pyspark")
    assert services["spark-master"]["command"][:2] == ["spark-class", "org.apache.spark.deploy.master.Master"]
    assert services["spark-worker"]["command"][:2] == ["spark-class", "org.apache.spark.deploy.worker.Worker"]
    assert services["spark-worker"]["command"][-1] == SPARK_MASTER
    assert SPARK_MASTER in services["stats"]["command"]
    assert services["app"]["environment"]["KCLAB_SPARK_MASTER"] == SPARK_MASTER
    assert not [name for name, service in services.items() if "spark" in service.get("image", "").split(":")[0]]


def test_the_stats_driver_is_reached_by_address_not_by_a_name_that_run_containers_lack(services):
    stats = services["stats"]
    assert "hostname" not in stats and "profiles" in stats
    assert not [arg for arg in stats["command"] if "driver.host" in arg]


# --- ZooKeeper for a class ----------------------------------------------------------------------
def test_the_ensemble_is_configured_for_a_class(services):
    envs = [services[f"zk{i}"]["environment"] for i in (1, 2, 3)]
    assert [env["ZOO_MY_ID"] for env in envs] == ["1", "2", "3"]
    for env in envs:
        assert set(env) <= ZOOKEEPER_VARIABLES, set(env) - ZOOKEEPER_VARIABLES
        assert env["ZOO_MAX_CLIENT_CNXNS"] == "0", "every sandbox broker connects from the app's one address"
        assert int(env["ZOO_AUTOPURGE_PURGEINTERVAL"]) >= 1 and int(env["ZOO_AUTOPURGE_SNAPRETAINCOUNT"]) >= 3
        assert re.search(r"-Xmx\d+[mg]", env["JVMFLAGS"])
        assert {"ruok", "srvr"} <= set(env["ZOO_4LW_COMMANDS_WHITELIST"].split(","))  # the health check's words
        assert env["ZOO_SERVERS"].split() == [f"server.{i}=zk{i}:2888:3888;2181" for i in (1, 2, 3)]


def test_zookeeper_allows_every_session_timeout_the_lessons_ask_for(services):
    env = services["zk1"]["environment"]
    extra = dict(entry.split("=", 1) for entry in env["ZOO_CFG_EXTRA"].split())
    tick = int(env["ZOO_TICK_TIME"])
    low = int(extra.get("minSessionTimeout", 2 * tick))
    high = int(extra.get("maxSessionTimeout", 20 * tick))
    wanted = lesson_session_timeouts()
    assert {2000, 30000} <= wanted  # the fencing lessons' short sessions, the event-queue lessons' long ones
    assert low <= min(wanted) and max(wanted) <= high, (low, high, sorted(wanted))
    assert high >= 60_000, "students may ask for sessions up to 60 s, as on the embedded server"


# --- exposure, limits, logs, health -------------------------------------------------------------
def test_only_the_proxy_is_public_and_admin_ports_listen_on_this_host_only(services):
    assert "ports" not in services["app"], "the app is reached through the proxy only"
    for name, service in services.items():
        for port in service.get("ports", []):
            if port in PUBLIC_PORTS.get(name, set()):
                continue
            assert str(port).startswith("127.0.0.1:"), f"{name} publishes {port} on every interface"
    assert "127.0.0.1:8080:8080" in services["spark-master"]["ports"]  # the Spark UI has no authentication


def test_every_service_has_limits_rotated_logs_and_a_health_check(services):
    for name, service in services.items():
        limits = service.get("deploy", {}).get("resources", {}).get("limits", {})
        assert limits.get("memory") and limits.get("cpus"), f"{name} has no memory or CPU limit"
        assert service["logging"]["driver"] == "json-file" and service["logging"]["options"]["max-size"], name
        health = service.get("healthcheck")
        if name == "stats":
            assert health == {"disable": True}  # a one-shot job
        elif name != "app":  # the app's is the image's HEALTHCHECK (tests/deploy/test_dockerfile.py)
            assert health and health["test"], f"{name} has no health check"
    # and a heap under that limit wherever a runtime would size its own (ZooKeeper's in the next test)
    assert all(services[name]["environment"]["SPARK_DAEMON_MEMORY"] for name in ("spark-master", "spark-worker"))
    assert "--driver-memory" in services["stats"]["command"] and "--memory" in services["spark-worker"]["command"]
    assert services["proxy"]["environment"]["GOMEMLIMIT"]


def test_the_app_is_given_a_stable_token_and_its_public_address(services):
    env = services["app"]["environment"]
    assert env["KCLAB_INSTRUCTOR_TOKEN"].startswith("${KCLAB_INSTRUCTOR_TOKEN:?")
    assert env["KCLAB_PUBLIC_URL"].startswith("https://${KCLAB_PUBLIC_HOST:?")
    example = (ROOT / ".env.example").read_text()
    for variable in ("KCLAB_PUBLIC_HOST", "KCLAB_INSTRUCTOR_TOKEN", "KCLAB_TLS"):
        assert re.search(rf"^{variable}=", example, re.M), f".env.example does not set {variable}"
    assert "./deploy/Caddyfile:/etc/caddy/Caddyfile:ro" in services["proxy"]["volumes"]


def test_app_replicas_share_an_internal_redis_and_the_proxy_reaches_every_one(services):
    app, redis = services["app"], services["redis"]
    assert app["deploy"]["replicas"] == "${KCLAB_APP_REPLICAS:-2}"
    command = app["command"]
    assert command[command.index("--redis") + 1] == "redis://redis:6379/0"
    assert command[command.index("--trusted-proxies") + 1] == "1"  # Caddy's X-Forwarded-For names the student
    assert app["depends_on"]["redis"] == {"condition": "service_healthy"}
    assert "ports" not in redis and redis["expose"] == ["6379"]  # the compose network only
    assert redis["command"][0] == "redis-server" and "--save" in redis["command"]  # nothing kept on disk
    caddyfile = (ROOT / "deploy" / "Caddyfile").read_text()
    assert re.search(r"dynamic a \{\$KCLAB_UPSTREAM_HOST:app\} \{\$KCLAB_UPSTREAM_PORT:5000\}", caddyfile)
    assert "lb_policy least_conn" in caddyfile
    assert "redis-server" in (ROOT / "Dockerfile").read_text()
