"""An episode step's answer when the request holding its `Idempotency-Key` died with
its replica (the keys themselves: router/mcp/idempotency_keys.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from router.episodes.episode import Episode


def lost_answer(episode: Episode, observation: dict[str, Any]) -> dict[str, Any]:
    """A step's answer when the request holding its key died with its replica."""
    info = {
        "episode_id": episode.id,
        "step": episode.steps,
        "route": None,
        "provenance": "none",
        "policy": "idempotency",
        "record_id": None,
        "infra_error": True,
        "simroute_ms": 0.0,
    }
    return {
        "observation": observation,
        "reward": None,
        "done": episode.done,
        "truncated": episode.truncated,
        "info": info,
    }
