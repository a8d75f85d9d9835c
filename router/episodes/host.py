"""The episodes of one runtime: reset, step, state, verify, close, behind every face.

An episode is an agent session opened explicitly (`SessionRegistry.open`): the same
reaper frees it when idle, the same cap counts it, and every step goes through the
same MCP server and engine an agent's call goes through — in-process, with the
episode's session as the caller (`EPISODE_SESSION`). So a step is routed, recorded and
answered exactly as the agent's call would be.

With a Redis store the episodes are shared (`shared.py`): a replica that does not
hold an episode takes it over from its row (`lookup`), and its steps go on with the
same seed, options, world, history and counters.
"""

from __future__ import annotations

import json
import logging
import re
import secrets
import time
import uuid
from typing import TYPE_CHECKING, Any

from fastmcp.exceptions import NotFoundError

from policies.perturbation import PerturbationState
from router.auth import namespaced
from router.engine.sessions import SessionLimitError
from router.episodes import http_tool
from router.episodes.episode import Episode, infra_failure
from router.episodes.idempotency import lost_answer
from router.episodes.initial_files import write_initial_files
from router.episodes.options import EpisodeOptions
from router.episodes.routes import EpisodeRoutes
from router.episodes.shared import EpisodeRow, episode_share
from router.episodes.verifiers import VerifierError, run_verifier
from router.mcp.idempotency import IdempotencyError, IdempotencyLost, answered_once_by_key
from router.mcp.identity import EPISODE_SESSION
from router.mcp.retries import RetriedRequests
from router.types import Call, EpisodeSetup, Session, SessionWorld

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
        self.share = episode_share(runtime)
        self.once = answered_once_by_key(runtime)
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

    async def lookup(self, token: str | None, episode_id: str) -> Episode:
        """`get`, or (episodes shared through Redis) the episode another replica opened,
        taken over here; EpisodeError(404) when no replica knows it."""
        try:
            return self.get(token, episode_id)
        except EpisodeError:
            if not self.share.shared or not _EPISODE_ID.fullmatch(episode_id):
                raise
        session_id = self.session_id_of(token, episode_id)
        row = await self.share.load(session_id)
        if row is None or row.forgotten or row.token != token:
            raise EpisodeError(f"simroute: no episode {episode_id!r} (never reset, or closed)", 404)
        return self._get_or_adopt(session_id, row)

    def _get_or_adopt(self, session_id: str, row: EpisodeRow) -> Episode:
        found = self._episodes.get(session_id)  # taken over by a request that read the row too
        if found is not None:
            return found
        parsed = EpisodeOptions.parse(row.options, self.runtime.config)
        session = self._session(session_id, parsed, row.seed)
        session.slice(SessionWorld).world = dict(row.world)
        episode = Episode(row.id, row.token, session, row.seed, parsed, created=row.created, steps=row.steps)
        episode.infra_error, episode.ended, episode.last_reward = row.infra_error, row.ended, row.reward
        if episode.ended is None:
            try:
                self.runtime.sessions.open(session)
            except SessionLimitError as exc:
                raise EpisodeCapacityError(f"simroute: at capacity: {exc}") from exc
            except ValueError as exc:  # closed here before: its end is this replica's word
                raise EpisodeError(f"simroute: episode {row.id!r} has ended on this replica", 409) from exc
        self._episodes[session_id] = episode
        log.info("episode %s taken over from replica %s at step %d", row.id, row.replica or "?", row.steps)
        return episode

    def _session(self, session_id: str, parsed: EpisodeOptions, seed: int | None) -> Session:
        config = self.runtime.config
        session = Session(id=session_id, idle_ttl_s=parsed.ttl_s or config.episodes.idle_ttl_s, seed=seed)
        session.slices[EpisodeSetup] = EpisodeSetup(self.routes.chain(parsed), replay_from=parsed.recording, scope=parsed.scope(config))
        session.slices[SessionWorld] = SessionWorld({"*": world} if (world := parsed.world_text(config)) is not None else {})
        session.slices[RetriedRequests] = RetriedRequests()  # a retried request is answered once
        plan = parsed.perturbation_plan(config)  # drawn from the episode's seed
        if plan is not None:
            session.slices[PerturbationState] = PerturbationState(plan)
        return session

    async def refresh(self, episode: Episode) -> Episode:
        """The episode as the replicas share it (its steps, flags and end), for `state`."""
        row = await self.share.load(episode.session_id) if self.share.shared else None
        if row is not None:
            episode.steps = max(episode.steps, row.steps)
            episode.infra_error = episode.infra_error or row.infra_error
            episode.ended = episode.ended or row.ended
            episode.last_reward = row.reward if row.reward is not None else episode.last_reward
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
        session = self._session(self.session_id_of(token, episode_id), parsed, seed)
        exists = EpisodeError(f"simroute: episode {episode_id!r} exists already (ids are not reused)", 409)
        if self.runtime.sessions.find(session.id) is not None or self.runtime.sessions.ended(session.id) is not None:
            raise exists
        world = session.slice(SessionWorld).world
        row = EpisodeRow(episode_id, token, seed, options or {}, dict(world), time.time(), replica=self.runtime.replica.identity)
        if not await self.share.create(session.id, row):  # another replica's episode
            raise exists
        try:
            self.runtime.sessions.open(session)
        except SessionLimitError as exc:
            await self.share.update(session.id, ended="refused", forgotten=True)
            raise EpisodeCapacityError(f"simroute: at capacity: {exc}") from exc
        episode = self._episodes[session.id] = Episode(episode_id, token, session, seed, parsed, created=row.created)
        await write_initial_files(self.runtime, episode)
        if world != row.world or episode.infra_error:  # the files told to a simulated shell
            await self.share.update(session.id, world=json.dumps(world), infra_error=episode.infra_error)
        await self.runtime.engine.remark(
            Call("episode", "simroute", "reset", {"episode_id": episode_id, "seed": seed, "options": options or {}}, session.id),
            session,
            policy="episodes",
            text=f"episode {episode_id} reset (seed {seed})",
        )
        return episode

    # --- steps ------------------------------------------------------------------------

    async def step(self, episode: Episode, action: dict[str, Any], *, idempotency_key: str | None = None) -> dict[str, Any]:
        """One action (`call_tool` or `list_tools`): {observation, reward, done, info}.
        With an idempotency key, a retry is answered once (idempotency.py)."""
        if idempotency_key is None:
            return await self._step(episode, action)
        try:
            return await self.once.run(episode.session, idempotency_key, action, lambda: self._step(episode, action))
        except IdempotencyError as exc:
            raise EpisodeError(str(exc), 422) from exc
        except IdempotencyLost as exc:
            if not episode.infra_error:
                await self.share.update(episode.session_id, infra_error=True)
            episode.infra_error = True
            return lost_answer(episode, _error_result(str(action.get("tool_name") or ""), str(exc), "none"))

    async def _step(self, episode: Episode, action: dict[str, Any]) -> dict[str, Any]:
        if episode.ended is not None:
            raise EpisodeError(f"simroute: episode {episode.id!r} has ended ({episode.ended})", 409)
        kind = action.get("type")
        if kind not in ("call_tool", "list_tools"):
            raise EpisodeError(f"simroute: an action's type is 'call_tool' or 'list_tools', got {kind!r}", 422)
        tool_name, arguments = action.get("tool_name"), action.get("arguments") or {}
        if kind == "call_tool" and (not isinstance(tool_name, str) or not isinstance(arguments, dict)):
            raise EpisodeError("simroute: a call_tool action has a string 'tool_name' and an object 'arguments'", 422)
        started = time.perf_counter()
        episode.steps, ended = await self.share.step(episode.session_id, episode.steps)
        if ended is not None:  # ended by another replica (closed there, or reaped)
            episode.ended = ended
            raise EpisodeError(f"simroute: episode {episode.id!r} has ended ({ended})", 409)
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
        if failed and not episode.infra_error:
            await self.share.update(episode.session_id, infra_error=True)
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
        scope = episode.session.episode.scope if episode.session.episode is not None else None
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
        await self.share.update(episode.session_id, reward=reward)
        await self._remark(episode, "verify", f"verifier {name!r}: reward {reward:g}", {"reward": reward, "verifier": name})
        return reward

    async def close(self, episode: Episode) -> None:
        """Idempotent: closing an ended episode forgets it."""
        if episode.ended is None:
            await self.runtime.sessions.close(episode.session_id, "closed")
        await self.share.update(episode.session_id, ended=episode.ended or "closed", forgotten=True)
        self._episodes.pop(episode.session_id, None)

    async def _session_closed(self, session_id: str, reason: str) -> None:
        await self.http.close(session_id)
        episode = self._episodes.get(session_id)
        if episode is None or episode.ended is not None:
            return
        episode.ended = reason
        self._forget_oldest_ended()
        if reason != "stopped":  # a replica stopping leaves its shared episodes to the others
            row = await self.share.load(session_id) if reason == "reaped" and self.share.shared else None
            if row is None or row.replica == self.runtime.replica.identity:  # not reaped here while another replica steps it
                await self.share.update(session_id, ended=reason)
        if reason == "reaped":  # stays readable (state) until the client closes it, then forgotten
            idle = episode.session.idle_ttl_s or self.runtime.sessions.idle_ttl_s
            await self._remark(
                episode, "close", f"episode {episode.id} reaped after {idle:g}s idle; its sandbox, browser and upstreams were freed"
            )
        else:
            await self._remark(episode, "close", f"episode {episode.id} {reason}")

    def _forget_oldest_ended(self) -> None:
        ended = [key for key, episode in self._episodes.items() if episode.ended is not None]
        for key in ended[: max(0, len(ended) - ENDED_KEPT)]:  # dicts keep opening order: oldest first
            del self._episodes[key]

    async def _remark(self, episode: Episode, tool: str, text: str, structured: dict[str, Any] | None = None) -> None:
        call = Call("episode", "simroute", tool, {"episode_id": episode.id}, episode.session_id)
        await self.runtime.engine.remark(call, episode.session, policy="episodes", text=text, structured=structured)


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
