"""`simroute serve` with episodes, launched as a user launches it, and its REST front door."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2 as httpx

from kit.launch import child_commands
from kit.serve import serve_process
from router.cli.launch import stop


@dataclass
class Served:
    process: subprocess.Popen
    port: int
    log: Path
    http: httpx.Client

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def reset(self, **body: Any) -> httpx.Response:
        return self.http.post(f"{self.url}/episodes", json=body)

    def open(self, **body: Any) -> str:
        """A new episode's id (the reset must succeed)."""
        response = self.reset(**body)
        assert response.status_code == 201, response.text
        return response.json()["episode_id"]

    def step(self, episode_id: str, action: dict) -> dict:
        response = self.http.post(f"{self.url}/episodes/{episode_id}/step", json=action)
        assert response.status_code == 200, response.text
        return response.json()

    def call(self, episode_id: str, tool: str, **arguments: Any) -> dict:
        return self.step(episode_id, {"type": "call_tool", "tool_name": tool, "arguments": arguments})

    def state(self, episode_id: str) -> dict:
        response = self.http.get(f"{self.url}/episodes/{episode_id}/state")
        assert response.status_code == 200, response.text
        return response.json()

    def children(self) -> list[str]:
        """The command lines of the processes the server started (upstream MCP servers)."""
        return child_commands(self.process.pid)


def text_of(step: dict) -> str:
    """The text an agent reads in a step's tool result."""
    result = step["observation"]["result"]
    return "\n".join(block.get("text", "") for block in result.get("content", []) if block.get("type") == "text")


@contextlib.contextmanager
def serving_episodes(config: Path, **env: str) -> Iterator[Served]:
    """`simroute serve` with a REST client of its episodes; it must stop cleanly."""
    log = config.parent / f"serve-{len(list(config.parent.glob('serve-*.log')))}.log"
    with serve_process(config, log, **env) as (process, port), httpx.Client(timeout=180, trust_env=False) as http:
        yield Served(process, port, log, http)
        code = stop(process, timeout_s=60)
        assert code == 0, log.read_text()[-4000:]
