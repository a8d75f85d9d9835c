"""Fixtures many test modules share (a pytest plugin, loaded by tests/conftest.py):
HTTP upstreams served on loopback, and a real redis-server."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from servers.http_upstream import serve_upstream

from kit.redis import RedisServer


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    """The plain-HTTP test upstream (tests/servers/http_upstream.py), one per module; yields its base URL."""
    with serve_upstream() as url:
        yield url


@pytest.fixture(scope="module")
def tls_upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The same upstream over HTTPS, with a certificate made for this module."""
    with serve_upstream(tls_dir=tmp_path_factory.mktemp("tls")) as url:
        yield url


@pytest.fixture
def redis_server(tmp_path: Path) -> Iterator[RedisServer]:
    """A real redis-server on a free loopback port for one test."""
    server = RedisServer(tmp_path).start()
    yield server
    server.kill()
