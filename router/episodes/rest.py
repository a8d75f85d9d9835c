"""The REST front door of episodes, documented by the OpenAPI document at `/openapi.json`:

    POST   /episodes                  reset: {seed, episode_id, options} → the episode
    GET    /episodes/{id}             its state
    POST   /episodes/{id}/step        an action → {observation, reward, done, info}
                                      (`Idempotency-Key`: a retry is answered once, on any replica)
    GET    /episodes/{id}/state       its state
    POST   /episodes/{id}/verify      {verifier?, terminate?} → {reward} (the verifier fixed at reset)
    POST   /episodes/{id}/recording   {name}: tag its real answers as a named recording
    DELETE /episodes/{id}             close (idempotent)
    POST   /verifiers/reload          import the entry-point verifiers again (also done when their file changes)

The MCP URL of an episode (`/mcp/e/{id}`) is in the reset's answer. A caller's token
(when tokens are on) namespaces its episodes: another token's id is a 404. With a
Redis store any replica answers for any episode (records/shared_state/episode_rows.py).
"""

from __future__ import annotations

from typing import Any, Literal

import orjson
from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field

from records.store.tagging import tag_recording
from router.episodes.host import EpisodeError, EpisodeHost
from router.episodes.verifiers import VerifierError, reload_verifiers
from router.mcp.identity import TOKEN_SCOPE_KEY


class ResetRequest(BaseModel):
    seed: int | None = Field(default=None, description="Fixes the world model's sampling and every seeded decision.")
    episode_id: str | None = Field(default=None, description="Your id for the episode (default: a random one).")
    options: dict[str, Any] | None = Field(
        default=None, description="Servers, channels, route, files, world, recording, ttl_s, max_steps, verifier."
    )


class Action(BaseModel):
    type: Literal["call_tool", "list_tools"] = Field(description="`call_tool` (tool_name, arguments) or `list_tools`.")
    tool_name: str | None = None
    arguments: dict[str, Any] = Field(default={})


class StepInfo(BaseModel):
    episode_id: str
    step: int
    route: str | None = Field(description="real, sim, replay, shadow or deny.")
    provenance: str | None = Field(
        description="Where the observation came from: real, sim, replay or none (simroute's own)."
    )
    policy: str | None
    record_id: str | None
    infra_error: bool = Field(description="True when simroute or a backend failed, not the agent.")
    simroute_ms: float = Field(description="Time the step spent inside simroute (ms).")


class StepResponse(BaseModel):
    observation: dict[str, Any] = Field(description="{tool_name, result: the MCP CallToolResult} or {tools: [...]}.")
    reward: float | None
    done: bool = Field(description="The episode is over: ended, or truncated.")
    truncated: bool = Field(description="The episode used up its max_steps (a tool call is a step; list_tools is not).")
    info: StepInfo


class EpisodeState(BaseModel):
    episode_id: str
    step_count: int
    seed: int | None
    session_id: str
    route: str | None
    infra_error: bool
    done: bool
    truncated: bool = Field(default=False, description="It used up its max_steps.")
    ended: str | None
    reward: float | None
    verifier: str | None = Field(default=None, description="The verifier that scores it, fixed at reset.")
    options: dict[str, Any]
    created: float
    world: dict[str, Any] = Field(
        default={},
        description=(
            "The world state simroute keeps for the episode's simulated side (shell: cwd, exit code, files known)."
        ),
    )


class ResetResponse(BaseModel):
    episode_id: str
    mcp_url: str = Field(description="This episode's tools over MCP (streamable HTTP).")
    observation: dict[str, Any]
    state: EpisodeState


class RecordingRequest(BaseModel):
    name: str = Field(
        min_length=1,
        max_length=128,
        description="The recording's name, which a later reset's `recording` option picks.",
    )


class RecordingResponse(BaseModel):
    episode_id: str
    recording: str
    records: int = Field(description="The episode's records.")
    tagged: int = Field(
        description="Those tagged: its real answers (or replays of them), unperturbed, whole, finished."
    )


