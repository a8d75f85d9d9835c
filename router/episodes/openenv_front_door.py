"""The OpenEnv front door: what `openenv-core`'s clients (GenericEnvClient, MCPToolClient;
TRL, SkyRL, ART, verifiers and NeMo Gym reach environments through them) speak.

- `/ws`: one WebSocket = one session; messages `{"type": "reset"|"step"|"state"|"close", "data": …}`,
  answers `{"type": "observation", "data": {observation, reward, done}}`,
  `{"type": "state", "data": …}` or `{"type": "error", "data": {message, code}}`. A reset
  closes the connection's previous episode and opens a new one; the connection closing
  closes its episode. A step's action is `{"type": "call_tool", "tool_name", "arguments"}`
  or `{"type": "list_tools"}` (OpenEnv's MCP actions).
- `GET /schema` (the action, observation and state schemas), `/health` (OpenEnv's
  `{"status": "healthy"}`, and `upstreams`: each MCP server's `{ok, error}` as of its
  last start), `/metadata`.

OpenEnv's HTTP `/reset` and `/step` are stateless by that protocol's design (each
request a fresh environment): episodes live on `/ws` (or on simroute's `/episodes`).
The protocol is implemented here, not imported: `openenv-core` pulls gradio and more
into whatever installs it.
"""

from __future__ import annotations

import importlib.metadata
import json
import logging
from typing import Any

from fastapi import APIRouter, WebSocket, WebSocketDisconnect

from router.episodes.episode import Episode
from router.episodes.host import EpisodeCapacityError, EpisodeError, EpisodeHost
from router.episodes.options import EpisodeOptionsError
from router.episodes.rest import token_of

log = logging.getLogger("simroute.episodes")

ACTION_SCHEMA = {
    "title": "simroute action",
    "oneOf": [
        {
            "type": "object",
            "properties": {
                "type": {"const": "call_tool"},
                "tool_name": {"type": "string", "description": "A tool of the episode (list_tools names them)."},
                "arguments": {"type": "object", "default": {}},
            },
            "required": ["type", "tool_name"],
        },
        {"type": "object", "properties": {"type": {"const": "list_tools"}}, "required": ["type"]},
    ],
}
OBSERVATION_SCHEMA = {
    "title": "simroute observation",
    "type": "object",
    "properties": {
        "tool_name": {"type": "string"},
        "result": {
            "type": "object",
            "description": "The MCP CallToolResult, as the agent would see it (_meta.simroute: provenance, route…).",
        },
        "tools": {
            "type": "array",
            "items": {"type": "object"},
            "description": (
                "After reset and list_tools: the episode's MCP tools (http_request included when HTTP is in play)."
            ),
        },
        "info": {
            "type": "object",
            "description": (
                "episode_id, step, route, provenance, policy, record_id, infra_error, truncated, simroute_ms."
            ),
        },
    },
}
STATE_SCHEMA = {
    "title": "simroute episode state",
    "type": "object",
    "properties": {
        "episode_id": {"type": "string"},
        "step_count": {"type": "integer"},
        "seed": {"type": ["integer", "null"]},
        "infra_error": {"type": "boolean"},
        "done": {"type": "boolean"},
        "truncated": {"type": "boolean"},
    },
    "required": ["episode_id", "step_count"],
}


