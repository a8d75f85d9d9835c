"""`simroute.Env`: an episode as a gymnasium environment (`simroute/Episode-v0`).

    env = simroute.Env(config="simroute.yaml")                 # in this process
    env = simroute.Env(url="http://127.0.0.1:8765", token=…)   # a simroute serve
    env = gymnasium.make("simroute/Episode-v0", config="simroute.yaml")

    obs, info = env.reset(seed=7, options={"route": "sim"})    # obs: {"tools": [...]} as JSON
    obs, reward, terminated, truncated, info = env.step(
        '{"type": "call_tool", "tool_name": "echo", "arguments": {"text": "hi"}}')
    obs, reward, terminated, truncated, info = env.step({"type": "verify"})

Observations and actions are text (`AnyText`: any unicode). An observation is the
step's observation as JSON: `{"tool_name", "result"}` (the MCP CallToolResult, its
`_meta.simroute` naming provenance and route) or `{"tools": [...]}`. An action is a
JSON object (or a dict): `call_tool`, `list_tools`, or `verify`, which runs the
episode's verifier — its result is the reward and the episode terminates (the server
ends it: `verify` with `terminate: true`). Other steps earn 0.0; `truncated` is the
episode using up its `max_steps` (a tool call is a step, a listing is not). Once
terminated or truncated, `step` raises gymnasium's `ResetNeeded` until `reset`. `info` is the step's
(episode_id, route, provenance, policy, record_id, infra_error, simroute_ms). An
observation longer than the space's bound (`AnyText`'s default, 65,536 characters) is cut
to it, with `info["observation_cut"] = {"length", "kept"}`. An action
that is not one of these answers an error observation with `info["invalid_action"]`,
never an exception: a policy's malformed output is part of its learning. Refusals
that are not the action's doing raise `simroute.EpisodeError` subclasses: capacity at
reset (`CapacityError`), bad reset options, an episode reaped after `ttl_s` idle, a
verify without a verifier.

Reset opens a new episode (closing the previous one) and lists its tools: an agent
cannot act without them, and the listing is cheap (episodes list from the stored tool
snapshot; one request remotely). A listing is no step on any front door: `max_steps` leaves
the agent that many tool calls. The first
observation names the tools but not the episode's id (it is in `info`): a reset with
the same seed and options then gives the same first observation, as gymnasium expects.
A reset without a seed draws the episode's seed from the environment's generator, so
a run seeded once is seeded throughout.
"""

from __future__ import annotations

import json
import os
from os import PathLike
from typing import TYPE_CHECKING, Any, SupportsFloat

import gymnasium as gym
from gymnasium.envs.registration import EnvSpec

from simroute.client import Episode, Episodes
from simroute.errors import InvalidRequestError
from simroute.loop import BackgroundLoop
from simroute.spaces import AnyText

if TYPE_CHECKING:
    from router.config import Config

ENV_ID = "simroute/Episode-v0"
ENTRY_POINT = "simroute.env:Env"
ACTION_TYPES = ("call_tool", "list_tools", "verify")
# Real tools answer differently from one run to the next, and every observation names
# the record it made: the same seed and actions do not give identical observations.
NONDETERMINISTIC = True
_SEEDS = 2**31