class VerifyRequest(BaseModel):
    verifier: str | None = Field(
        default=None, description="The verifier you expect: it is fixed at reset, and another name is refused (422)."
    )
    terminate: bool = Field(
        default=False, description="End the episode with this score (`done` from now on; steps refused)."
    )


class VerifyResponse(BaseModel):
    episode_id: str
    reward: float


def token_in(scope: Any) -> str | None:
    """The caller's token name (TokenGuard put it in the scope); None without tokens."""
    return scope.get("state", {}).get(TOKEN_SCOPE_KEY)


def token_of(request: Any) -> str | None:
    return token_in(request.scope)


def episodes_router(host: EpisodeHost) -> APIRouter:
    api = APIRouter(tags=["episodes"])

    @api.post("/episodes", status_code=201, response_model=ResetResponse, summary="Reset: open an episode")
    async def reset(body: ResetRequest, request: Request, response: Response) -> dict[str, Any]:
        episode = await host.reset(
            token=token_of(request), seed=body.seed, episode_id=body.episode_id, options=body.options
        )
        # Names the new episode for a load balancer, too: it sticks /episodes/<id>/... to this replica.
        response.headers["Location"] = f"/episodes/{episode.id}"
        return {
            "episode_id": episode.id,
            "mcp_url": f"/mcp/e/{episode.id}",
            "observation": {"episode_id": episode.id, "message": "episode ready: list_tools or call_tool"},
            "state": episode.state(),
        }

    @api.get("/episodes/{episode_id}", response_model=EpisodeState, summary="An episode's state")
    @api.get("/episodes/{episode_id}/state", response_model=EpisodeState, summary="An episode's state")
    async def state(episode_id: str, request: Request) -> dict[str, Any]:
        return (await host.refresh(await host.lookup(token_of(request), episode_id))).state()

    @api.post("/episodes/{episode_id}/step", response_model=StepResponse, summary="Take one action")
    async def step(episode_id: str, action: Action, request: Request) -> Response:
        episode = await host.lookup(token_of(request), episode_id)
        # The host's answer as it is (StepResponse documents it): validated again it would
        # cost the hot path ~1 ms a step.
        answer = await host.step(episode, action.model_dump(), idempotency_key=request.headers.get("idempotency-key"))
        return Response(orjson.dumps(answer), media_type="application/json")

    @api.post(
        "/episodes/{episode_id}/verify", response_model=VerifyResponse, summary="Score the episode with its verifier"
    )
    async def verify(episode_id: str, request: Request, body: VerifyRequest | None = None) -> dict[str, Any]:
        episode = await host.lookup(token_of(request), episode_id)
        body = body or VerifyRequest()
        return {
            "episode_id": episode.id,
            "reward": await host.verify(episode, verifier=body.verifier, terminate=body.terminate),
        }

    @api.post(
        "/episodes/{episode_id}/recording",
        response_model=RecordingResponse,
        summary="Tag the episode's real answers as a recording",
    )
    async def recording(episode_id: str, body: RecordingRequest, request: Request) -> dict[str, Any]:
        # Open, ended or closed: its records are in the store under its session either way.
        tagged = await tag_recording(host.parts.mcp.store, host.session_id_of(token_of(request), episode_id), body.name)
        if tagged.records == 0:
            raise EpisodeError(f"simroute: no episode {episode_id!r} has records here", 404)
        return {"episode_id": episode_id, "recording": body.name, "records": tagged.records, "tagged": tagged.tagged}

    @api.post("/verifiers/reload", summary="Import the entry-point verifiers' modules again")
    async def reload(request: Request) -> dict[str, Any]:
        try:
            return {"reloaded": reload_verifiers(host.parts.mcp.config.episodes.verifiers.values())}
        except VerifierError as exc:
            raise EpisodeError(f"simroute: {exc}", 422) from exc

    @api.delete("/episodes/{episode_id}", status_code=204, summary="Close the episode (idempotent)")
    async def close(episode_id: str, request: Request) -> Response:
        try:
            episode = await host.lookup(token_of(request), episode_id)
        except EpisodeError:  # closing what is not open is done already: idempotent
            return Response(status_code=204)
        await host.close(episode)
        return Response(status_code=204)

    return api
