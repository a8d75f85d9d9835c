"""`simroute serve` launched as a user launches it, and its /metrics read back."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
from fastmcp import Client
from fastmcp.client.transports import StreamableHttpTransport
from prometheus_client.parser import text_string_to_metric_families

from kit.launch import simroute_executable
from router.cli.launch import free_port, stop, wait_for_port


@contextlib.contextmanager
def serve_process(
    config: Path, log: Path, *, http_port: int | None = None, **env: str
) -> Iterator[tuple[subprocess.Popen, int]]:
    """`simroute serve` launched as a user launches it; yields the process and its MCP
    port (its HTTP proxy on `http_port`, default any free port)."""
    port = free_port()
    proxy_port = http_port or free_port()
    process = subprocess.Popen(
        [
            simroute_executable(),
            "serve",
            "--config",
            str(config),
            "--mcp",
            f"127.0.0.1:{port}",
            "--http-proxy",
            str(proxy_port),
        ],
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        env={**os.environ, "PYTHONUNBUFFERED": "1", **env},
    )
    try:
        wait_for_port(port, process, describe=log.read_text)
        if http_port is not None:  # asked for: the test talks to the proxy too
            wait_for_port(proxy_port, process, describe=log.read_text)
        yield process, port
    finally:
        stop(process)


@contextlib.contextmanager
def serving(config: Path, log: Path, *, http_port: int | None = None, **env: str) -> Iterator[int]:
    """`simroute serve` launched as a user launches it; yields its MCP port."""
    with serve_process(config, log, http_port=http_port, **env) as (_, port):
        yield port


def parsed(metrics: str) -> dict[tuple[str, tuple], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(metrics)
        for s in family.samples
    }


async def scrape_around_a_call(port: int):
    """/metrics before and after one `echo` call through simroute's MCP endpoint."""
    async with httpx.AsyncClient(timeout=10) as http:
        before = (await http.get(f"http://127.0.0.1:{port}/metrics")).text
    async with Client(StreamableHttpTransport(f"http://127.0.0.1:{port}/mcp"), timeout=180) as client:
        result = await client.call_tool("echo", {"text": "hello"}, raise_on_error=False)
    async with httpx.AsyncClient(timeout=10) as http:
        after = (await http.get(f"http://127.0.0.1:{port}/metrics")).text
    return before, result, after
