"""Episode rows: what a replica needs to take over an episode another replica opened
(its id, token, seed, options, world, counters, end), so an episode opened on one
replica is stepped on another (its own died, or a balancer moved it) with the same
seed, options, world and counters; the world model's history and the engine's
per-session state (steps, pins, perturbation call numbers, facts) are shared already.

`EpisodeRows` is the protocol; `LocalEpisodeRows` (the embedded store, one router)
keeps nothing outside the process; `RedisEpisodeRows` (episode_rows_redis.py) keeps
one row per episode: written at reset, its step counter claimed per step, its end
and flags updated. Which one a router has is decided where the store is opened
(`SharedState.episode_rows`, deployment.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class EpisodeRow:
    """What another replica needs to take an episode over."""

    id: str
    token: str | None
    seed: int | None
    options: dict[str, Any]  # as the reset gave them (parsed again against the config)
    world: dict[str, str]
    created: float
    steps: int = 0
    infra_error: bool = False
    ended: str | None = None
    reward: float | None = None
    replica: str = ""
    forgotten: bool = False  # closed by its client: a 404 from now on

    def fields(self) -> dict[str, str]:
        return {
            "id": self.id,
            "token": json.dumps(self.token),
            "seed": json.dumps(self.seed),
            "options": json.dumps(self.options),
            "world": json.dumps(self.world),
            "created": repr(self.created),
            "steps": str(self.steps),
            "infra_error": "1" if self.infra_error else "0",
            "replica": self.replica,
        }

    @classmethod
    def of(cls, row: dict[str, str]) -> EpisodeRow:
        return cls(
            id=row["id"],
            token=json.loads(row.get("token", "null")),
            seed=json.loads(row.get("seed", "null")),
            options=json.loads(row.get("options", "{}")),
            world=json.loads(row.get("world", "{}")),
            created=float(row.get("created", "0")),
            steps=int(row.get("steps", "0")),
            infra_error=row.get("infra_error") == "1",
            ended=row.get("ended") or None,
            reward=float(row["reward"]) if row.get("reward") else None,
            replica=row.get("replica", ""),
            forgotten=row.get("forgotten") == "1",
        )


class EpisodeRows(Protocol):
    shared: bool  # True: rows every replica reads (another replica's episode may be taken over)

    async def create(self, session_id: str, row: EpisodeRow) -> bool:
        """False when the id is taken (on any replica)."""

    async def load(self, session_id: str) -> EpisodeRow | None: ...

    async def step(self, session_id: str, replica: str, *, counted: int) -> tuple[int, str | None]:
        """Count one step taken on `replica`: (the episode's step number, why it ended if
        another replica ended it); `counted`: the steps this replica knows of."""

    async def update(self, session_id: str, **fields: Any) -> None: ...


class LocalEpisodeRows:
    """One router: nothing is kept outside the process (the episode itself is the row)."""

    shared = False

    async def create(self, session_id: str, row: EpisodeRow) -> bool:
        return True

    async def load(self, session_id: str) -> EpisodeRow | None:
        return None

    async def step(self, session_id: str, replica: str, *, counted: int) -> tuple[int, str | None]:
        return counted + 1, None

    async def update(self, session_id: str, **fields: Any) -> None:
        return None