def openenv_router(host: EpisodeHost) -> APIRouter:
    api = APIRouter(tags=["openenv"])

    @api.get("/health", summary="Health (OpenEnv)")
    async def health() -> dict[str, Any]:
        # Healthy while simroute serves (the balancer and OpenEnv clients read `status`);
        # `upstreams` says which MCP servers failed their last start, and why.
        return {"status": "healthy", "upstreams": host.parts.mcp.upstreams.health()}

    @api.get("/metadata", summary="Environment metadata (OpenEnv)")
    async def metadata() -> dict[str, Any]:
        return {
            "name": "simroute",
            "description": "Tool-calling episodes routed per call to real servers, a world model, or recorded replays.",
            "version": package_version(),
        }

    @api.get("/schema", summary="Action, observation and state schemas (OpenEnv)")
    async def schema() -> dict[str, Any]:
        return {"action": ACTION_SCHEMA, "observation": OBSERVATION_SCHEMA, "state": STATE_SCHEMA}

    @api.websocket("/ws")
    async def session(websocket: WebSocket) -> None:
        await websocket.accept()
        connection = Connection(host, token_of(websocket))
        try:
            while True:
                answer = await connection.answer(await websocket.receive_text())
                if answer is None:
                    break
                await websocket.send_text(json.dumps(answer))
        except WebSocketDisconnect:
            pass
        finally:
            await connection.close()

    return api


class Connection:
    """One WebSocket session: at most one open episode at a time."""

    def __init__(self, host: EpisodeHost, token: str | None) -> None:
        self.host = host
        self.token = token
        self.episode: Episode | None = None

    async def answer(self, raw: str) -> dict[str, Any] | None:
        """The answer to one message; None after `close`."""
        try:
            message = json.loads(raw)
        except json.JSONDecodeError as exc:
            return _error(f"Invalid JSON: {exc}", "INVALID_JSON")
        if not isinstance(message, dict):
            return _error("a message is a JSON object with a 'type'", "VALIDATION_ERROR")
        kind, data = message.get("type"), message.get("data") or {}
        try:
            if kind == "reset":
                return await self._reset(data)
            if kind == "step":
                return await self._step(data)
            if kind == "state":
                return {"type": "state", "data": self._current().state()}
            if kind == "close":
                return None
        except EpisodeCapacityError as exc:
            return _error(
                str(exc), "CAPACITY_REACHED", max_sessions=self.host.parts.mcp.config.episodes.max_open_per_token
            )
        except (EpisodeError, EpisodeOptionsError) as exc:
            return _error(str(exc), "VALIDATION_ERROR" if isinstance(exc, EpisodeOptionsError) else "EXECUTION_ERROR")
        return _error(f"Unknown message type: {kind}", "UNKNOWN_TYPE")

    async def _reset(self, data: dict[str, Any]) -> dict[str, Any]:
        await self.close()
        options = data.get("options")
        self.episode = await self.host.reset(
            token=self.token, seed=data.get("seed"), episode_id=data.get("episode_id"), options=options
        )
        # The episode's tools come with it (no step: listing does not act), as OpenEnv's MCP
        # environments answer a reset; an episode's listing is its tools' stored snapshot
        # once one exists, so a reset starts no upstream process after the first.
        listing = await self.host.step(self.episode, {"type": "list_tools"})
        observation = {
            "episode_id": self.episode.id,
            "message": "episode ready",
            "tools": listing["observation"]["tools"],
        }
        return {"type": "observation", "data": {"observation": observation, "reward": None, "done": False}}

    async def _step(self, action: dict[str, Any]) -> dict[str, Any]:
        result = await self.host.step(self._current(), action)
        # `info` twice: beside the observation, and as OpenEnv's `metadata`, which its MCP client keeps;
        # `truncated` in it (OpenEnv's `done` is ended or truncated, as on every front door).
        info = {**result["info"], "truncated": result["truncated"]}
        observation = {**result["observation"], "info": info, "metadata": info}
        return {
            "type": "observation",
            "data": {"observation": observation, "reward": result["reward"], "done": result["done"]},
        }

    def _current(self) -> Episode:
        if self.episode is None:
            raise EpisodeError("simroute: no episode on this connection: send a reset first")
        return self.episode

    async def close(self) -> None:
        if self.episode is not None:
            episode, self.episode = self.episode, None
            await self.host.close(episode)


def package_version() -> str | None:
    try:
        return importlib.metadata.version("simroute")
    except importlib.metadata.PackageNotFoundError:
        return None


def _error(message: str, code: str, **extra: Any) -> dict[str, Any]:
    return {"type": "error", "data": {"message": message, "code": code, **extra}}
