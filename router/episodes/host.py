"""The episodes of one runtime: reset, step, state, verify, close, behind every face.

An episode is an agent session opened explicitly (`SessionRegistry.open`): the same
reaper frees it when idle, the same cap counts it, and every step goes through the
same MCP server and engine an agent's call goes through — in-process, with the
episode's session as the caller (`EPISODE_SESSION`). So a step is routed, recorded and
answered exactly as the agent's call would be.
"""

from __future__ import annotations

import base64
import logging
import re
import secrets
import shlex
import time
import uuid
from typing import TYPE_CHECKING, Any

from fastmcp.exceptions import NotFoundError

from router.auth import namespaced
from router.engine.sessions import SessionLimitError
from router.episodes import http_tool
from router.episodes.episode import Episode, infra_failure
from router.episodes.options import EpisodeOptions
from router.episodes.routes import EpisodeRoutes, shell_is_real
from router.episodes.verifiers import VerifierError, run_verifier
from router.mcp.identity import EPISODE_SESSION
from router.types import Call, Session

if TYPE_CHECKING:
    from fastmcp import FastMCP

    from router.runtime.runtime import Runtime

log = logging.getLogger("simroute.episodes")

# Episodes that ended without a close (reaped) stay readable until closed; past this
# many, the oldest are forgotten (clients that never close must not grow memory).
ENDED_KEPT = 4096
_EPISODE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
SESSION_PREFIX = "episode-"


class EpisodeError(RuntimeError):
    """A request about an episode that cannot be served. `status`: the HTTP status it
    maps to (404 unknown, 409 ended or taken, 429 capacity, 422 a bad action)."""

    status = 400

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        if status is not None:
            self.status = status


class EpisodeCapacityError(EpisodeError):
    status = 429


