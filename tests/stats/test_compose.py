"""docker-compose.yml stays valid and pinned. There is no Docker engine here: Debian's
``docker-compose`` (v1) validates the file without one (``config -q``); the rest is read as YAML."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = ROOT / "docker-compose.yml"


def test_docker_compose_config_accepts_the_file():
    tool = shutil.which("docker-compose")
    assert tool is not None, "docker-compose is not installed: make setup installs Debian's docker-compose"
    result = subprocess.run([tool, "-f", str(COMPOSE), "config", "-q"], cwd=ROOT, capture_output=True, text=True,
                            timeout=60)
    assert result.returncode == 0, result.stderr


def test_images_are_pinned_and_long_running_services_have_health_checks():
    services = yaml.safe_load(COMPOSE.read_text())["services"]
    assert {"zk1", "zk2", "zk3", "app", "spark-master", "spark-worker", "stats"} <= set(services)
    for name, service in services.items():
        image = service.get("image", "")
        assert image and ":" in image and not image.endswith(":latest"), f"{name}: unpinned image {image!r}"
        if name != "stats":
            assert "healthcheck" in service, f"{name} has no health check"
    assert [services[f"zk{i}"]["environment"]["ZOO_MY_ID"] for i in (1, 2, 3)] == ["1", "2", "3"]
    assert "srvr" in services["zk1"]["environment"]["ZOO_4LW_COMMANDS_WHITELIST"]
    assert "spark://spark-master:7077" in services["stats"]["command"]
    assert services["app"]["build"] == "." and (ROOT / "Dockerfile").exists()
