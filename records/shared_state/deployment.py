"""Each kind of shared state for one opened record store: kept in this process with
the embedded store (one router), in Redis with a Redis store (replicas). Built once
from the store's location (`StoreLocation.shared_state`); the Runtime keeps it
(`runtime.shared`) and every part asks it rather than asking whether the store is
Redis."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from calls import SessionSlice
from records.shared_state.adopted_world_model import AdoptedWorldModel, LocalAdoptedWorldModel
from records.shared_state.answers import AliveJudge, IdempotentAnswers, LocalAnswers
from records.shared_state.episode_rows import EpisodeRows, LocalEpisodeRows
from records.shared_state.guard_slots import GuardState, LocalGuardState
from records.shared_state.published_models import LocalPublishedModels, PublishedModels
from records.shared_state.replicas import BackendClaims, LocalBackendClaims, LocalReplicaLeases, ReplicaLeases
from records.shared_state.session_state import LocalSessionState, SessionState

if TYPE_CHECKING:
    from records.shared_state.shadow_stream import ShadowStream


class SharedState:
    def __init__(self, store: Any, *, shared: bool, local_files: Path | None = None) -> None:
        self.store = store
        self.shared = shared  # True: a Redis store, its state seen by every replica
        # The store's file (SQLite), or where a Redis store's local files go: kinds kept in files go beside it.
        self.local_files = local_files or Path(".simroute") / "records.db"

    @property
    def replicas_share_sessions(self) -> bool:
        """Whether other router replicas take turns in this router's agent sessions (a
        balancer may send a session's calls to any of them). A rule of its own, not a kind
        of state: a session's whole history is then in the store, not in this process."""
        return self.shared

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

    def answers(self, *, ttl_s: float, replica: str, alive: AliveJudge) -> IdempotentAnswers:
        """Answers by idempotency key: in the session (one router), or across replicas;
        `replica`: this replica's identity, `alive`: whether another replica lives."""
        if not self.shared:
            return LocalAnswers()
        from records.shared_state.answers_redis import RedisAnswers

        return RedisAnswers(self.store, ttl_s=ttl_s, replica=replica, alive=alive)

    def episode_rows(self, *, ttl_s: float) -> EpisodeRows:
        """The rows another replica takes an episode over from (one router: none kept)."""
        if not self.shared:
            return LocalEpisodeRows()
        from records.shared_state.episode_rows_redis import RedisEpisodeRows

        return RedisEpisodeRows(self.store, ttl_s=ttl_s)

    def replicas(self, *, lease_s: float, claims_ttl_s: float) -> tuple[ReplicaLeases, BackendClaims]:
        """Replica leases and backend claims (one router: no lease, every claim its own)."""
        if not self.shared:
            return LocalReplicaLeases(lease_s=lease_s), LocalBackendClaims()
        from records.shared_state.replicas_redis import RedisBackendClaims, RedisReplicaLeases

        return RedisReplicaLeases(self.store, lease_s=lease_s), RedisBackendClaims(self.store, ttl_s=claims_ttl_s)

    def shadow_stream(self) -> ShadowStream | None:
        """The stream replicas put shadow work on, for `simroute worker` processes; None:
        one router, no stream (it does its shadow work itself)."""
        if not self.shared:
            return None
        from records.shared_state.shadow_stream_redis import RedisShadowStream

        return RedisShadowStream(self.store)

    def shadow_work[T](self, in_process: T, queued: Callable[[ShadowStream], T]) -> T:
        """Who does this router's shadow work: itself (`in_process`, one router) or the
        workers reading the shadow stream (`queued(stream)`, replicas)."""
        stream = self.shadow_stream()
        return in_process if stream is None else queued(stream)

    def published_models(self) -> PublishedModels:
        """Where `simroute reload` publishes the learned router's model (one router: its
        file, which it watches)."""
        if not self.shared:
            return LocalPublishedModels()
        from records.shared_state.published_models_redis import RedisPublishedModels

        return RedisPublishedModels(self.store)

    def adopted_world_model(self) -> AdoptedWorldModel:
        """The world model `simroute tune --adopt` made routers use (one router: a folder
        beside its store, which it polls; replicas: Redis, announced, each replica caching
        the file beside its local files)."""
        if not self.shared:
            return LocalAdoptedWorldModel(self.local_files.with_suffix(".adopted"))
        from records.shared_state.adopted_world_model_redis import RedisAdoptedWorldModel

        return RedisAdoptedWorldModel(self.store, self.local_files.parent / "adopted-world-models")
