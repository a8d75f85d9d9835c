"""`compare-models --end-to-end`: each held-out call answered as the router's sim route
answers it with the world-state layer on (backends/world_state/simulation.py): from the
session's state, as its real history before the call left it (`state`); from a
training session that made the same calls (`replay-aligned`); else by the model, told
the state the call touches (`model+state`) or not (`model`).

Held-out sessions are never a source of answers: their recordings are what the answers
are measured against (`TrainingSideReplay`), as the world model's examples come from the
training side only (router/reports/compare_run.py)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from backends.replay import ReplayBackend
from backends.world_state.session import WorldState
from calls import Observation, Turn
from records.store.protocol import RecordStore
from router.config import Config
from router.runtime.simulated_side import with_world_state


class TrainingSideReplay:
    """The replay backend's keys and namespaces, with the held-out sessions' recordings
    never visible (aligned replay, identical answers and the HTTP recordings all ask
    `visible` before they serve or learn a record)."""

    def __init__(self, replay: ReplayBackend, withheld: Callable[[str], bool]) -> None:
        self.replay = replay
        self.withheld = withheld

    def __getattr__(self, name: str) -> Any:
        return getattr(self.replay, name)

    def visible(self, session_id: str, recorded_in: str) -> bool:
        return not self.withheld(recorded_in) and self.replay.visible(session_id, recorded_in)


def end_to_end(config: Config, store: RecordStore, simulator: Any, keys: ReplayBackend, held_out: Any) -> Any:
    """`simulator` behind the world-state layer as the router builds it, reading the
    training side's recordings only."""
    # Duck-typed: it is the replay backend in every respect the layer reads but one.
    training_side = cast(ReplayBackend, TrainingSideReplay(keys, held_out.withheld))
    return with_world_state(config, store, simulator, training_side)


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
