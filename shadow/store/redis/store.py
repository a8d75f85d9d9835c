"""The record store at scale: Redis, shared by many router replicas.

Each record is one JSON value (`<prefix>:rec:<id>`) plus index entries, all
written by one Lua script per record (one round trip, atomic): an event stream
with a retention cap (`<prefix>:log`, XADD MAXLEN ~), a session's records by
step, replay sources by key (most recent session first), occurrences per
(key, session), named recordings, capped per-tool and per-call-key example
sets, the pending and started sets, per server the calls that may have written
to it (by the end of their span: shadow/store/server_writes.py), and aggregates
counted at write time for the dashboard. Every command has a deadline (socket
timeouts) and no retries: when Redis is unreachable, `StoreError` sends records
to the spool, which flushes them in order when it returns.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

from router.types import Observation
from shadow.compare.canonical import snapshot_digest, tool_key
from shadow import record_json
from shadow.store.group_commit import GroupCommit
from shadow.compare.noise import NoiseStats
from shadow.records import Record
from shadow.store.server_writes import write_span
from shadow.store.redis import dashboard as dashboard
from shadow.store.redis.dashboard import SEP
from shadow.store.protocol import RecordFilter, RecordingInfo, ReplayRow, ReplaySource, StoreError
from shadow.store.redis.scripts import PRUNE, UPSERT, WRITES_BETWEEN

# Real records kept per tool and per call key for the world model's examples.
EXAMPLES_PER_KEY = 200
_FINAL = ("complete", "pending", "skipped", "interrupted")


def parse_redis_url(url: str) -> tuple[str, int, int]:
    """(host, port, db) of `redis://host:port/db`; raises ValueError naming the problem."""
    parts = urlsplit(url)
    if parts.scheme not in ("redis", "rediss") or not parts.hostname:
        raise ValueError(f"expected redis://host:port/db, got {url!r}")
    db = parts.path.strip("/") or "0"
    if not db.isdigit():
        raise ValueError(f"the database in {url!r} must be a number")
    return parts.hostname, parts.port or 6379, int(db)


class RedisStore:
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

    async def open(self) -> RedisStore:
        if self._client is not None:
            return self
        import redis.asyncio as redis
        from redis.asyncio.retry import Retry
        from redis.backoff import NoBackoff

        # No retries and short deadlines: an unreachable Redis is the spool's business.
        self._client = redis.Redis(
            host=self.host, port=self.port, db=self.db, socket_timeout=self.timeout_s, socket_connect_timeout=self.timeout_s,
            retry=Retry(NoBackoff(), 0), decode_responses=True,
        )
        self._upsert = self._client.register_script(UPSERT)
        self._prune = self._client.register_script(PRUNE)
        self._writes_between = self._client.register_script(WRITES_BETWEEN)
        try:
            self._snapshots = {server: json.loads(tools) for server, tools in (await self._client.hgetall(self._key("snapshots"))).items()}
        except Exception as exc:
            # Open anyway: records spool until Redis answers; snapshots load on the next save.
            if not _is_redis_error(exc):
                raise
        return self

    def _key(self, *parts: str) -> str:
        return ":".join((self.prefix, *parts))

    async def _run(self, what: str, work):
        if self._client is None:
            raise StoreError(f"{self!r} is not open")
        try:
            return await work(self._client)
        except Exception as exc:
            if _is_redis_error(exc):
                raise StoreError(f"{what} failed on Redis {self.host}:{self.port}/{self.db}: {exc}") from exc
            raise

    async def _bodies(self, ids: Sequence[str]) -> list[dict[str, Any]]:
        if not ids:
            return []
        bodies = await self._run("reading records", lambda r: r.mget([self._key("rec", i) for i in ids]))
        return [json.loads(body) for body in bodies if body]

    # --- writing ------------------------------------------------------------------------------

    async def upsert(self, rows: Sequence[dict[str, Any]]) -> None:
        if len(rows) == 1:  # one record: shares a pipeline with records written at the same time
            await self._group.write(rows[0])
            return
        await self._upsert_many(rows)

    async def _upsert_many(self, rows: Sequence[dict[str, Any]]) -> None:
        async def work(r):
            if len(rows) == 1:
                await self._upsert(args=self._args(rows[0]))
                return
            pipe = r.pipeline(transaction=False)
            for row in rows:
                await self._upsert(args=self._args(row), client=pipe)
            await pipe.execute()

        await self._run("writing records", work)

    def _args(self, row: dict[str, Any]) -> list[Any]:
        return [
            self.prefix, row["id"], record_json.dumps(row), row["ts"], row["session"], row["step"],
            row.get("replay_key") or row["call_key"], int(row.get("occurrence") or 0), row.get("recording") or "",
            row["provenance"], row["status"], row["call_key"], tool_key(row["channel"], row["server"], row["tool"]),
            row["channel"], row["route"], self.max_log, EXAMPLES_PER_KEY,
            SEP.join((row["channel"], row["server"], row["tool"])),
            "" if row.get("divergence") is None else repr(float(row["divergence"])), row.get("divergence_kind") or "none",
            SEP.join((row["channel"], row["server"])), _score(write_span(row)),
        ]

    def _prune_args(self, row: dict[str, Any]) -> list[Any]:
        return [
            self.prefix, row["id"], row["ts"], row["session"], row.get("replay_key") or row["call_key"], str(row.get("occurrence") or 0),
            tool_key(row["channel"], row["server"], row["tool"]), row["channel"], row["route"], row["provenance"],
            SEP.join((row["channel"], row["server"], row["tool"])),
            "" if row.get("divergence") is None else repr(float(row["divergence"])), row.get("divergence_kind") or "none",
            SEP.join((row["channel"], row["server"])),
        ]

    async def writable(self) -> bool:
        try:
            return bool(await self._run("ping", lambda r: r.ping()))
        except StoreError:
            return False

    async def interrupt_orphans(self, owner_is_alive: Callable[[str], bool]) -> int:
        ids = await self._run("reading started records", lambda r: r.zrange(self._key("started"), 0, -1))
        gone = [row for row in await self._bodies(ids) if not row.get("owner") or not owner_is_alive(row["owner"])]
        for row in gone:
            row["status"] = "interrupted"
            row["note"] = "; ".join(n for n in (row.get("note"), "interrupted: its router stopped before the call finished") if n)
        if gone:
            await self.upsert(gone)
        return len(gone)

    async def rekey(self, scheme: str, replay_key_of: Callable[[dict[str, Any]], str]) -> int:
        """Once per replay-key configuration change: every record is read (O(N)), the
        changed ones re-indexed with their occurrences recounted per session."""
        marker = self._key("key_scheme")
        if await self._run("reading the key scheme", lambda r: r.get(marker)) == scheme:
            return 0
        ids = await self._run("listing records", lambda r: r.zrange(self._key("all"), 0, -1))
        changed_sessions: set[str] = set()
        for start in range(0, len(ids), 1000):
            for row in await self._bodies(ids[start : start + 1000]):
                if row.get("key_scheme") != scheme and replay_key_of(row) != row.get("replay_key"):
                    changed_sessions.add(row["session"])
        changed = 0
        for session in changed_sessions:
            members = await self._run("reading a session", lambda r, s=session: r.zrange(self._key("session", s), 0, -1))
            counts: dict[str, int] = {}
            rows = []
            for row in await self._bodies(members):
                row["replay_key"], row["key_scheme"] = replay_key_of(row), scheme
                counts[row["replay_key"]] = counts.get(row["replay_key"], 0) + 1
                row["occurrence"] = counts[row["replay_key"]]
                rows.append(row)
            changed += len(rows)
            await self.upsert(rows)
        await self._run("writing the key scheme", lambda r: r.set(marker, scheme))
        return changed

    async def prune(self, *, before_ts: float | None = None, keep_newest: int | None = None) -> int:
        """Delete finished records older than `before_ts` and beyond the newest
        `keep_newest`, with their index entries; named recordings are never pruned."""
        all_key = self._key("all")
        candidates: list[str] = []
        if before_ts is not None:
            candidates += await self._run("finding old records", lambda r: r.zrangebyscore(all_key, "-inf", f"({before_ts}"))
        if keep_newest is not None:
            candidates += await self._run("finding old records", lambda r: r.zrange(all_key, 0, -(keep_newest + 1)))
        removed = 0
        for start in range(0, len(candidates), 500):
            rows = [row for row in await self._bodies(sorted(set(candidates[start : start + 500])))
                    if not row.get("recording") and row.get("status") not in ("started", "pending")]
            if not rows:
                continue

            async def delete(r, rows=rows) -> int:
                pipe = r.pipeline(transaction=False)
                for row in rows:
                    await self._prune(args=self._prune_args(row), client=pipe)
                return sum(await pipe.execute())

            removed += await self._run("pruning records", delete)
        return removed

    # --- the noise table ------------------------------------------------------------------

    async def add_noise_observation(self, tool_key: str, disagreeing, *, name: str = "") -> None:
        async def work(r):
            pipe = r.pipeline(transaction=True)
            pipe.hincrby(self._key("noise", tool_key), "\x00pairs", 1)
            for path in set(disagreeing):
                pipe.hincrby(self._key("noise", tool_key), path, 1)
            pipe.hset(self._key("noise-tools"), tool_key, name or tool_key)
            await pipe.execute()

        await self._run("counting noise", work)

    async def noise_stats(self, tool_key: str) -> NoiseStats:
        counts = await self._run("reading noise", lambda r: r.hgetall(self._key("noise", tool_key)))
        pairs = int(counts.pop("\x00pairs", 0))
        return NoiseStats(pairs=pairs, disagreements={path: int(n) for path, n in counts.items()})

    async def writes_between(self, channel: str, server: str, *, since: float, until: float) -> bool:
        """Whether any record of a call that may have written to (channel, server) spans
        a moment from `since` to `until` (by any replica sharing this Redis)."""
        writes = self._key("writes", SEP.join((channel, server)))
        found = await self._run(
            "looking for writes", lambda r: self._writes_between(keys=[writes], args=[self.prefix, repr(since), repr(until)], client=r)
        )
        return bool(found)

    async def noise_table(self) -> list[tuple[str, str, NoiseStats]]:
        tools = await self._run("listing noise", lambda r: r.hgetall(self._key("noise-tools")))
        return [(key, name, await self.noise_stats(key)) for key, name in sorted(tools.items(), key=lambda item: item[1])]

    async def save_tool_snapshot(self, server: str, tools: list[dict[str, Any]]) -> str | None:
        body, digest = snapshot_digest(tools)
        previous = self._snapshots.get(server)
        await self._run("writing a tool snapshot", lambda r: r.hset(self._key("snapshots"), server, body))
        self._snapshots[server] = json.loads(body)
        if previous is None:
            return None
        old = snapshot_digest(previous)[1]
        return old if old != digest else None

    # --- reading ------------------------------------------------------------------------------

    def tool_snapshot(self, server: str) -> list[dict[str, Any]] | None:
        return self._snapshots.get(server)

    async def load_tool_snapshot(self, server: str) -> list[dict[str, Any]] | None:
        return self._snapshots.get(server)

    async def replay_session(self, replay_key: str, *, exclude_session: str, source: ReplaySource) -> str | None:
        key = self._key("sources", replay_key) if source.recording is None else self._key("recsrc", source.recording, replay_key)
        newest = await self._run("finding a replay source", lambda r: r.zrevrange(key, 0, 1))
        return next((session for session in newest if session != exclude_session), None)

    async def replay_row(self, replay_key: str, *, session: str, occurrence: int) -> ReplayRow | None:
        record_id = await self._run("finding an occurrence", lambda r: r.hget(self._key("occ", replay_key, session), str(occurrence)))
        rows = await self._bodies([record_id] if record_id else [])
        if not rows:
            return None
        row = rows[0]
        return ReplayRow(row["id"], session, row["provenance"], Observation.from_json(row["observation"]))

    async def examples(
        self, channel: str, server: str, tool: str, *, exclude_session: str, call_key: str | None, limit: int
    ) -> list[dict[str, Any]]:
        async def ids(key: str) -> list[str]:
            return await self._run("reading examples", lambda r: r.zrevrange(key, 0, 2 * limit))

        out: list[dict[str, Any]] = []
        seen: set[str] = set()
        sources = ([self._key("ex", "call", call_key)] if call_key else []) + [self._key("ex", "tool", tool_key(channel, server, tool))]
        for key in sources:
            for row in await self._bodies([i for i in await ids(key) if i not in seen]):
                if len(out) < limit and row["session"] != exclude_session and row["provenance"] == "real":
                    seen.add(row["id"])
                    out.append(row)
        return out

    async def pending(self, *, limit: int = 1000) -> list[dict[str, Any]]:
        ids = await self._run("reading pending records", lambda r: r.zrange(self._key("pending"), 0, limit - 1))
        return await self._bodies(ids)

    async def session_records(self, session: str, *, before_step: int, limit: int = 1000) -> list[Record]:
        ids = await self._run(
            "reading a session", lambda r: r.zrevrangebyscore(self._key("session", session), before_step - 1, "-inf", start=0, num=limit)
        )
        return [Record.from_json(row) for row in reversed(await self._bodies(ids))]

    async def recent(self, *, limit: int | None = None, **filters: Any) -> list[dict[str, Any]]:
        """Newest first from the time index, filtered here: for the command line, not hot paths."""
        ids = await self._run("listing records", lambda r: r.zrevrange(self._key("all"), 0, -1))
        out = []
        for start in range(0, len(ids), 1000):
            for row in await self._bodies(ids[start : start + 1000]):
                if _matches(row, filters):
                    out.append(row)
                    if limit is not None and len(out) >= limit:
                        return list(reversed(out))
        return list(reversed(out))

    async def learning_rows(self, *, since: float, limit: int) -> list[dict[str, Any]]:
        ids = await self._run("listing records", lambda r: r.zrangebyscore(self._key("all"), since, "+inf", start=0, num=limit))
        return await self._bodies(ids)

    # --- the learned router's model, shared by the replicas ------------------------------------

    async def publish_model(self, data: bytes, digest: str) -> None:
        """Store a learned model and announce it: replicas see the new version and load it."""
        payload = base64.b64encode(data).decode("ascii")

        async def work(r):
            await r.set(self._key("learned", "model"), payload)
            await r.set(self._key("learned", "version"), digest)
            await r.publish(self._key("learned", "reload"), digest)

        await self._run("publishing a learned model", work)

    async def subscribe_models(self):
        """A pub/sub subscription (its own connection) to the announcements
        `publish_model` makes: a replica wakes as soon as a model is published.
        Read it with `next_announcement`; close it with its `aclose()`."""

        async def work(r):
            pubsub = r.pubsub(ignore_subscribe_messages=True)
            await pubsub.subscribe(self._key("learned", "reload"))
            return pubsub

        return await self._run("subscribing to learned model announcements", work)

    async def next_announcement(self, pubsub, *, timeout_s: float) -> str | None:
        """The digest of the next model announced within `timeout_s`, else None."""

        async def work(_r):
            message = await pubsub.get_message(ignore_subscribe_messages=True, timeout=timeout_s)
            return message["data"] if message and message.get("type") == "message" else None

        return await self._run("waiting for learned model announcements", work)

    async def model_version(self) -> str | None:
        return await self._run("reading the learned model's version", lambda r: r.get(self._key("learned", "version")))

    async def published_model(self) -> bytes | None:
        payload = await self._run("reading the learned model", lambda r: r.get(self._key("learned", "model")))
        return base64.b64decode(payload) if payload else None

    async def recordings(self) -> list[RecordingInfo]:
        names = await self._run("listing recordings", lambda r: r.smembers(self._key("recordings")))
        out = []
        for name in names:
            stats = await self._run("reading a recording", lambda r, n=name: r.hgetall(self._key("recording", n)))
            sessions = await self._run("reading a recording", lambda r, n=name: r.scard(self._key("recording", n, "sessions")))
            out.append(RecordingInfo(name, sessions, int(stats.get("records", 0)), float(stats.get("first", 0)), float(stats.get("last", 0))))
        return sorted(out, key=lambda info: info.last_ts, reverse=True)

    async def aggregates(self) -> dict[str, Any]:
        counts = await self._run("reading aggregates", lambda r: r.hgetall(self._key("agg")))
        out: dict[str, Any] = {"total": int(counts.pop("total", 0))}
        for field, value in counts.items():
            dimension, _, name = field.partition(":")
            out.setdefault(f"by_{dimension}", {})[name] = int(value)
        return out

    # --- the dashboard's aggregates and pages (shadow/store/redis/dashboard.py) ----------------

    async def overview(self, where: RecordFilter, *, bucket_s: float) -> list[dict[str, Any]]:
        return await dashboard.overview(self, where, bucket_s)

    async def fidelity(self, where: RecordFilter) -> list[dict[str, Any]]:
        return await dashboard.fidelity(self, where)

    async def page(self, where: RecordFilter, *, before: str | None = None, after: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        return await dashboard.page(self, where, before=before, after=after, limit=limit)

    async def record(self, record_id: str) -> dict[str, Any] | None:
        rows = await self._bodies([record_id])
        return rows[0] if rows else None

    async def records_by_prefix(self, prefix: str, *, limit: int = 2) -> list[dict[str, Any]]:
        # Ids begin with their creation time: the prefix bounds the records' timestamps,
        # so the lookup reads one slice of the time index, not every id.
        from shadow.store.queries import id_time_window

        low, high = id_time_window(prefix)
        ids = await self._run("finding a record", lambda r: r.zrangebyscore(self._key("all"), low, high))
        matching = sorted(i for i in ids if i.startswith(prefix))
        if not matching:  # a record whose `ts` was set apart from its id: look through every id (a rare miss)
            total = await self.count()
            for start in range(0, total, 10_000):
                chunk = await self._run("finding a record", lambda r, start=start: r.zrange(self._key("all"), start, start + 9_999))
                matching += [i for i in chunk if i.startswith(prefix)]
                if len(matching) >= limit:
                    break
        return await self._bodies(sorted(matching)[:limit])

    async def count(self) -> int:
        return int(await self._run("counting records", lambda r: r.zcard(self._key("all"))))

    async def aclose(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.aclose()


def _score(span: tuple[float, float] | None) -> str:
    """The write index's score of a record: the end of its span ("" : not a write)."""
    if span is None:
        return ""
    return "+inf" if span[1] == math.inf else repr(span[1])


def _matches(row: dict[str, Any], filters: dict[str, Any]) -> bool:
    for column in ("session", "channel", "server", "route", "tool", "status", "recording"):
        if filters.get(column) and row.get(column) != filters[column]:
            return False
    if filters.get("since") is not None and row["ts"] < float(filters["since"]):
        return False
    return not filters.get("divergent") or (row.get("divergence") or 0) > 0


def _is_redis_error(exc: BaseException) -> bool:
    from redis.exceptions import RedisError

    return isinstance(exc, (RedisError, OSError, TimeoutError))
