"""Shared fixtures: configs, and simroute launched the way a user launches it."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kit import free_port, sandboxes, simroute_executable, write_config
from router.launch import stop, wait_for_port


@pytest.fixture
def make_config(tmp_path: Path, request: pytest.FixtureRequest):
    """Writes a config; a test module's `CONFIG_DEFAULTS` sections apply unless overridden."""
    defaults = getattr(request.module, "CONFIG_DEFAULTS", {})

    def make(**sections) -> Path:
        return write_config(tmp_path, **{**defaults, **sections})

    return make


class HttpSimroute:
    def __init__(self, process: subprocess.Popen, url: str, log: Path) -> None:
        self.process, self.url, self.log = process, url, log


@pytest.fixture
def simroute_http(tmp_path: Path) -> Iterator:
    """Start `simroute mcp --http` on a free loopback port; stopped at teardown."""
    started: list[HttpSimroute] = []

    def start(config: Path) -> HttpSimroute:
        port = free_port()
        log = tmp_path / f"simroute-http-{port}.log"
        process = subprocess.Popen(
            [simroute_executable(), "mcp", "--config", str(config), "--http", f"127.0.0.1:{port}"],
            stdout=log.open("w"), stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        wait_for_port(port, process, describe=log.read_text)
        server = HttpSimroute(process, f"http://127.0.0.1:{port}/mcp", log)
        started.append(server)
        return server

    yield start
    for server in started:
        stop(server.process)


@pytest.fixture
def no_sandbox_left_behind() -> Iterator[None]:
    """Fails the test if a shell sandbox it started is still there after it."""
    before = {c.id for c in sandboxes()}
    yield
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and {c.id for c in sandboxes()} - before:
        time.sleep(0.2)
    assert not {c.id for c in sandboxes()} - before, "a sandbox container was left behind"