class Env(gym.Env[str, str]):
    metadata: dict[str, Any] = {"render_modes": []}
    observation_space: AnyText
    action_space: AnyText

    def __init__(
        self,
        config: str | PathLike[str] | Config | None = None,
        *,
        url: str | None = None,
        token: str | None = None,
        options: dict[str, Any] | None = None,
        timeout_s: float | None = 300.0,
        render_mode: str | None = None,
    ) -> None:
        if render_mode is not None:
            raise ValueError(f"simroute.Env renders nothing (its observations are text): render_mode={render_mode!r}")
        self.observation_space = AnyText()
        self.action_space = AnyText()
        self.options = dict(options or {})  # every reset's, under the reset's own
        self._episodes = Episodes(url=url, config=config, token=token, timeout_s=timeout_s)
        self._episode: Episode | None = None
        self._over = False  # terminated (verified) or truncated: a reset comes next
        self._loop = BackgroundLoop("simroute-env")
        try:
            self._loop.run(self._episodes.start())
        except BaseException:
            self._loop.close()
            raise
        self._closed = False
        # As gymnasium.make would set it: a directly made Env can be made again from its
        # spec (vector environments, gymnasium's checker). `make` sets its own.
        given = {
            "config": os.fspath(config) if isinstance(config, str | PathLike) else config,
            "url": url,
            "token": token,
        }
        kwargs: dict[str, Any] = {key: value for key, value in given.items() if value is not None}
        if options:
            kwargs["options"] = dict(options)
        self.spec = EnvSpec(id=ENV_ID, entry_point=ENTRY_POINT, nondeterministic=NONDETERMINISTIC, kwargs=kwargs)

    @property
    def episode(self) -> Episode | None:
        """The open episode (`episode.id`, `episode.mcp_url`), None before the first reset."""
        return self._episode

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self._close_episode()
        episode_seed = seed if seed is not None else int(self.np_random.integers(_SEEDS))
        merged = {**self.options, **(options or {})}
        self._over = False
        episode = self._episode = self._loop.run(self._episodes.reset(seed=episode_seed, options=merged))
        tools = self._loop.run(episode.list_tools())
        info = {"episode_id": episode.id, "seed": episode_seed, "state": episode.reset_state}
        return self._bounded(as_text({"tools": tools}), info), info

    def step(self, action: str | dict[str, Any]) -> tuple[str, SupportsFloat, bool, bool, dict[str, Any]]:
        episode = self._episode
        if episode is None:
            raise gym.error.ResetNeeded("simroute.Env: reset() opens an episode before step()")
        if self._over:  # as gymnasium expects: no step after terminated or truncated
            raise gym.error.ResetNeeded(
                "simroute.Env: the episode is over (terminated or truncated): reset() before step()"
            )
        parsed = parse_action(action)
        if isinstance(parsed, str):
            return _invalid(parsed)
        if parsed["type"] == "verify":
            reward = self._loop.run(episode.verify(terminate=True))
            state = self._loop.run(episode.state())
            self._over = True
            return as_text({"reward": reward}), reward, True, False, state
        try:
            result = self._loop.run(episode.step(parsed))
        except InvalidRequestError as exc:  # a call_tool without a tool name or with non-object arguments
            return _invalid(exc.message)
        self._over = result.truncated
        return self._bounded(as_text(result.observation), result.info), 0.0, False, result.truncated, result.info

    def _bounded(self, observation: str, info: dict[str, Any]) -> str:
        """The observation within the space's bound: a longer one is cut to it, and
        `info["observation_cut"]` says how long it was (vector environments hold
        `max_length` characters per environment in shared memory)."""
        bound = self.observation_space.max_length
        if len(observation) <= bound:
            return observation
        info["observation_cut"] = {"length": len(observation), "kept": bound}
        return observation[:bound]

    def close(self) -> None:
        """Closes the episode and the runtime (in-process) or the connections (remote); idempotent."""
        if getattr(self, "_closed", True):  # closed, or __init__ failed before it opened anything
            return
        self._closed = True
        try:
            self._close_episode()
        finally:
            try:
                self._loop.run(self._episodes.aclose())
            finally:
                self._loop.close()

    def _close_episode(self) -> None:
        episode, self._episode = self._episode, None
        if episode is not None:
            self._loop.run(episode.close())


def parse_action(action: str | dict[str, Any]) -> dict[str, Any] | str:
    """The action as a dict, or why it is not one (a message for the observation)."""
    if isinstance(action, str):
        try:
            action = json.loads(action)
        except ValueError as exc:
            return f"invalid action: not JSON ({exc})"
    if not isinstance(action, dict):
        return (
            'invalid action: an action is a JSON object, e.g. {"type": "call_tool", "tool_name": "…", "arguments": {}}'
        )
    if action.get("type") not in ACTION_TYPES:
        return f"invalid action: its type is call_tool, list_tools or verify, not {action.get('type')!r}"
    return action


def as_text(observation: Any) -> str:
    return json.dumps(observation, ensure_ascii=False, sort_keys=True)


def _invalid(message: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
    # No episode fields in `info`: the action never reached the episode.
    return as_text({"error": message}), 0.0, False, False, {"invalid_action": True, "error": message}


def register() -> None:
    """`gymnasium.make("simroute/Episode-v0", config=… | url=…)`; once per process."""
    if ENV_ID not in gym.registry:
        gym.register(ENV_ID, entry_point=ENTRY_POINT, nondeterministic=NONDETERMINISTIC)
