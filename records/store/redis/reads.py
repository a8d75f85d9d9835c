"""Reading records from Redis: replay sources and occurrences, the world model's
examples, pending shadow work, a session's history, listings for the command line,
what the learned router learns from, the writes the noise learner asks about,
recordings, and the dashboard's aggregates and pages (`dashboard.py`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from calls import Observation, tool_key
from records.record import Record
from records.store.namespaces import in_namespaces
from records.store.protocol import RecordFilter, RecordingInfo, ReplayRow, ReplaySource
from records.store.redis import dashboard
from records.store.redis.base import RedisBase
from records.store.redis.dashboard import SEP
from records.store.tool_sessions import ROWS_READ, newest_sessions

_EXAMPLE_WINDOWS = 20  # windows of a tool's examples read past other tokens' records


class RecordReads(RedisBase):
    async def replay_session(
        self, replay_key: str, *, exclude_session: str, source: ReplaySource, servable: bool = True
    ) -> str | None:
        if not servable and source.recording is not None:
            return None  # why a recording has no source: not indexed
        key = self._key("sources" if servable else "made", replay_key)
        key = key if source.recording is None else self._key("recsrc", source.recording, replay_key)
        newest = await self._run("finding a replay source", lambda r: r.zrevrange(key, 0, 1))
        return next((session for session in newest if session != exclude_session), None)

    async def replay_row(self, replay_key: str, *, session: str, occurrence: int) -> ReplayRow | None:
        record_id = await self._run(
            "finding an occurrence", lambda r: r.hget(self._key("occ", replay_key, session), str(occurrence))
        )
        rows = await self._bodies([record_id] if record_id else [])
        if not rows:
            return None
        row = rows[0]
        return ReplayRow(
            row["id"],
            session,
            row["provenance"],
            Observation.from_json(row["observation"]),
            perturbed="perturbation" in row,
        )

    async def examples(
        self,
        channel: str,
        server: str,
        tool: str,
        *,
        exclude_session: str,
        call_key: str | None,
        limit: int,
        namespaces: Sequence[str] | None = None,
    ) -> list[dict[str, Any]]:
        window = 2 * limit + 1

        async def ids(key: str, start: int) -> list[str]:
            return await self._run("reading examples", lambda r: r.zrevrange(key, start, start + window - 1))

        out: list[dict[str, Any]] = []
        seen: set[str] = set()
        sources = ([self._key("ex", "call", call_key)] if call_key else []) + [
            self._key("ex", "tool", tool_key(channel, server, tool))
        ]
        for key in sources:
            # Limited to some namespaces, read on past other tokens' records (a bounded number of windows).
            for step in range(_EXAMPLE_WINDOWS if namespaces is not None else 1):
                batch = await ids(key, step * window)
                for row in await self._bodies([i for i in batch if i not in seen]):
                    session = row["session"]
                    if (
                        len(out) < limit
                        and session != exclude_session
                        and row["provenance"] == "real"
                        and in_namespaces(session, namespaces)
                    ):
                        seen.add(row["id"])
                        out.append(row)
                if len(out) >= limit or len(batch) < window:
                    break
        return out

    async def tool_sessions(
        self,
        channel: str,
        server: str,
        tool: str,
        *,
        exclude_session: str,
        limit: int,
        namespaces: Sequence[str] | None = None,
    ) -> list[str]:
        # The tool's example index holds its newest real records (writes.EXAMPLES_PER_KEY): read
        # newest first, a window at a time, until enough sessions are found or ROWS_READ rows are.
        key, window = self._key("ex", "tool", tool_key(channel, server, tool)), 4 * limit
        sessions: list[str] = []
        for start in range(0, ROWS_READ, window):
            batch: list[str] = await self._command(
                "finding a tool's sessions", "zrevrange", key, start, start + window - 1
            )
            sessions += [row["session"] for row in await self._bodies(batch)]
            found = newest_sessions(sessions, exclude_session=exclude_session, limit=limit, namespaces=namespaces)
            if len(found) >= limit or len(batch) < window:
                return found
        return newest_sessions(sessions, exclude_session=exclude_session, limit=limit, namespaces=namespaces)

    async def pending(self, *, limit: int = 1000) -> list[dict[str, Any]]:
        ids = await self._run("reading pending records", lambda r: r.zrange(self._key("pending"), 0, limit - 1))
        return await self._bodies(ids)

    async def session_records(self, session: str, *, before_step: int, limit: int = 1000) -> list[Record]:
        ids = await self._run(
            "reading a session",
            lambda r: r.zrevrangebyscore(self._key("session", session), before_step - 1, "-inf", start=0, num=limit),
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
        ids = await self._run(
            "listing records", lambda r: r.zrangebyscore(self._key("all"), since, "+inf", start=0, num=limit)
        )
        return await self._bodies(ids)

    async def writes_between(self, channel: str, server: str, *, since: float, until: float) -> bool:
        """Whether any record of a call that may have written to (channel, server) spans
        a moment from `since` to `until` (by any replica sharing this Redis)."""
        writes = self._key("writes", SEP.join((channel, server)))
        found = await self._run(
            "looking for writes",
            lambda r: self._writes_between(keys=[writes], args=[self.prefix, repr(since), repr(until)], client=r),
        )
        return bool(found)

    async def recordings(self, *, namespaces: Sequence[str] | None = None) -> list[RecordingInfo]:
        names = await self._run("listing recordings", lambda r: r.smembers(self._key("recordings")))
        if namespaces is not None:  # the aggregates count every token's: counted from the sessions instead
            scoped = [await self._recording_in(name, namespaces) for name in names]
            return sorted((info for info in scoped if info is not None), key=lambda info: info.last_ts, reverse=True)
        out = []
        for name in names:
            stats = await self._command("reading a recording", "hgetall", self._key("recording", name))
            sessions = await self._command("reading a recording", "scard", self._key("recording", name, "sessions"))
            out.append(
                RecordingInfo(
                    name,
                    sessions,
                    int(stats.get("records", 0)),
                    float(stats.get("first", 0)),
                    float(stats.get("last", 0)),
                )
            )
        return sorted(out, key=lambda info: info.last_ts, reverse=True)

    async def _recording_in(self, name: str, namespaces: Sequence[str]) -> RecordingInfo | None:
        """A recording counted over the sessions of `namespaces` that it holds."""
        members = await self._command("reading a recording", "smembers", self._key("recording", name, "sessions"))
        sessions = sorted(session for session in members if in_namespaces(session, namespaces))
        stamps: list[float] = []
        for session in sessions:
            key = self._key("session", session)
            ids: list[str] = await self._command("reading a session", "zrange", key, 0, -1)
            stamps += [row["ts"] for row in await self._bodies(ids) if row.get("recording") == name]
        return RecordingInfo(name, len(sessions), len(stamps), min(stamps), max(stamps)) if stamps else None

    async def aggregates(self) -> dict[str, Any]:
        counts = await self._run("reading aggregates", lambda r: r.hgetall(self._key("agg")))
        out: dict[str, Any] = {"total": int(counts.pop("total", 0))}
        for field, value in counts.items():
            dimension, _, name = field.partition(":")
            out.setdefault(f"by_{dimension}", {})[name] = int(value)
        return out

    # --- the dashboard's aggregates and pages (records/store/redis/dashboard.py) ----------------

    async def overview(self, where: RecordFilter, *, bucket_s: float) -> list[dict[str, Any]]:
        return await dashboard.overview(self, where, bucket_s)

    async def fidelity(self, where: RecordFilter) -> list[dict[str, Any]]:
        return await dashboard.fidelity(self, where)

    async def model_fidelity(self, where: RecordFilter) -> dict[str, Any]:
        return await dashboard.model_fidelity(self, where)

    async def page(
        self, where: RecordFilter, *, before: str | None = None, after: str | None = None, limit: int = 50
    ) -> list[dict[str, Any]]:
        return await dashboard.page(self, where, before=before, after=after, limit=limit)

    async def record(self, record_id: str) -> dict[str, Any] | None:
        rows = await self._bodies([record_id])
        return rows[0] if rows else None

    async def records_by_prefix(self, prefix: str, *, limit: int = 2) -> list[dict[str, Any]]:
        # Ids begin with their creation time: the prefix bounds the records' timestamps,
        # so the lookup reads one slice of the time index, not every id.
        from records.store.queries import id_time_window

        low, high = id_time_window(prefix)
        ids = await self._run("finding a record", lambda r: r.zrangebyscore(self._key("all"), low, high))
        matching = sorted(i for i in ids if i.startswith(prefix))
        if not matching:  # a record whose `ts` was set apart from its id: look through every id (a rare miss)
            total = await self.count()
            for start in range(0, total, 10_000):
                chunk = await self._command("finding a record", "zrange", self._key("all"), start, start + 9_999)
                matching += [i for i in chunk if i.startswith(prefix)]
                if len(matching) >= limit:
                    break
        return await self._bodies(sorted(matching)[:limit])

    async def count(self) -> int:
        return int(await self._run("counting records", lambda r: r.zcard(self._key("all"))))


def _matches(row: dict[str, Any], filters: dict[str, Any]) -> bool:
    for column in ("session", "channel", "server", "route", "tool", "status", "recording"):
        if filters.get(column) and row.get(column) != filters[column]:
            return False
    if filters.get("since") is not None and row["ts"] < float(filters["since"]):
        return False
    return not filters.get("divergent") or (row.get("divergence") or 0) > 0
