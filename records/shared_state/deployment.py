"""Each kind of shared state for one opened record store: kept in this process with
the embedded store (one router), in Redis with a Redis store (replicas). Built once
from the store's location (`StoreLocation.shared_state`); the Runtime keeps it
(`runtime.shared`) and every part asks it rather than asking whether the store is
Redis."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from calls import SessionSlice
from records.shared_state.episode_rows import EpisodeRows, LocalEpisodeRows
from records.shared_state.guard_slots import GuardState, LocalGuardState
from records.shared_state.session_state import LocalSessionState, SessionState

if TYPE_CHECKING:
    from records.shared_state.answers_redis import RedisAnswers
    from records.shared_state.replicas_redis import RedisBackendClaims, RedisReplicaLeases


class SharedState:
    def __init__(self, store: Any, *, shared: bool) -> None:
        self.store = store
        self.shared = shared  # True: a Redis store, its state seen by every replica

    def session_state(self, *, ttl_s: float, loaded: Sequence[type[SessionSlice]] = ()) -> SessionState:
        """Per-session counters and slices; `loaded`: the slices every call reads."""
        if not self.shared:
            return LocalSessionState()
        from records.shared_state.session_state_redis import RedisSessionState

        return RedisSessionState(self.store, ttl_s=ttl_s, loaded=loaded)

    def guard_slots(self) -> GuardState:
        """The upstream guard's breakers, slots and budgets."""
        if not self.shared:
            return LocalGuardState()
        from records.shared_state.guard_slots_redis import RedisGuardState

        return RedisGuardState(self.store)

    def answers(self, *, ttl_s: float) -> RedisAnswers | None:
        """Answers by idempotency key across replicas; None: kept in the session."""
        if not self.shared:
            return None
        from records.shared_state.answers_redis import RedisAnswers

        return RedisAnswers(self.store, ttl_s=ttl_s)

    def episode_rows(self, *, ttl_s: float) -> EpisodeRows:
        """The rows another replica takes an episode over from (one router: none kept)."""
        if not self.shared:
            return LocalEpisodeRows()
        from records.shared_state.episode_rows_redis import RedisEpisodeRows

        return RedisEpisodeRows(self.store, ttl_s=ttl_s)

    def replicas(self, *, lease_s: float, claims_ttl_s: float) -> tuple[RedisReplicaLeases, RedisBackendClaims] | None:
        """Replica leases and backend claims; None: one router (no leases to judge by)."""
        if not self.shared:
            return None
        from records.shared_state.replicas_redis import RedisBackendClaims, RedisReplicaLeases

        return RedisReplicaLeases(self.store, lease_s=lease_s), RedisBackendClaims(self.store, ttl_s=claims_ttl_s)
