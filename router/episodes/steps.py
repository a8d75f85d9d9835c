"""One definition of an episode's step, whatever the front door: a tool call (an MCP tool,
the shell or browser, or `http_request`) through REST, OpenEnv, MCP per episode
(`/mcp/e/{id}`) or `simroute.Env`. Every step is counted (and shared with the
replicas), refused once the episode has ended or used up its `max_steps`, and sets the
episode's `infra_error` when simroute or a backend (the world model included) failed.
`list_tools` is no step on any front door: it lists, it does not act. `done` (ended or
truncated) and `truncated` (max_steps reached) are reported alike on every front door.

A REST, OpenEnv or `simroute.Env` step takes the MCP front door's per-call work in process
(router/mcp/in_process.py) and gets the call's record back: its `info` (route,
provenance, policy, record id) is read from the record, never parsed back out of the
result. `http_request` goes through simroute's HTTP channel (router/episodes/http_tool.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import mcp_types

from calls import Call
from router.episodes import http_tool
from router.episodes.episode import Episode, infra_failure
from router.episodes.errors import EpisodeError
from router.mcp.identity import EPISODE_SESSION
from router.mcp.results import call_result_from_observation, call_result_json, call_result_of_json

if TYPE_CHECKING:
    from records.record import Record
    from records.shared_state.episode_rows import EpisodeRows
    from router.episodes.http_tool import EpisodeHttp
    from router.mcp.in_process import SimrouteServer
    from router.runtime.parts import EpisodeParts

log = logging.getLogger("simroute.episodes")


def refusal(episode: Episode) -> str | None:
    """Why the episode takes no further step (ended, or its max_steps used up); None: it may."""
    if episode.ended is not None:
        return f"simroute: episode {episode.id!r} has ended ({episode.ended})"
    if episode.truncated:
        return (
            f"simroute: episode {episode.id!r} is done: it used up its max_steps ({episode.options.max_steps}); "
            "reset for a new one"
        )
    return None


def progress(episode: Episode, failed: bool) -> dict[str, Any]:
    """What every front door tells of the episode after a step."""
    return {"step": episode.steps, "done": episode.done, "truncated": episode.truncated, "infra_error": failed}


@dataclass(frozen=True, slots=True)
class StepRoute:
    """How a step was answered, as its `info` tells it."""

    provenance: str | None
    route: str | None = None
    policy: str | None = None
    record_id: str | None = None

    @classmethod
    def of_record(cls, record: Record) -> StepRoute:
        return cls(str(record.served.provenance), str(record.decision.route), record.decision.policy, record.id)


class StepsHost(Protocol):
    """What steps need of the episode host (router/episodes/host.py)."""

    parts: EpisodeParts
    server: SimrouteServer
    http: EpisodeHttp
    share: EpisodeRows

    def http_in_play(self, episode: Episode) -> bool: ...


class EpisodeSteps:
    def __init__(self, host: StepsHost) -> None:
        self.host = host

    async def count(self, episode: Episode) -> None:
        """The step counted (on every replica); EpisodeError(409) when another replica ended it."""
        replica = self.host.parts.mcp.replica.identity
        episode.steps, ended = await self.host.share.step(episode.session_id, replica, counted=episode.steps)
        if ended is not None:  # ended by another replica (closed there, or reaped)
            episode.ended = ended
            raise EpisodeError(f"simroute: episode {episode.id!r} has ended ({ended})", 409)
        episode.session.touch()

    async def flag(self, episode: Episode, result: dict[str, Any]) -> bool:
        """Whether a step's result (CallToolResult JSON) is simroute's or a backend's failure; sticky on the episode."""
        failed = infra_failure(result)
        if failed and not episode.infra_error:
            await self.host.share.update(episode.session_id, infra_error=True)
        episode.infra_error = episode.infra_error or failed
        return failed

    # --- REST, OpenEnv, Env ---------------------------------------------------------------

    async def action(self, episode: Episode, action: dict[str, Any]) -> dict[str, Any]:
        if episode.ended is not None:
            raise EpisodeError(f"simroute: episode {episode.id!r} has ended ({episode.ended})", 409)
        kind = action.get("type")
        if kind not in ("call_tool", "list_tools"):
            raise EpisodeError(f"simroute: an action's type is 'call_tool' or 'list_tools', got {kind!r}", 422)
        if kind == "list_tools":
            return await self._listing(episode)
        tool_name, arguments = action.get("tool_name"), action.get("arguments") or {}
        if not isinstance(tool_name, str) or not isinstance(arguments, dict):
            raise EpisodeError("simroute: a call_tool action has a string 'tool_name' and an object 'arguments'", 422)
        refused = refusal(episode)
        if refused is not None:
            raise EpisodeError(refused, 409)
        started = time.perf_counter()
        await self.count(episode)
        marker = EPISODE_SESSION.set(episode.session_id)
        # Busy from here, not only once the engine has the call: a step still waiting for
        # its upstream to start or list is no idle episode to reap.
        episode.session.in_flight += 1
        try:
            if tool_name == http_tool.TOOL_NAME and self.host.http_in_play(episode):
                observation, meta = await self.http_request(episode, arguments)
                routed = StepRoute(meta.get("provenance"), meta.get("route"), meta.get("policy"), meta.get("record_id"))
            else:
                observation, routed = await self._call(episode, tool_name, arguments)
        finally:
            episode.session.in_flight -= 1
            EPISODE_SESSION.reset(marker)
        failed = await self.flag(episode, observation.get("result") or {})
        info = {
            "episode_id": episode.id,
            "step": episode.steps,
            "route": routed.route,
            "provenance": routed.provenance,
            "policy": routed.policy,
            "record_id": routed.record_id,
            "infra_error": failed,
            "simroute_ms": round((time.perf_counter() - started) * 1000, 3),
        }
        return {
            "observation": observation,
            "reward": None,
            "done": episode.done,
            "truncated": episode.truncated,
            "info": info,
        }

    async def _listing(self, episode: Episode) -> dict[str, Any]:
        started = time.perf_counter()
        marker = EPISODE_SESSION.set(episode.session_id)
        try:  # the episode's tools, http_request included (listed by router/mcp/episode_front_door.py)
            tools = [_tool_json(tool) for tool in await self.host.server.list_tools()]
        finally:
            EPISODE_SESSION.reset(marker)
        info = {
            "episode_id": episode.id,
            "step": episode.steps,
            "route": None,
            "provenance": "none",
            "policy": None,
            "record_id": None,
            "infra_error": False,
            "simroute_ms": round((time.perf_counter() - started) * 1000, 3),
        }
        return {
            "observation": {"tools": tools},
            "reward": None,
            "done": episode.done,
            "truncated": episode.truncated,
            "info": info,
        }

    async def http_request(self, episode: Episode, arguments: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        http = self.host.http
        problem = http.problem(arguments)
        if problem is not None:
            return error_result(http_tool.TOOL_NAME, problem, "none"), {"provenance": "none", "policy": "input-schema"}
        try:
            result, meta = await http.request(episode, arguments)
        except Exception as exc:  # noqa: BLE001 -- a step's boundary: the channel unreachable is simroute's failure, flagged
            message = f"simroute: the HTTP channel failed: {type(exc).__name__}: {exc}"
            return error_result(http_tool.TOOL_NAME, message, "none"), {"provenance": "none"}
        return {"tool_name": http_tool.TOOL_NAME, "result": result}, meta

    async def _call(
        self, episode: Episode, tool_name: str, arguments: dict[str, Any]
    ) -> tuple[dict[str, Any], StepRoute]:
        """The step through the MCP front door's per-call work, in process: (its observation, how it was routed)."""
        try:
            routed = await self.host.server.in_process.call(episode.session_id, tool_name, arguments)
        except Exception as exc:
            log.exception("episode step %s failed", tool_name)
            return error_result(
                tool_name, f"simroute: the step failed: {type(exc).__name__}: {exc}", "none"
            ), StepRoute("none")
        how = StepRoute.of_record(routed.record)
        if routed.unknown:  # recorded (denied): the agent named no tool of this episode
            return error_result(tool_name, f"Unknown tool: {tool_name!r}", "none"), how
        return {
            "tool_name": tool_name,
            "result": routed.result.model_dump(mode="json", by_alias=True, exclude_none=True),
        }, how

    # --- MCP per episode ------------------------------------------------------------------

    async def mcp_call(
        self, episode: Episode, call: Call, produce: Callable[[], Awaitable[mcp_types.CallToolResult]]
    ) -> mcp_types.CallToolResult:
        """A `tools/call` on `/mcp/e/{id}`: the same step as a REST `call_tool`. Refused
        (recorded, provenance `none`) once the episode is done; the result's
        `_meta.simroute.episode` says the episode's step, done, truncated and infra_error."""
        refused = refusal(episode)
        if refused is not None:
            outcome = await self.host.parts.mcp.engine.reject(call, episode.session, policy="episodes", reason=refused)
            result = call_result_from_observation(outcome.observation, outcome.record)
            return _with_progress(result, progress(episode, False))
        await self.count(episode)
        if call.tool == http_tool.TOOL_NAME and self.host.http_in_play(episode):
            observation, _ = await self.http_request(episode, call.arguments)
            payload = observation["result"]
            kept = {
                "content": payload["content"],
                "structured": payload.get("structuredContent"),
                "meta": payload.get("_meta"),
            }
            result = call_result_of_json({**kept, "is_error": bool(payload.get("isError"))})
        else:
            result = await produce()
        failed = await self.flag(episode, _as_json(result))
        return _with_progress(result, progress(episode, failed))


def _with_progress(result: mcp_types.CallToolResult, episode: dict[str, Any]) -> mcp_types.CallToolResult:
    meta = dict(result.meta or {})
    meta["simroute"] = {**(meta.get("simroute") or {}), "episode": episode}
    return result.model_copy(update={"meta": meta})


def _as_json(result: mcp_types.CallToolResult) -> dict[str, Any]:
    kept = call_result_json(result)
    return {"content": kept["content"], "isError": kept["is_error"], "_meta": kept["meta"] or {}}


def _tool_json(tool: Any) -> dict[str, Any]:
    return tool.to_mcp_tool().model_dump(mode="json", by_alias=True, exclude_none=True)


def error_result(tool_name: str, text: str, provenance: str) -> dict[str, Any]:
    return {
        "tool_name": tool_name,
        "result": {
            "content": [{"type": "text", "text": text}],
            "isError": True,
            "_meta": {"simroute": {"provenance": provenance}},
        },
    }
