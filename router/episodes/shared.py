"""Episodes shared by the replicas of a Redis store, so an episode opened on one
replica is stepped on another (its own died, or a balancer moved it) with the same
seed, options, world and counters; the world model's history and the engine's
per-session state (steps, pins, perturbation call numbers, facts) are shared already.

`LocalEpisodes` (the embedded store, one router) keeps nothing outside the process;
`SharedEpisodes` keeps one row per episode (`shadow/store/redis/episode_rows.py`):
written at reset, its step counter claimed per step, its end and flags updated.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from shadow.store.protocol import StoreError
from shadow.store.redis.episode_rows import RedisEpisodeRows

if TYPE_CHECKING:
    from router.runtime.runtime import Runtime

log = logging.getLogger("simroute.episodes")


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


class EpisodeShare(Protocol):
    shared: bool

    async def create(self, session_id: str, row: EpisodeRow) -> bool:
        """False when the id is taken (on any replica)."""

    async def load(self, session_id: str) -> EpisodeRow | None: ...

    async def step(self, session_id: str, steps: int) -> tuple[int, str | None]:
        """(the episode's step number, why it ended if another replica ended it)."""

    async def update(self, session_id: str, **fields: Any) -> None: ...


class LocalEpisodes:
    shared = False

    async def create(self, session_id: str, row: EpisodeRow) -> bool:
        return True

    async def load(self, session_id: str) -> EpisodeRow | None:
        return None

    async def step(self, session_id: str, steps: int) -> tuple[int, str | None]:
        return steps + 1, None

    async def update(self, session_id: str, **fields: Any) -> None:
        return None


class SharedEpisodes:
    """Redis rows. An unreachable Redis does not stop an episode on its replica: the
    step is counted locally and the row catches up at the next write."""

    shared = True

    def __init__(self, rows: RedisEpisodeRows, replica: str) -> None:
        self.rows = rows
        self.replica = replica

    async def create(self, session_id: str, row: EpisodeRow) -> bool:
        return await self.rows.create(session_id, row.fields())

    async def load(self, session_id: str) -> EpisodeRow | None:
        found = await self.rows.load(session_id)
        return EpisodeRow.of(found) if found is not None and "id" in found else None

    async def step(self, session_id: str, steps: int) -> tuple[int, str | None]:
        try:
            return await self.rows.step(session_id, self.replica, counted=steps)
        except StoreError as exc:
            log.warning("episode step not shared: %s", exc)
            return steps + 1, None

    async def update(self, session_id: str, **fields: Any) -> None:
        stored = {
            name: ("1" if value else "0") if isinstance(value, bool) else ("" if value is None else value) for name, value in fields.items()
        }
        try:
            await self.rows.update(session_id, stored)
        except StoreError as exc:
            log.warning("episode state not shared: %s", exc)


def episode_share(runtime: Runtime) -> EpisodeShare:
    if runtime.config.store.redis_url is None:
        return LocalEpisodes()
    ttl_s = max(86400.0, 2 * runtime.config.episodes.idle_ttl_s)  # an ended episode stays readable a day
    return SharedEpisodes(RedisEpisodeRows(runtime.store, ttl_s=ttl_s), runtime.replica.identity)
