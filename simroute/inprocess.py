"""Episodes without a server: the runtime, the MCP server and the episode host of a
config, in this process. The same calls as `RestBackend`, answered by the same
`EpisodeHost` a `simroute serve` puts behind its REST front door, so a training script can
move between the two without changing what it sees."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from os import PathLike
from pathlib import Path
from typing import Any

from router.config import Config, load_config
from router.episodes.host import EpisodeError as HostError
from router.episodes.host import EpisodeHost
from router.episodes.options import EpisodeOptionsError
from router.mcp.server import build_server
from router.runtime.runtime import Runtime
from simroute.errors import episode_error


class InProcessBackend:
    """Episodes of `config` (a path to a simroute.yaml, or a loaded `Config`), all on one
    runtime started by `start()` and stopped, with every episode still open, by `aclose()`."""

    def __init__(self, config: str | PathLike[str] | Config) -> None:
        self.config = config if isinstance(config, Config) else load_config(Path(config))
        self.runtime: Runtime | None = None
        self._host: EpisodeHost | None = None

    async def start(self) -> None:
        if self.runtime is not None:
            return
        runtime = Runtime(self.config)
        server = build_server(runtime.mcp_parts)
        try:
            await runtime.start()
        except BaseException:
            await runtime.aclose()  # what did start (the store, upstream clients) stops again
            raise
        self.runtime, self._host = runtime, EpisodeHost(runtime.episode_parts, server)

    async def aclose(self) -> None:
        runtime, self.runtime, self._host = self.runtime, None, None
        if runtime is not None:
            await runtime.aclose()  # closes the open sessions, hence the episodes, first

    @property
    def host(self) -> EpisodeHost:
        if self._host is None:
            raise RuntimeError(
                "simroute: the episodes runtime is not started (use `async with simroute.Episodes(...)`)"
            )
        return self._host

    async def reset(
        self, *, seed: int | None, episode_id: str | None, options: dict[str, Any] | None
    ) -> dict[str, Any]:
        with _as_episode_errors():
            episode = await self.host.reset(seed=seed, episode_id=episode_id, options=options)
        return {
            "episode_id": episode.id,
            "mcp_url": None,  # no server: an in-process episode has no MCP endpoint
            "observation": {"episode_id": episode.id, "message": "episode ready: list_tools or call_tool"},
            "state": episode.state(),
        }

    async def step(self, episode_id: str, action: dict[str, Any]) -> dict[str, Any]:
        with _as_episode_errors():
            return await self.host.step(self.host.get(None, episode_id), action)

    async def state(self, episode_id: str) -> dict[str, Any]:
        with _as_episode_errors():
            return self.host.get(None, episode_id).state()

    async def verify(self, episode_id: str, *, terminate: bool = False) -> float:
        with _as_episode_errors():
            return await self.host.verify(self.host.get(None, episode_id), terminate=terminate)

    async def close(self, episode_id: str) -> None:
        host = self.host
        try:
            episode = host.get(None, episode_id)
        except HostError:  # closing what is not open is done already (as DELETE answers)
            return
        await host.close(episode)


@contextlib.contextmanager
def _as_episode_errors() -> Iterator[None]:
    """The host's refusals as the REST front door reports them: the same status, the same class."""
    try:
        yield
    except HostError as exc:
        raise episode_error(exc.status, str(exc)) from exc
    except EpisodeOptionsError as exc:
        raise episode_error(422, str(exc)) from exc
