"""The deployment files stay valid: compose file and the config it mounts."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from kit.launch import simroute_executable

ROOT = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.integration


def compose_command() -> list[str]:
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return ["docker", "compose"]


def test_compose_file_is_valid_and_needs_a_token():
    env = {k: v for k, v in os.environ.items() if k != "SIMROUTE_TOKEN"}
    out = subprocess.run(
        [*compose_command(), "-f", str(ROOT / "docker-compose.yml"), "config"], capture_output=True, text=True, timeout=60, env=env
    )
    assert out.returncode != 0 and "SIMROUTE_TOKEN" in out.stderr  # no deployment without a token
    env["SIMROUTE_TOKEN"] = "compose-test-token-0123456789"
    out = subprocess.run(
        [*compose_command(), "-f", str(ROOT / "docker-compose.yml"), "config"], capture_output=True, text=True, timeout=60, env=env
    )
    assert out.returncode == 0, out.stderr
    assert "simroute:local" in out.stdout and "compose-test-token-0123456789" in out.stdout
    import yaml

    services = yaml.safe_load(out.stdout)["services"]
    assert {"redis", "world-model", "router-a", "router-b", "worker"} <= set(services)  # replicas on one Redis, a worker
    assert services["worker"]["command"][:1] == ["worker"]


def test_deployed_config_is_valid():
    out = subprocess.run(
        [simroute_executable(), "check-config", "--config", str(ROOT / "deploy" / "simroute.yaml")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert "1 server(s)" in out.stdout and "store redis://redis:6379/0" in out.stdout
