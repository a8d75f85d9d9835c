"""The deployment files stay valid: compose file and the config it mounts."""

import shutil
import subprocess
from pathlib import Path

import pytest

from kit import simroute_executable

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.integration


def compose_command() -> list[str]:
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return ["docker", "compose"]


def test_compose_file_is_valid():
    out = subprocess.run([*compose_command(), "-f", str(ROOT / "docker-compose.yml"), "config"], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "simroute:local" in out.stdout


def test_deployed_config_is_valid():
    out = subprocess.run([simroute_executable(), "check-config", "--config", str(ROOT / "deploy" / "simroute.yaml")], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "1 server(s)" in out.stdout
