"""`compare-models --end-to-end`: each held-out call answered as the router's sim route
answers it with the world-state layer on (backends/world_state/simulation.py): from the
session's state, as its real history before the call left it (`state`); from a
training session that made the same calls (`replay-aligned`); else by the model, told
the state the call touches (`model+state`) or not (`model`).

Held-out sessions are never a source of answers: their recordings are what the answers
are measured against, so the replay keys the layer reads withhold them
(router/runtime/example_lookup.py `replay_keys`), as the world model's examples do.
This module holds the other piece: each held-out call's world state."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from backends.world_state.session import WorldState
from calls import Observation, Turn


class HistoryStates:
    """Each held-out call's world state: what its session's real history before the call
    taught (as the live layer learns every answer the agent got). Learnt once per session
    as its calls advance; each call gets a copy, since a `state` answer applies its
    effects to the state it is given."""

    def __init__(self) -> None:
        self._learnt: dict[str, tuple[WorldState, int]] = {}

    def before(self, session: str, turns: Sequence[Turn], times: Sequence[float], seen: int) -> WorldState:
        state, learnt = self._learnt.get(session, (WorldState(), 0))
        if learnt > seen:  # an earlier call than the last asked for: learn from the start
            state, learnt = WorldState(), 0
        state.relearn(_recorded(turns[learnt:seen], times[learnt:seen]))
        self._learnt[session] = (state, seen)
        return state.copy()


def _recorded(turns: Sequence[Turn], times: Sequence[float]) -> list[tuple[Any, Observation, bool, float]]:
    return [(turn.call, turn.observation, turn.perturbed, at) for turn, at in zip(turns, times, strict=True)]
