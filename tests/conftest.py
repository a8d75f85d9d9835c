"""Shared fixtures: configs, and simroute launched the way a user launches it. The
kit's plugin (tests/kit/fixtures.py) adds the HTTP upstreams and the Redis server."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kit.launch import free_port, simroute_executable, write_config
from kit.sandboxes import RouterWatch

from router.cli.launch import stop, wait_for_port

# The HTTP upstreams and the Redis server many modules use.
pytest_plugins = ["kit.fixtures"]


@pytest.fixture
def make_config(tmp_path: Path, request: pytest.FixtureRequest):
    """Writes a config; a test module's `CONFIG_DEFAULTS` sections apply unless overridden."""
    defaults = getattr(request.module, "CONFIG_DEFAULTS", {})

    def make(**sections) -> Path:
        return write_config(tmp_path, **{**defaults, **sections})

    return make


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator:
    """Start `simroute http-proxy`s, each with its own records (`start(env=…, **sections)`);
    each must stop cleanly at teardown."""
    from kit.http import http_config, start_proxy

    started = []

    def start(env: dict | None = None, **sections):
        directory = tmp_path / f"proxy-{len(started)}"
        directory.mkdir()
        process = start_proxy(http_config(directory, **sections), env=env)
        started.append(process)
        return process

    yield start
    for process in started:
        if process.process.poll() is None:
            assert process.stop() == 0, process.log.read_text()


class HttpSimroute:
    def __init__(self, process: subprocess.Popen, url: str, log: Path) -> None:
        self.process, self.url, self.log = process, url, log


@pytest.fixture
def simroute_http(tmp_path: Path) -> Iterator:
    """Start `simroute mcp --http` on a free loopback port; stopped at teardown."""
    started: list[HttpSimroute] = []

    def start(config: Path, *, env: dict | None = None) -> HttpSimroute:
        port = free_port()
        log = tmp_path / f"simroute-http-{port}.log"
        process = subprocess.Popen(
            [simroute_executable(), "mcp", "--config", str(config), "--http", f"127.0.0.1:{port}"],
            stdout=log.open("w"),
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
        )
        wait_for_port(port, process, describe=log.read_text)
        server = HttpSimroute(process, f"http://127.0.0.1:{port}/mcp", log)
        started.append(server)
        return server

    yield start
    for server in started:
        stop(server.process)


@pytest.fixture
def routers() -> Iterator[RouterWatch]:
    """The routers this test starts, and their sandboxes (not other tests')."""
    with RouterWatch() as watch:
        yield watch


@pytest.fixture
def no_sandbox_left_behind(routers: RouterWatch) -> Iterator[None]:
    """Fails the test if a sandbox of a router it started is still there 15 s after it."""
    yield
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and routers.sandboxes():
        time.sleep(0.2)
    assert not routers.sandboxes(), "a sandbox container was left behind"


@pytest.fixture(scope="session")
async def learned(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """A store filled by a real learned-router run (tests/kit/learned_run.py), made once
    for the learned-router and dashboard tests."""
    from kit.learned_run import learned_run

    return await learned_run(tmp_path_factory.mktemp("learned"))
