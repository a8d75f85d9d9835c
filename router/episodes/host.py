"""The episodes of one server: reset, step, state, verify, close, behind every front door.

An episode is an agent session opened explicitly (`SessionRegistry.open`): the same
reaper frees it when idle, the same cap counts it, and every step goes through the
same per-call work and engine an agent's call goes through — in process
(router/mcp/in_process.py), with the episode's session as the caller
(`EPISODE_SESSION`). So a step is routed, recorded and answered exactly as the agent's
call would be, and the host has its record (route, provenance, record id) as values.
The host is handed the parts it works with (`EpisodeParts`, router/runtime/parts.py),
never the runtime that assembles them.

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
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import mcp_types
from fastmcp.tools.base import Tool

from calls import Call, EpisodeSetup, Route, Session, WorldDocuments
from policies.perturbation import PerturbationState
from records.shared_state.answers import IdempotencyError, IdempotencyLost
from records.shared_state.episode_rows import EpisodeRow
from router.auth import namespaced
from router.engine.sessions import SessionLimitError
from router.episodes import http_tool
from router.episodes.episode import Episode
from router.episodes.errors import EpisodeCapacityError, EpisodeError
from router.episodes.initial_files import write_initial_files
from router.episodes.lost_answers import lost_answer
from router.episodes.options import EpisodeOptions
from router.episodes.routes import EpisodeRoutes
from router.episodes.steps import EpisodeSteps, error_result
from router.episodes.verifiers import VerifierError, run_verifier
from router.episodes.workspace_fork import fork_workspace
from router.mcp.episode_front_door import EpisodeFrontDoor
from router.mcp.idempotency_keys import answered_once_by_key
from router.mcp.retries import RetriedRequests

if TYPE_CHECKING:
    from router.mcp.in_process import SimrouteServer
    from router.runtime.parts import EpisodeParts

log = logging.getLogger("simroute.episodes")

# Episodes that ended without a close (reaped) stay readable until closed; past this
# many, the oldest are forgotten (clients that never close must not grow memory).
ENDED_KEPT = 4096
_EPISODE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
SESSION_PREFIX = "episode-"


class EpisodeHost:
    def __init__(self, parts: EpisodeParts, server: SimrouteServer) -> None:
        self.parts = parts
        self.server = server
        self.routes = EpisodeRoutes(parts)
        self.http = http_tool.EpisodeHttp(parts.http, parts.mcp.config)
        self._episodes: dict[str, Episode] = {}  # by session id
        self.share = parts.episode_rows
        self.once = answered_once_by_key(parts.mcp)
        self.steps = EpisodeSteps(self)
        parts.mcp.sessions.closed_listeners.append(self._session_closed)

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
        taken over here; EpisodeError(404) when no replica knows it (one router keeps
        no rows: its own episodes are all it knows)."""
        try:
            return self.get(token, episode_id)
        except EpisodeError:
            if not _EPISODE_ID.fullmatch(episode_id):
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
        parsed = EpisodeOptions.parse(row.options, self.parts.mcp.config)
        session = self._session(session_id, parsed, row.seed)
        session.slice(WorldDocuments).by_channel = dict(row.world)
        episode = Episode(
            row.id,
            row.token,
            session,
            row.seed,
            parsed,
            created=row.created,
            steps=row.steps,
            verifier=self._verifier(parsed),
        )
        episode.infra_error, episode.ended, episode.last_reward = row.infra_error, row.ended, row.reward
        if episode.ended is None:
            try:
                self.parts.mcp.sessions.open(session)
            except SessionLimitError as exc:
                raise EpisodeCapacityError(f"simroute: at capacity: {exc}") from exc
            except ValueError as exc:  # closed here before: its end is this replica's word
                raise EpisodeError(f"simroute: episode {row.id!r} has ended on this replica", 409) from exc
        self._episodes[session_id] = episode
        log.info("episode %s taken over from replica %s at step %d", row.id, row.replica or "?", row.steps)
        return episode

    def _session(self, session_id: str, parsed: EpisodeOptions, seed: int | None) -> Session:
        config = self.parts.mcp.config
        session = Session(id=session_id, idle_ttl_s=parsed.ttl_s or config.episodes.idle_ttl_s, seed=seed)
        session.slices[EpisodeSetup] = EpisodeSetup(
            self.routes.chain(parsed),
            replay_from=parsed.recording,
            scope=parsed.scope(config),
            on_miss=parsed.on_miss or config.episodes.on_miss,
            record_as=parsed.record_as,
        )
        session.slices[WorldDocuments] = WorldDocuments(
            {"*": world} if (world := parsed.world_text(config)) is not None else {}
        )
        session.slices[RetriedRequests] = RetriedRequests()  # a retried request is answered once
        # Its calls over MCP (/mcp/e/{id}) are its steps, and it lists http_request there too.
        session.slices[EpisodeFrontDoor] = EpisodeFrontDoor(self, session_id)
        plan = parsed.perturbation_plan(config)  # drawn from the episode's seed
        if plan is not None:
            session.slices[PerturbationState] = PerturbationState(plan)
        return session

    def _verifier(self, parsed: EpisodeOptions) -> str | None:
        """The episode's verifier, fixed at its reset."""
        return parsed.verifier or self.parts.mcp.config.episodes.default_verifier

    async def refresh(self, episode: Episode) -> Episode:
        """The episode as the replicas share it (its steps, flags and end), for `state`."""
        row = await self.share.load(episode.session_id)  # (one router keeps no rows: None)
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
        self,
        *,
        token: str | None = None,
        seed: int | None = None,
        episode_id: str | None = None,
        options: dict[str, Any] | None = None,
    ) -> Episode:
        """Open an episode. Raises EpisodeOptionsError (bad options, 422), EpisodeError
        (an id in use, 409), EpisodeCapacityError (429)."""
        config = self.parts.mcp.config
        parsed = EpisodeOptions.parse(options, config)
        if seed is None:  # a seed of its own: episodes differ, and the state says how to rerun one
            seed = secrets.randbelow(2**31)
        if episode_id is None:
            episode_id = uuid.uuid4().hex
        elif not _EPISODE_ID.fullmatch(episode_id):
            raise EpisodeError(
                f"simroute: episode_id {episode_id!r} is not 1-128 letters, digits, '.', '_' or '-'", 422
            )
        cap = config.episodes.max_open_per_token
        if self.open_episodes(token) >= cap:
            raise EpisodeCapacityError(
                f"simroute: at capacity: {cap} episodes are open for this token (episodes.max_open_per_token); "
                "close one and reset again"
            )
        session = self._session(self.session_id_of(token, episode_id), parsed, seed)
        exists = EpisodeError(f"simroute: episode {episode_id!r} exists already (ids are not reused)", 409)
        if (
            self.parts.mcp.sessions.find(session.id) is not None
            or self.parts.mcp.sessions.ended(session.id) is not None
        ):
            raise exists
        world = session.slice(WorldDocuments).by_channel
        row = EpisodeRow(
            episode_id, token, seed, options or {}, dict(world), time.time(), replica=self.parts.mcp.replica.identity
        )
        if not await self.share.create(session.id, row):  # another replica's episode
            raise exists
        try:
            self.parts.mcp.sessions.open(session)
        except SessionLimitError as exc:
            await self.share.update(session.id, ended="refused", forgotten=True)
            raise EpisodeCapacityError(f"simroute: at capacity: {exc}") from exc
        episode = self._episodes[session.id] = Episode(
            episode_id, token, session, seed, parsed, created=row.created, verifier=self._verifier(parsed)
        )
        await fork_workspace(
            self.parts.mcp, episode
        )  # options.fork: a copy of a workspace folder, under its initial files
        await write_initial_files(self.parts.mcp, episode)
        if world != row.world or episode.infra_error:  # the files told to a simulated shell
            await self.share.update(session.id, world=json.dumps(world), infra_error=episode.infra_error)
        await self.parts.mcp.engine.remark(
            Call(
                "episode",
                "simroute",
                "reset",
                {"episode_id": episode_id, "seed": seed, "options": options or {}},
                session.id,
            ),
            session,
            policy="episodes",
            text=f"episode {episode_id} reset (seed {seed})",
        )
        return episode

    # --- steps ------------------------------------------------------------------------

    async def step(
        self, episode: Episode, action: dict[str, Any], *, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        """One action (`call_tool`, a step; or `list_tools`, none):
        {observation, reward, done, truncated, info} (steps.py).
        With an idempotency key, a retry is answered once (router/mcp/idempotency_keys.py)."""
        if idempotency_key is None:
            return await self.steps.action(episode, action)
        try:
            return await self.once.run(
                episode.session, idempotency_key, action, lambda: self.steps.action(episode, action)
            )
        except IdempotencyError as exc:
            raise EpisodeError(str(exc), 422) from exc
        except IdempotencyLost as exc:
            if not episode.infra_error:
                await self.share.update(episode.session_id, infra_error=True)
            episode.infra_error = True
            return lost_answer(episode, error_result(str(action.get("tool_name") or ""), str(exc), "none"))

    def http_in_play(self, episode: Episode) -> bool:
        scope = episode.session.episode.scope if episode.session.episode is not None else None
        return self.http.available and (scope is None or ("http", "http") in scope)

    def http_tools(self, session_id: str) -> list[Tool]:
        """The episode's tools of its own beside the MCP ones (`http_request`), on every front door."""
        episode = self._episodes.get(session_id)
        return [http_tool.TOOL] if episode is not None and self.http_in_play(episode) else []

    async def mcp_step(
        self, session_id: str, call: Call, produce: Callable[[], Awaitable[mcp_types.CallToolResult]]
    ) -> mcp_types.CallToolResult:
        episode = self._episodes.get(session_id)
        if episode is None:  # forgotten meanwhile: /mcp/e/{id} refuses it from now on
            return await produce()
        return await self.steps.mcp_call(episode, call, produce)

    # --- state, verify, close ---------------------------------------------------------

    async def verify(self, episode: Episode, *, verifier: str | None = None, terminate: bool = False) -> float:
        """The episode's reward by the verifier fixed at its reset. `verifier`: a name
        the caller expects (another one is refused, 422); `terminate`: the episode ends
        with its score (its session freed; `done` from now on, further steps refused)."""
        name = episode.verifier
        if name is None:
            raise EpisodeError(
                "simroute: this episode has no verifier: it is fixed at reset "
                "(reset with options.verifier, or set episodes.default_verifier)",
                422,
            )
        if verifier is not None and verifier != name:
            raise EpisodeError(
                f"simroute: this episode's verifier is fixed at reset ({name!r}), and the request names {verifier!r}: "
                "reset with options.verifier to score with another",
                422,
            )
        configured = self.parts.mcp.config.episodes.verifiers[name]
        try:
            reward = await run_verifier(name, configured, episode, self.parts.mcp)
        except VerifierError as exc:
            await self._remark(episode, "verify", f"verifier {name!r} failed: {exc}")
            raise EpisodeError(f"simroute: {exc}", 422) from exc
        episode.last_reward = reward
        await self.share.update(episode.session_id, reward=reward)
        await self._remark(
            episode, "verify", f"verifier {name!r}: reward {reward:g}", {"reward": reward, "verifier": name}
        )
        if terminate and episode.ended is None:
            await self.parts.mcp.sessions.close(episode.session_id, "terminated")
        return reward

    async def close(self, episode: Episode) -> None:
        """Idempotent: closing an ended episode forgets it. The episode ends (its record
        written, its place under the token's cap freed) before its sandbox, browser and
        upstreams are torn down: a client that closes and resets at once is not refused
        while an upstream process is still exiting."""
        if episode.ended is None:
            await self._session_closed(episode.session_id, "closed")
            await self.parts.mcp.sessions.close(episode.session_id, "closed")
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
            row = await self.share.load(session_id) if reason == "reaped" else None
            if (
                row is None or row.replica == self.parts.mcp.replica.identity
            ):  # not reaped here while another replica steps it
                await self.share.update(session_id, ended=reason)
        if reason == "reaped":  # stays readable (state) until the client closes it, then forgotten
            idle = episode.session.idle_ttl_s or self.parts.mcp.sessions.idle_ttl_s
            await self._remark(
                episode,
                "close",
                f"episode {episode.id} reaped after {idle:g}s idle; its sandbox, browser and upstreams were freed",
            )
        else:
            await self._remark(episode, "close", f"episode {episode.id} {reason}")

    def _forget_oldest_ended(self) -> None:
        ended = [key for key, episode in self._episodes.items() if episode.ended is not None]
        for key in ended[: max(0, len(ended) - ENDED_KEPT)]:  # dicts keep opening order: oldest first
            del self._episodes[key]

    async def _remark(self, episode: Episode, tool: str, text: str, structured: dict[str, Any] | None = None) -> None:
        call = Call("episode", "simroute", tool, {"episode_id": episode.id}, episode.session_id)
        route = Route.VERIFY if tool == "verify" else Route.CLOSE  # its own route: nothing was routed, nothing refused
        await self.parts.mcp.engine.remark(
            call, episode.session, policy="episodes", text=text, structured=structured, route=route
        )
