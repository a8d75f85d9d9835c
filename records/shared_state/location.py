"""Where the configured record store lives: a Redis server (shared by router
replicas) or a SQLite file (one router), and the files kept beside it. The one
place that reads `store.url`'s kind; the rest of the router asks `shared`."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit

if TYPE_CHECKING:
    from records.shared_state.deployment import SharedState
    from records.store.redis.store import RedisStore
    from records.store.sqlite.store import SQLiteStore


@dataclass(frozen=True, slots=True)
class StoreLocation:
    redis_url: str | None  # None: the embedded SQLite store
    sqlite_path: Path  # the SQLite file, resolved (unused with Redis)
    base_dir: Path  # the config file's folder: a Redis store's local files go under it
    max_log: int = 1_000_000
    synchronous: Literal["normal", "full"] = "normal"
    busy_timeout_ms: int = 100

    @property
    def shared(self) -> bool:
        """True: the store is Redis, its state shared by every replica using it."""
        return self.redis_url is not None

    @property
    def store_path(self) -> Path:
        """The SQLite file (or, with a Redis store, where its local files go: the spool, the key)."""
        return self.base_dir / ".simroute" / "redis.db" if self.redis_url is not None else self.sqlite_path

    @property
    def spool_path(self) -> Path:
        """Where records the store could not take wait (fsynced) until it answers again."""
        if self.redis_url is None:
            return self.store_path.with_suffix(".spool.jsonl")
        from records.store.redis.base import parse_redis_url

        host, port, db = parse_redis_url(self.redis_url)
        return self.base_dir / ".simroute" / f"redis-{host}-{port}-{db}.spool.jsonl"

    @property
    def name(self) -> str:
        """The store as a person names it: its Redis URL or its SQLite file."""
        return self.redis_url if self.redis_url is not None else str(self.store_path)

    def exists(self) -> bool:
        """Whether records may be there to read: a Redis server is asked when opened;
        a SQLite file exists once a router wrote to it."""
        return self.redis_url is not None or self.store_path.exists()

    def open_store(self, *, read_only: bool = False) -> RedisStore | SQLiteStore:
        """The store (not yet opened)."""
        if self.redis_url is not None:
            from records.store.redis.store import RedisStore

            return RedisStore(self.redis_url, max_log=self.max_log)
        from records.store.sqlite.store import SQLiteStore

        return SQLiteStore(
            self.store_path, synchronous=self.synchronous, busy_timeout_ms=self.busy_timeout_ms, read_only=read_only
        )

    def shared_state(self, store: object) -> SharedState:
        """Each kind of shared state, for `store` (opened from this location)."""
        from records.shared_state.deployment import SharedState

        return SharedState(store, shared=self.shared, local_files=self.store_path)

    def public_source(self) -> dict[str, str]:
        """Where records were read from, for a data card: the SQLite path, or the Redis
        URL without its credentials."""
        if self.redis_url is None:
            return {"store": "sqlite", "path": str(self.store_path)}
        parts = urlsplit(self.redis_url)
        host = parts.hostname or ""
        netloc = host + (f":{parts.port}" if parts.port else "")  # never the password
        return {"store": "redis", "url": parts._replace(netloc=netloc).geturl()}
