"""One episode: an agent session opened by a reset, with its seed, its options, its
steps and its end. Every front door (REST, OpenEnv, MCP per episode, `simroute.Env`) drives
the same object through `EpisodeHost`."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from backends.world_state.session import WorldState
from calls import Session
from router.episodes.options import EpisodeOptions

# simroute's own failure messages start with this: a route, a backend or simroute
# itself failed, not the agent (a denial or an argument error is the agent's).
FAILURE_PREFIX = "simroute:"
# Policies whose refusals are simroute's capacity or failure, not the agent's doing.
INFRA_POLICIES = frozenset({"engine", "sessions"})


@dataclass(slots=True)
class Episode:
    id: str  # as the caller named it (the URL's id)
    token: str | None  # the token that opened it (None without tokens)
    session: Session  # its agent session (id in the token's namespace)
    seed: int | None
    options: EpisodeOptions
    created: float = field(default_factory=time.time)
    steps: int = 0
    # Sticky: once simroute or a backend failed during this episode, training code can
    # tell the episode's outcome from the agent's.
    infra_error: bool = False
    ended: str | None = None  # "closed" or "reaped"
    last_reward: float | None = None
    verifier: str | None = None  # fixed at reset: its options' or episodes.default_verifier

    @property
    def session_id(self) -> str:
        return self.session.id

    @property
    def truncated(self) -> bool:
        return self.options.max_steps is not None and self.steps >= self.options.max_steps

    @property
    def done(self) -> bool:
        """Over: ended (closed, reaped, terminated by its verify) or truncated."""
        return self.truncated or self.ended is not None

    def state(self) -> dict[str, Any]:
        """What `state()` answers on every front door (OpenEnv's `episode_id` and `step_count` included)."""
        return {
            "episode_id": self.id,
            "step_count": self.steps,
            "seed": self.seed,
            "session_id": self.session_id,
            "route": self.options.mode,
            "infra_error": self.infra_error,
            "done": self.done,
            "truncated": self.truncated,
            "ended": self.ended,
            "reward": self.last_reward,
            "verifier": self.verifier,
            "options": self.options.model_dump(exclude_none=True, exclude_defaults=True),
            "created": self.created,
            "world": world.summary() if (world := self.session.find(WorldState)) is not None else {},
        }


def infra_failure(result: dict[str, Any]) -> bool:
    """Whether a tool result (MCP CallToolResult JSON) reports a failure of simroute or
    a backend rather than of the agent: an error of provenance `none` or `sim` whose
    text is simroute's own, or a refusal by a capacity or failure policy."""
    if not result.get("isError"):
        return False
    meta = (result.get("_meta") or {}).get("simroute") or {}
    if meta.get("policy") in INFRA_POLICIES:
        return True
    if meta.get("provenance") not in ("none", "sim", None):
        return False
    texts = [block.get("text", "") for block in result.get("content") or [] if block.get("type") == "text"]
    return any(text.startswith(FAILURE_PREFIX) for text in texts)
