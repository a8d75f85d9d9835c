"""The dashboard's queries on the SQLite store: grouped and paged in SQL.

Every query is bounded by a time range (`records_by_ts`, which covers the
columns the aggregates group by: they never read the table) or a session
(`records_by_session`), so a view of the last day does not read the store's
whole history; `tests/unit/test_dashboard_queries.py` checks the plans.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from shadow.canonical import tool_key
from shadow.store import RecordFilter

KINDS = ("status", "structure", "format", "content", "none")


def where_clause(where: RecordFilter) -> tuple[str, list[Any]]:
    clauses, params = ["ts >= ?"], [where.since]
    if where.until is not None:
        clauses.append("ts < ?")
        params.append(where.until)
    for column in ("session", "channel", "server", "tool", "route"):
        value = getattr(where, column)
        if value:
            clauses.append(f"{column} = ?")
            params.append(value)
    if where.divergent:
        clauses.append("divergence > 0")
    return " AND ".join(clauses), params


def overview_sql(where: RecordFilter, bucket_s: float) -> tuple[str, list[Any]]:
    clause, params = where_clause(where)
    sql = (
        "SELECT CAST(ts / ? AS INTEGER) * ? AS bucket, route, channel, provenance, COUNT(*),"
        " COUNT(divergence), SUM(divergence > 0)"
        f" FROM records WHERE {clause} GROUP BY bucket, route, channel, provenance ORDER BY bucket"
    )
    return sql, [bucket_s, bucket_s, *params]


def overview(db: sqlite3.Connection, where: RecordFilter, bucket_s: float) -> list[dict[str, Any]]:
    sql, params = overview_sql(where, bucket_s)
    return [
        {"bucket": bucket, "route": route, "channel": channel, "provenance": provenance, "calls": calls, "shadowed": shadowed, "divergent": divergent or 0}
        for bucket, route, channel, provenance, calls, shadowed, divergent in db.execute(sql, params)
    ]


def fidelity_sql(where: RecordFilter) -> tuple[str, list[Any]]:
    clause, params = where_clause(where)
    kinds = ", ".join(f"SUM(divergence_kind = '{kind}')" for kind in KINDS)
    sql = (
        f"SELECT channel, server, tool, COUNT(*), COUNT(divergence), AVG(divergence), {kinds}"
        f" FROM records WHERE {clause} GROUP BY channel, server, tool ORDER BY channel, server, tool"
    )
    return sql, params


def fidelity(db: sqlite3.Connection, where: RecordFilter) -> list[dict[str, Any]]:
    sql, params = fidelity_sql(where)
    rows = []
    for channel, server, tool, calls, pairs, mean, *kinds in db.execute(sql, params):
        key = tool_key(channel, server, tool)
        noise = db.execute("SELECT pairs FROM noise_pairs WHERE tool_key = ?", (key,)).fetchone()
        paths = db.execute("SELECT COUNT(*) FROM noise_paths WHERE tool_key = ?", (key,)).fetchone()
        rows.append({
            "channel": channel, "server": server, "tool": tool, "calls": calls, "shadow_pairs": pairs,
            "mean_divergence": mean, "kinds": {k: n for k, n in zip(KINDS, kinds, strict=True) if n},
            "noise_pairs": noise[0] if noise else 0, "noisy_paths": paths[0] if paths else 0,
        })
    return rows


def page_sql(where: RecordFilter, *, before: str | None, after: str | None, limit: int) -> tuple[str, list[Any]]:
    clause, params = where_clause(where)
    if before is not None:
        clause += " AND id < ?"
        params.append(before)
    if after is not None:
        clause += " AND id > ?"
        params.append(after)
    return f"SELECT body FROM records WHERE {clause} ORDER BY ts DESC, id DESC LIMIT ?", [*params, limit]


def page(db: sqlite3.Connection, where: RecordFilter, *, before: str | None, after: str | None, limit: int) -> list[dict[str, Any]]:
    sql, params = page_sql(where, before=before, after=after, limit=limit)
    return [json.loads(body) for (body,) in db.execute(sql, params)]


def record(db: sqlite3.Connection, record_id: str) -> dict[str, Any] | None:
    row = db.execute("SELECT body FROM records WHERE id = ?", (record_id,)).fetchone()
    return json.loads(row[0]) if row else None
