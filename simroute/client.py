"""`simroute.Episodes`: many episodes from one asyncio program.

    async with simroute.Episodes(url="http://127.0.0.1:8765") as episodes:   # a simroute serve
        episode = await episodes.reset(seed=7, options={"route": "sim"})
        tools = await episode.list_tools()
        result = await episode.call_tool("echo", text="hi")      # a StepResult
        reward = await episode.verify()
        await episode.close()

`simroute.Episodes(config="simroute.yaml")` runs the same episodes in this process, on
one runtime shared by all of them. Remote episodes share one HTTP connection pool, so
thousands can run concurrently (`asyncio.gather`). A refusal raises an `EpisodeError`
subclass with the status and simroute's message (`CapacityError` for 429).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from os import PathLike
from typing import TYPE_CHECKING, Any, Protocol

from simroute.inprocess import InProcessBackend
from simroute.rest import DEFAULT_MAX_CONNECTIONS, RestBackend

if TYPE_CHECKING:
    from router.config import Config


class Backend(Protocol):
    """Where episodes live: a server (`RestBackend`) or this process (`InProcessBackend`)."""

    async def start(self) -> None: ...
    async def aclose(self) -> None: ...
    async def reset(
        self, *, seed: int | None, episode_id: str | None, options: dict[str, Any] | None
    ) -> dict[str, Any]: ...
    async def step(self, episode_id: str, action: dict[str, Any]) -> dict[str, Any]: ...
    async def state(self, episode_id: str) -> dict[str, Any]: ...
    async def verify(self, episode_id: str, *, terminate: bool = False) -> float: ...
    async def close(self, episode_id: str) -> None: ...


@dataclass(frozen=True, slots=True)
class StepResult:
    """One step's answer. `observation`: {tool_name, result} (the MCP CallToolResult,
    `_meta.simroute` naming its provenance and route) or {tools: [...]}; `reward`: None
    (verify scores an episode); `done`: the episode is over (ended, or truncated);
    `truncated`: it used up its max_steps (a tool call is a step, a listing is not);
    `info`: episode_id, step, route, provenance, policy, record_id, infra_error, simroute_ms."""

    observation: dict[str, Any]
    reward: float | None
    done: bool
    info: dict[str, Any]
    truncated: bool = False


class Episode:
    """One open episode. Its methods are coroutines; `async with` closes it."""

    def __init__(self, backend: Backend, answer: dict[str, Any]) -> None:
        self._backend = backend
        self.id: str = answer["episode_id"]
        self.observation: dict[str, Any] = answer["observation"]  # the reset's
        self.reset_state: dict[str, Any] = answer["state"]
        self.seed: int | None = self.reset_state.get("seed")
        self.mcp_url: str | None = answer.get("mcp_url")  # its tools over MCP (remote episodes)

    async def step(self, action: dict[str, Any]) -> StepResult:
        """`{"type": "call_tool", "tool_name": …, "arguments": {…}}` or `{"type": "list_tools"}`."""
        answer = await self._backend.step(self.id, action)
        return StepResult(
            answer["observation"], answer["reward"], bool(answer["done"]), answer["info"], bool(answer.get("truncated"))
        )

    async def list_tools(self) -> list[dict[str, Any]]:
        """The episode's tools (not a step: it does not count towards max_steps)."""
        result = await self.step({"type": "list_tools"})
        return list(result.observation["tools"])

    async def call_tool(self, tool_name: str, /, **arguments: Any) -> StepResult:
        return await self.step({"type": "call_tool", "tool_name": tool_name, "arguments": arguments})

    async def state(self) -> dict[str, Any]:
        """episode_id, step_count, seed, route, infra_error, done, ended, reward, options…"""
        return await self._backend.state(self.id)

    async def verify(self, *, terminate: bool = False) -> float:
        """Runs the episode's verifier (fixed at reset); its reward. `terminate`: the
        episode ends with it (further steps refused)."""
        return await self._backend.verify(self.id, terminate=terminate)

    async def close(self) -> None:
        """Frees the episode's sandbox, browser and upstreams; idempotent."""
        await self._backend.close(self.id)

    async def __aenter__(self) -> Episode:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"Episode({self.id!r}, seed={self.seed})"


class Episodes:
    """Opens episodes on a server (`url`, with `token` when the server has tokens; by
    default $SIMROUTE_TOKEN) or in this process (`config`). Use as an async context
    manager, or `await start()` / `await aclose()`."""

    def __init__(
        self,
        *,
        url: str | None = None,
        config: str | PathLike[str] | Config | None = None,
        token: str | None = None,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        timeout_s: float | None = 300.0,
    ) -> None:
        self.backend = backend_for(
            url=url, config=config, token=token, max_connections=max_connections, timeout_s=timeout_s
        )

    async def start(self) -> Episodes:
        await self.backend.start()
        return self

    async def aclose(self) -> None:
        await self.backend.aclose()

    async def __aenter__(self) -> Episodes:
        return await self.start()

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None, episode_id: str | None = None
    ) -> Episode:
        """Opens an episode. `options`: servers, channels, route, files, world, recording,
        ttl_s, max_steps, verifier (see the REST front door's OpenAPI document)."""
        return Episode(self.backend, await self.backend.reset(seed=seed, episode_id=episode_id, options=options))


def backend_for(
    *,
    url: str | None,
    config: str | PathLike[str] | Config | None,
    token: str | None = None,
    max_connections: int = DEFAULT_MAX_CONNECTIONS,
    timeout_s: float | None = 300.0,
) -> Backend:
    """Exactly one of `url` (a server) and `config` (in this process)."""
    if (url is None) == (config is None):
        raise ValueError("simroute: give exactly one of url= (a simroute serve) and config= (episodes in this process)")
    if url is not None:
        token = token if token is not None else os.environ.get("SIMROUTE_TOKEN") or None
        return RestBackend(url, token=token, max_connections=max_connections, timeout_s=timeout_s)
    assert config is not None
    return InProcessBackend(config)
