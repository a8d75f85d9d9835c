"""What every part of the Redis store stands on: the URL, the client (no retries,
short deadlines: an unreachable Redis is the spool's business), the Lua scripts,
key naming, and the translation of Redis's errors into `StoreError` at this
boundary (`_run`). `key`, `run` and `bodies` are the same public methods for the kinds of
shared state kept beside the store (records/shared_state/: the shadow stream and the
learned model's publication among them), which live outside this package. The store's
other parts (writes, reads, maintenance, the noise table) are mixins of this base;
`store.py` puts them together as `RedisStore`."""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Self
from urllib.parse import urlsplit

from redis.exceptions import RedisError

from calls import snapshot_digest
from records.store.group_commit import GroupCommit
from records.store.protocol import StoreError
from records.store.redis.scripts import PRUNE, UPSERT, WRITES_BETWEEN

# What a failed Redis command raises: the client's own errors, and the socket's.
REDIS_ERRORS = (RedisError, OSError, TimeoutError)


def parse_redis_url(url: str) -> tuple[str, int, int]:
    """(host, port, db) of `redis://host:port/db`; raises ValueError naming the problem."""
    parts = urlsplit(url)
    if parts.scheme not in ("redis", "rediss") or not parts.hostname:
        raise ValueError(f"expected redis://host:port/db, got {url!r}")
    db = parts.path.strip("/") or "0"
    if not db.isdigit():
        raise ValueError(f"the database in {url!r} must be a number")
    return parts.hostname, parts.port or 6379, int(db)


class RedisBase(ABC):
    def __init__(self, url: str, *, prefix: str = "simroute", timeout_s: float = 2.0, max_log: int = 1_000_000) -> None:
        self.url = url
        self.host, self.port, self.db = parse_redis_url(url)
        self.prefix = prefix
        self.timeout_s = timeout_s
        self.max_log = max_log
        self._client: Any = None
        self._upsert: Any = None
        self._prune: Any = None
        self._writes_between: Any = None
        self._snapshots: dict[str, list[dict[str, Any]]] = {}
        self._group = GroupCommit(self._upsert_many)

    def __repr__(self) -> str:
        return f"RedisStore({self.host}:{self.port}/{self.db})"

    @property
    def spool_name(self) -> str:
        """The spool file's name for records this store could not take."""
        return f"redis-{self.host}-{self.port}-{self.db}.spool.jsonl"

    # --- plumbing ----------------------------------------------------------------------------

    async def open(self) -> Self:
        if self._client is not None:
            return self
        import redis.asyncio as redis
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff

        # No retries and short deadlines: an unreachable Redis is the spool's business.
        self._client = redis.Redis(
            host=self.host,
            port=self.port,
            db=self.db,
            socket_timeout=self.timeout_s,
            socket_connect_timeout=self.timeout_s,
            retry=Retry(NoBackoff(), 0),
            decode_responses=True,
        )
        self._upsert = self._client.register_script(UPSERT)
        self._prune = self._client.register_script(PRUNE)
        self._writes_between = self._client.register_script(WRITES_BETWEEN)
        try:
            self._snapshots = {
                server: json.loads(tools)
                for server, tools in (await self._client.hgetall(self._key("snapshots"))).items()
            }
        except REDIS_ERRORS:
            pass  # open anyway: records spool until Redis answers; snapshots load on the next save
        return self

    def _key(self, *parts: str) -> str:
        return ":".join((self.prefix, *parts))

    async def _run[T](self, what: str, work: Callable[[Any], Awaitable[T]]) -> T:
        """`work(client)`, with Redis's errors (and the connection's: OSError, timeouts)
        raised as `StoreError`; anything else is a bug and propagates as it is."""
        if self._client is None:
            raise StoreError(f"{self!r} is not open")
        try:
            return await work(self._client)
        except REDIS_ERRORS as exc:
            raise StoreError(f"{what} failed on Redis {self.host}:{self.port}/{self.db}: {exc}") from exc

    async def _command(self, what: str, command: str, *args: Any) -> Any:
        """One Redis command by name, `client.<command>(*args)`, through `_run`."""
        return await self._run(what, lambda r: getattr(r, command)(*args))

    # --- the public methods, for the shared state kept outside this package -------------------

    def key(self, *parts: str) -> str:
        """A key in this store's namespace (`<prefix>:<part>:...`)."""
        return self._key(*parts)

    async def run[T](self, what: str, work: Callable[[Any], Awaitable[T]]) -> T:
        """`work(client)`, Redis's errors raised as `StoreError` naming `what`."""
        return await self._run(what, work)

    async def bodies(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        """The stored records with these ids (as JSON objects), those still kept."""
        return await self._bodies(ids)

    async def _bodies(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        if not ids:
            return []
        bodies = await self._run("reading records", lambda r: r.mget([self._key("rec", i) for i in ids]))
        return [json.loads(body) for body in bodies if body]

    @abstractmethod
    async def _upsert_many(self, rows: Sequence[dict[str, Any]]) -> None:
        """Write `rows` in one pipeline (`writes.RecordWrites`)."""

    # --- tool snapshots: stored, and held in memory ---------------------------------------

    async def save_tool_snapshot(self, server: str, tools: list[dict[str, Any]]) -> str | None:
        body, digest = snapshot_digest(tools)
        previous = self._snapshots.get(server)
        await self._run("writing a tool snapshot", lambda r: r.hset(self._key("snapshots"), server, body))
        self._snapshots[server] = json.loads(body)
        if previous is None:
            return None
        old = snapshot_digest(previous)[1]
        return old if old != digest else None

    def tool_snapshot(self, server: str) -> list[dict[str, Any]] | None:
        return self._snapshots.get(server)

    async def load_tool_snapshot(self, server: str) -> list[dict[str, Any]] | None:
        return self._snapshots.get(server)

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()
