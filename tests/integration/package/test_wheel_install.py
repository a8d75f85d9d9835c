"""simroute installed from its built wheel into a clean virtualenv, with no checkout
beside it: `simroute --help`, `simroute check-config` and `simroute mcp` in front of
a real MCP server (mcp-server-time) driven by a real MCP client."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[3]
WHEELHOUSE = Path(os.environ.get("SIMROUTE_CACHE", Path.home() / ".cache" / "simroute")) / "wheelhouse"


def _run(*command: str | Path, cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([str(part) for part in command], cwd=cwd, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, f"{command} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A clean virtualenv holding the built wheel and the runtime lock's dependencies;
    its bin folder."""
    work = tmp_path_factory.mktemp("wheel")
    uv = Path(sys.executable).parent / "uv"
    # Built from a copy: a setuptools build writes build/ and *.egg-info beside its sources.
    source = work / "source"
    shutil.copytree(
        REPO,
        source,
        ignore=shutil.ignore_patterns(
            ".*", "build", "site", "*.egg-info", "__pycache__", "tests", "benchmarks", "docs"
        ),
    )
    _run(uv, "build", "--python", sys.executable, "--wheel", "--out-dir", work / "dist", source, cwd=work)
    [wheel] = (work / "dist").glob("simroute-*.whl")
    _run(uv, "venv", "--python", sys.executable, work / "venv", cwd=work)
    python = work / "venv" / "bin" / "python"
    # The locked runtime set (requirements.lock), llama-cpp-python from the wheel the set-up built.
    links = [arg for path in WHEELHOUSE.glob("llama-cpp-python-*") for arg in ("--find-links", str(path))]
    _run(
        uv,
        "pip",
        "install",
        "--python",
        python,
        *links,
        "--only-binary",
        "llama-cpp-python",
        "-r",
        REPO / "requirements.lock",
        cwd=work,
    )
    _run(uv, "pip", "install", "--python", python, "--no-deps", wheel, cwd=work)
    return work / "venv" / "bin"


def test_the_wheel_imports_from_its_own_install_and_ships_the_dashboard(installed: Path, tmp_path: Path) -> None:
    probe = (
        "import router, simroute, importlib.resources as r; print(router.__file__); "
        "print(r.files('router.dashboard').joinpath('page.html').is_file())"
    )
    where, assets = _run(installed / "python", "-c", probe, cwd=tmp_path).stdout.split()
    assert Path(where).is_relative_to(installed.parent), f"imported from {where}, not the clean install"
    assert assets == "True"


def test_help_and_check_config_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    assert "serve" in _run(installed / "simroute", "--help", cwd=tmp_path).stdout
    config = _config(tmp_path)
    _run(installed / "simroute", "check-config", "--config", config, cwd=tmp_path)
    config.write_text(json.dumps({"mode": "nonsense"}))
    refused = subprocess.run(
        [installed / "simroute", "check-config", "--config", config], cwd=tmp_path, capture_output=True, text=True
    )
    assert refused.returncode != 0 and "mode" in refused.stdout + refused.stderr


async def test_mcp_from_the_wheel_in_front_of_a_real_server(installed: Path, tmp_path: Path) -> None:
    config = _config(tmp_path)
    transport = StdioTransport(
        command=str(installed / "simroute"), args=["mcp", "--config", str(config)], cwd=str(tmp_path), keep_alive=False
    )
    async with Client(transport) as client:
        tools = {tool.name for tool in await client.list_tools()}
        result = await client.call_tool("get_current_time", {"timezone": "Asia/Tokyo"})
    assert {"get_current_time", "convert_time"} <= tools
    assert result.structured_content["timezone"] == "Asia/Tokyo"
    assert result.meta["simroute"]["provenance"] == "real"


def _config(directory: Path) -> Path:
    """The real time server, run by this test's interpreter (where mcp-server-time is installed)."""
    time_server = {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}
    config = {
        "mcpServers": {"time": time_server},
        "store": {"path": str(directory / "records.db")},
        "shell": {"enabled": False},
        "browser": {"enabled": False},
        "http": {"ca_dir": str(directory / "ca")},
    }
    path = directory / "simroute.yaml"
    path.write_text(json.dumps(config))
    return path