class EpisodeHost:
    def __init__(self, runtime: Runtime, server: FastMCP) -> None:
        self.runtime = runtime
        self.server = server
        self.routes = EpisodeRoutes(runtime)
        self.http = http_tool.EpisodeHttp(runtime)
        self._episodes: dict[str, Episode] = {}  # by session id
        runtime.sessions.closed_listeners.append(self._session_closed)

    # --- lookup -----------------------------------------------------------------------

    @staticmethod
    def session_id_of(token: str | None, episode_id: str) -> str:
        return namespaced(token, SESSION_PREFIX + episode_id)

    def get(self, token: str | None, episode_id: str) -> Episode:
        """The episode, open or ended but not yet forgotten; EpisodeError(404) otherwise."""
        episode = self._episodes.get(self.session_id_of(token, episode_id))
        if episode is None:
            raise EpisodeError(f"simroute: no episode {episode_id!r} (never reset, or closed)", 404)
        return episode

    def open_episodes(self, token: str | None) -> int:
        return sum(1 for episode in self._episodes.values() if episode.token == token and episode.ended is None)

    def __len__(self) -> int:
        return len(self._episodes)

    # --- reset ------------------------------------------------------------------------

    async def reset(
        self, *, token: str | None = None, seed: int | None = None, episode_id: str | None = None, options: dict[str, Any] | None = None
    ) -> Episode:
        """Open an episode. Raises EpisodeOptionsError (bad options, 422), EpisodeError
        (an id in use, 409), EpisodeCapacityError (429)."""
        config = self.runtime.config
        parsed = EpisodeOptions.parse(options, config)
        if seed is None:  # a seed of its own: episodes differ, and the state says how to rerun one
            seed = secrets.randbelow(2**31)
        if episode_id is None:
            episode_id = uuid.uuid4().hex
        elif not _EPISODE_ID.fullmatch(episode_id):
            raise EpisodeError(f"simroute: episode_id {episode_id!r} is not 1-128 letters, digits, '.', '_' or '-'", 422)
        cap = config.episodes.max_open_per_token
        if self.open_episodes(token) >= cap:
            raise EpisodeCapacityError(
                f"simroute: at capacity: {cap} episodes are open for this token (episodes.max_open_per_token); close one and reset again"
            )
        session = Session(
            id=self.session_id_of(token, episode_id),
            idle_ttl_s=parsed.ttl_s or config.episodes.idle_ttl_s,
            seed=seed,
            policies=self.routes.chain(parsed),
            world={"*": world} if (world := parsed.world_text(config)) is not None else {},
            replay_from=parsed.recording,
            scope=parsed.scope(config),
            answered={},
            perturbation=parsed.perturbation_plan(config),  # drawn from the episode's seed
        )
        if self.runtime.sessions.find(session.id) is not None or self.runtime.sessions.ended(session.id) is not None:
            raise EpisodeError(f"simroute: episode {episode_id!r} exists already (ids are not reused)", 409)
        try:
            self.runtime.sessions.open(session)
        except SessionLimitError as exc:
            raise EpisodeCapacityError(f"simroute: at capacity: {exc}") from exc
        episode = self._episodes[session.id] = Episode(episode_id, token, session, seed, parsed)
        await self._initial_files(episode)
        await self.runtime.engine.remark(
            Call("episode", "simroute", "reset", {"episode_id": episode_id, "seed": seed, "options": options or {}}, session.id),
            session,
            policy="episodes",
            text=f"episode {episode_id} reset (seed {seed})",
        )
        return episode

    async def _initial_files(self, episode: Episode) -> None:
        """A real shell gets the files written into its sandbox; a simulated one is told
        them in its world document. Which one the episode has is what its route decides
        for a harmless command now."""
        files = episode.options.files
        if not files:
            return
        if self.runtime.shell is not None and shell_is_real(episode.session, self.runtime.engine.policies):
            script = " && ".join(
                f"mkdir -p {shlex.quote(_parent(path))} && printf %s {shlex.quote(base64.b64encode(text.encode()).decode())} "
                f"| base64 -d > {shlex.quote(path)}"
                for path, text in files.items()
            )
            try:
                result = await self.runtime.shell.exec(episode.session_id, f"(cd /workspace && {script})", timeout_s=60.0)
                problem = result.error or (result.output[-200:] if result.exit_code != 0 else None)
            except Exception as exc:  # noqa: BLE001 -- a reset's boundary: no sandbox (no Docker engine) flags the episode, it does not fail the reset
                problem = f"{type(exc).__name__}: {exc}"
            if problem is not None:
                episode.infra_error = True
                log.warning("episode %s: writing its initial files failed: %s", episode.id, problem)
            return
        listing = "\n".join(f"--- /workspace/{path} ---\n{text}" for path, text in files.items())
        episode.session.world["shell"] = f"Files in /workspace at the start:\n{listing}"

    # --- steps ------------------------------------------------------------------------

    async def step(self, episode: Episode, action: dict[str, Any]) -> dict[str, Any]:
        """One action (`call_tool` or `list_tools`): {observation, reward, done, info}."""
        if episode.ended is not None:
            raise EpisodeError(f"simroute: episode {episode.id!r} has ended ({episode.ended})", 409)
        kind = action.get("type")
        if kind not in ("call_tool", "list_tools"):
            raise EpisodeError(f"simroute: an action's type is 'call_tool' or 'list_tools', got {kind!r}", 422)
        tool_name, arguments = action.get("tool_name"), action.get("arguments") or {}
        if kind == "call_tool" and (not isinstance(tool_name, str) or not isinstance(arguments, dict)):
            raise EpisodeError("simroute: a call_tool action has a string 'tool_name' and an object 'arguments'", 422)
        started = time.perf_counter()
        episode.steps += 1
        episode.session.touch()
        marker = EPISODE_SESSION.set(episode.session_id)
        try:
            if kind == "list_tools":
                tools = [_tool_json(tool) for tool in await self.server.list_tools()]
                observation: dict[str, Any] = {"tools": tools + ([http_tool.DEFINITION] if self._http_in_play(episode) else [])}
                meta: dict[str, Any] = {}
            elif tool_name == http_tool.TOOL_NAME and self._http_in_play(episode):
                observation, meta = await self._http_request(episode, arguments)
            else:
                observation, meta = await self._call(tool_name, arguments)  # type: ignore[arg-type]
        finally:
            EPISODE_SESSION.reset(marker)
        failed = infra_failure(observation.get("result") or {})
        episode.infra_error = episode.infra_error or failed
        info = {
            "episode_id": episode.id,
            "step": episode.steps,
            "route": meta.get("route"),
            "provenance": meta.get("provenance"),
            "policy": meta.get("policy"),
            "record_id": meta.get("record_id"),
            "infra_error": failed,
            "simroute_ms": round((time.perf_counter() - started) * 1000, 3),
        }
        return {"observation": observation, "reward": None, "done": episode.truncated, "info": info}

    def _http_in_play(self, episode: Episode) -> bool:
        scope = episode.session.scope
        return self.http.available and (scope is None or ("http", "http") in scope)

    async def _http_request(self, episode: Episode, arguments: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        problem = self.http.problem(arguments)
        if problem is not None:
            return _error_result(http_tool.TOOL_NAME, problem, "none"), {"provenance": "none", "policy": "input-schema"}
        try:
            result, meta = await self.http.request(episode, arguments)
        except Exception as exc:  # noqa: BLE001 -- a step's boundary: the channel unreachable is simroute's failure, flagged
            message = f"simroute: the HTTP channel failed: {type(exc).__name__}: {exc}"
            return _error_result(http_tool.TOOL_NAME, message, "none"), {"provenance": "none"}
        return {"tool_name": http_tool.TOOL_NAME, "result": result}, meta

    async def _call(self, tool_name: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        try:
            result = await self.server.call_tool(tool_name, arguments)
        except NotFoundError as exc:  # recorded by the routing middleware: the agent named no tool of this episode
            return _error_result(tool_name, str(exc), "none"), {"provenance": "none", "route": "deny", "policy": "unknown-tool"}
        except Exception as exc:
            log.exception("episode step %s failed", tool_name)
            return _error_result(tool_name, f"simroute: the step failed: {type(exc).__name__}: {exc}", "none"), {"provenance": "none"}
        mcp = result.to_mcp_result()
        payload = mcp.model_dump(mode="json", by_alias=True, exclude_none=True) if hasattr(mcp, "model_dump") else _plain(mcp)
        return {"tool_name": tool_name, "result": payload}, (result.meta or {}).get("simroute") or {}

    # --- state, verify, close ---------------------------------------------------------

    async def verify(self, episode: Episode) -> float:
        name = episode.options.verifier or self.runtime.config.episodes.default_verifier
        if name is None:
            raise EpisodeError(
                "simroute: this episode has no verifier (reset with options.verifier, or set episodes.default_verifier)", 422
            )
        verifier = self.runtime.config.episodes.verifiers[name]
        try:
            reward = await run_verifier(name, verifier, episode, self.runtime)
        except VerifierError as exc:
            await self._remark(episode, "verify", f"verifier {name!r} failed: {exc}")
            raise EpisodeError(f"simroute: {exc}", 422) from exc
        episode.last_reward = reward
        await self._remark(episode, "verify", f"verifier {name!r}: reward {reward:g}", {"reward": reward, "verifier": name})
        return reward

    async def close(self, episode: Episode) -> None:
        """Idempotent: closing an ended episode forgets it."""
        if episode.ended is None:
            await self.runtime.sessions.close(episode.session_id, "closed")
        self._episodes.pop(episode.session_id, None)

    async def _session_closed(self, session_id: str, reason: str) -> None:
        await self.http.close(session_id)
        episode = self._episodes.get(session_id)
        if episode is None or episode.ended is not None:
            return
        episode.ended = reason
        self._forget_oldest_ended()
        if reason == "reaped":  # stays readable (state) until the client closes it, then forgotten
            idle = episode.session.idle_ttl_s or self.runtime.sessions.idle_ttl_s
            await self._remark(
                episode, "close", f"episode {episode.id} reaped after {idle:g}s idle; its sandbox, browser and upstreams were freed"
            )
        else:
            await self._remark(episode, "close", f"episode {episode.id} closed")

    def _forget_oldest_ended(self) -> None:
        ended = [key for key, episode in self._episodes.items() if episode.ended is not None]
        for key in ended[: max(0, len(ended) - ENDED_KEPT)]:  # dicts keep opening order: oldest first
            del self._episodes[key]

    async def _remark(self, episode: Episode, tool: str, text: str, structured: dict[str, Any] | None = None) -> None:
        call = Call("episode", "simroute", tool, {"episode_id": episode.id}, episode.session_id)
        await self.runtime.engine.remark(call, episode.session, policy="episodes", text=text, structured=structured)


def _parent(path: str) -> str:
    return path.rsplit("/", 1)[0] if "/" in path else "."


def _tool_json(tool: Any) -> dict[str, Any]:
    return tool.to_mcp_tool().model_dump(mode="json", by_alias=True, exclude_none=True)


def _error_result(tool_name: str, text: str, provenance: str) -> dict[str, Any]:
    return {
        "tool_name": tool_name,
        "result": {"content": [{"type": "text", "text": text}], "isError": True, "_meta": {"simroute": {"provenance": provenance}}},
    }


def _plain(mcp: Any) -> dict[str, Any]:
    """A ToolResult that fastmcp renders as bare content (or content and structured)."""
    content, structured = mcp if isinstance(mcp, tuple) else (mcp, None)
    blocks = [block.model_dump(mode="json", by_alias=True, exclude_none=True) for block in content]
    return {"content": blocks, **({"structuredContent": structured} if structured is not None else {}), "isError": False}
