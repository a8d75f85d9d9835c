"""Where replay and the world model look in the SQLite store: the session to replay
a call from, the occurrence to serve, and real examples of a tool (the same call's
first). Indexed lookups with a cap, on the hot path."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from typing import Any

from calls import Observation, tool_key
from records.servable import SQL_SERVABLE
from records.store.namespaces import in_namespaces, sql_clause
from records.store.protocol import ReplayRow, ReplaySource
from records.store.sqlite import replay_sources
from records.store.sqlite.base import SQLiteBase
from records.store.tool_sessions import ROWS_READ, newest_sessions


class ReplayLookups(SQLiteBase):
    async def replay_session(
        self, replay_key: str, *, exclude_session: str, source: ReplaySource, servable: bool = True
    ) -> str | None:
        if not servable:  # off the hot path (a miss): the key's records, newest first
            recording = "" if source.recording is None else " AND recording = ?"
            sql = (
                f"SELECT session FROM records WHERE replay_key = ? AND session != ?{recording} ORDER BY ts DESC LIMIT 1"
            )
            params: tuple[Any, ...] = (
                replay_key,
                exclude_session,
                *(() if source.recording is None else (source.recording,)),
            )
        elif source.recording is None:
            sql = "SELECT session FROM replay_sources WHERE replay_key = ? AND session != ? ORDER BY ts DESC LIMIT 1"
            params = (replay_key, exclude_session)
        else:
            sql = (
                "SELECT session FROM records WHERE recording = ? AND replay_key = ? AND session != ?"
                f" AND {SQL_SERVABLE} ORDER BY ts DESC LIMIT 1"
            )
            params = (source.recording, replay_key, exclude_session)
        row = await self._read(lambda db: db.execute(sql, params).fetchone())
        return row[0] if row else None

    async def replay_row(self, replay_key: str, *, session: str, occurrence: int) -> ReplayRow | None:
        row = await self._read(
            lambda db: db.execute(
                "SELECT id, provenance, body FROM records WHERE "
                "replay_key = ? AND session = ? AND occurrence = ? LIMIT 1",
                (replay_key, session, occurrence),
            ).fetchone()
        )
        if row is None:
            return None
        record_id, provenance, body = row
        data = json.loads(body)
        return ReplayRow(
            record_id, session, provenance, Observation.from_json(data["observation"]), perturbed="perturbation" in data
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
        key = tool_key(channel, server, tool)
        scope, scope_params = sql_clause(namespaces)
        scope = f" AND {scope}" if scope else ""

        def work(db: sqlite3.Connection) -> list[str]:
            bodies: list[str] = []
            seen: set[str] = set()
            if call_key is not None:  # the same call (by replay key: volatile arguments left out) first
                for rid, body in _same_call(db, call_key, exclude_session, limit, namespaces):
                    seen.add(rid)
                    bodies.append(body)
            if len(bodies) < limit:
                for rid, body in db.execute(
                    "SELECT id, body FROM records WHERE tool_key = ? AND provenance = 'real' AND session != ?"
                    f"{scope} ORDER BY ts DESC LIMIT ?",
                    (key, exclude_session, *scope_params, limit + len(seen)),
                ):
                    if rid not in seen and len(bodies) < limit:
                        bodies.append(body)
            return bodies

        return [json.loads(body) for body in await self._read(work)]

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
        scope, scope_params = sql_clause(namespaces)
        scope = f" AND {scope}" if scope else ""
        rows = await self._read(
            lambda db: db.execute(
                f"SELECT session FROM records WHERE tool_key = ? AND provenance = 'real' AND session != ?{scope} "
                "ORDER BY ts DESC LIMIT ?",
                (tool_key(channel, server, tool), exclude_session, *scope_params, ROWS_READ),
            ).fetchall()
        )
        return newest_sessions(
            (session for (session,) in rows), exclude_session=exclude_session, limit=limit, namespaces=namespaces
        )


def _same_call(
    db: sqlite3.Connection, replay_key: str, exclude_session: str, limit: int, namespaces: Sequence[str] | None
) -> list[tuple[str, str]]:
    """(id, body) of the newest real records of `replay_key` in the key's latest
    sessions other than `exclude_session`, newest first."""
    found = []
    sessions = db.execute(
        "SELECT session FROM replay_sources WHERE replay_key = ? AND session != ? ORDER BY ts DESC LIMIT ?",
        (replay_key, exclude_session, replay_sources.SESSIONS_PER_KEY),
    ).fetchall()
    for (session,) in sessions:
        if not in_namespaces(session, namespaces):
            continue
        found += db.execute(
            "SELECT ts, id, body FROM records WHERE session = ? AND replay_key = ? AND provenance = 'real' ORDER BY "
            "occurrence DESC LIMIT ?",
            (session, replay_key, limit),
        ).fetchall()
    found.sort(key=lambda row: row[0], reverse=True)
    return [(rid, body) for _, rid, body in found[:limit]]
