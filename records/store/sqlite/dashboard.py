"""The dashboard's queries on the SQLite store: grouped and paged in SQL.

The overview and the fidelity table read the per-minute counts the store keeps
at write time (`minute_counts`; the fidelity table's per-sub figures `sub_counts`),
plus the records of the range's partial first and last minutes; a session's view
reads its records (`records_by_session`), and a token's view (its namespaces) the
range's records (`records_by_ts`): the counts are kept for all tokens together.
Pages read a time range through `records_by_ts`. So no view reads the store's
whole history; `tests/unit/router/dashboard/test_dashboard_queries.py` checks the plans.
"""

from __future__ import annotations

import json
import math
import sqlite3
from dataclasses import replace
from typing import Any

from calls import tool_key
from records.store.model_rows import MODEL_WINDOW, model_fidelity_of
from records.store.namespaces import sql_clause
from records.store.protocol import RecordFilter
from records.store.sqlite import sub_counts
from records.store.sqlite.minute_counts import KINDS
from records.sub_provenance import sub_tallies


def _clause(
    where: RecordFilter, time_column: str, start: float, end: float | None, columns: tuple[str, ...], divergent: str
) -> tuple[str, list[Any]]:
    """`time_column` in [start, end), the filter's equality columns, divergent only."""
    clauses, params = [f"{time_column} >= ?"], [start]
    if end is not None:
        clauses.append(f"{time_column} < ?")
        params.append(end)
    for column in columns:
        value = getattr(where, column)
        if value:
            clauses.append(f"{column} = ?")
            params.append(value)
    if where.divergent:
        clauses.append(divergent)
    return " AND ".join(clauses), params


def where_clause(where: RecordFilter) -> tuple[str, list[Any]]:
    """The filter over the records (a token's view: its namespaces' sessions only)."""
    clause, params = _clause(
        where, "ts", where.since, where.until, ("session", "channel", "server", "tool", "route"), "divergence > 0"
    )
    scope, scope_params = sql_clause(where.namespaces)
    return (f"{clause} AND {scope}", [*params, *scope_params]) if scope else (clause, params)


def overview_sql(where: RecordFilter, bucket_s: float) -> tuple[str, list[Any]]:
    """The overview over records (a session's, a range's partial minutes)."""
    clause, params = where_clause(where)
    sql = (
        "SELECT CAST(ts / ? AS INTEGER) * ? AS bucket, route, channel, provenance, COUNT(*),"
        " COUNT(divergence), SUM(divergence > 0)"
        f" FROM records WHERE {clause} GROUP BY bucket, route, channel, provenance ORDER BY bucket"
    )
    return sql, [bucket_s, bucket_s, *params]


def fidelity_sql(where: RecordFilter) -> tuple[str, list[Any]]:
    """The fidelity table over records (a session's, a range's partial minutes)."""
    clause, params = where_clause(where)
    kinds = ", ".join(f"SUM(divergence_kind = '{kind}')" for kind in KINDS)
    sql = (
        f"SELECT channel, server, tool, COUNT(*), COUNT(divergence), TOTAL(divergence), {kinds}"
        f" FROM records WHERE {clause} GROUP BY channel, server, tool ORDER BY channel, server, tool"
    )
    return sql, params


# --- the same from the per-minute counts kept at write time --------------------------------


def counts_clause(where: RecordFilter, first_minute: int, end_minute: int | None) -> tuple[str, list[Any]]:
    """The filter over the per-minute counts (which have no session)."""
    return _clause(where, "minute", first_minute, end_minute, ("channel", "server", "tool", "route"), "divergent > 0")


def overview_counts_sql(
    where: RecordFilter, bucket_s: float, first_minute: int, end_minute: int | None
) -> tuple[str, list[Any]]:
    clause, params = counts_clause(where, first_minute, end_minute)
    # Divergent only: every counted call is a divergent shadow pair.
    calls, shadowed = ("SUM(divergent)", "SUM(divergent)") if where.divergent else ("SUM(calls)", "SUM(shadowed)")
    sql = (
        "SELECT CAST(minute * 60 / ? AS INTEGER) * ? AS bucket, route, "
        f"channel, provenance, {calls}, {shadowed}, SUM(divergent)"
        f" FROM minute_counts WHERE {clause} GROUP BY bucket, route, channel, provenance ORDER BY bucket"
    )
    return sql, [bucket_s, bucket_s, *params]


def fidelity_counts_sql(where: RecordFilter, first_minute: int, end_minute: int | None) -> tuple[str, list[Any]]:
    clause, params = counts_clause(where, first_minute, end_minute)
    calls, shadowed = ("SUM(divergent)", "SUM(divergent)") if where.divergent else ("SUM(calls)", "SUM(shadowed)")
    # A divergent pair is never of kind `none` (noise alone scores 0).
    kinds = ", ".join("0" if where.divergent and kind == "none" else f"SUM(kind_{kind})" for kind in KINDS)
    sql = (
        f"SELECT channel, server, tool, {calls}, {shadowed}, TOTAL(divergence_sum), {kinds}"
        f" FROM minute_counts WHERE {clause} GROUP BY channel, server, tool ORDER BY channel, server, tool"
    )
    return sql, params


def subs_sql(where: RecordFilter) -> tuple[str, list[Any]]:
    """Shadow pairs by tool and sub over records (a session's, a range's partial minutes):
    the sub read from each pair's JSON."""
    clause, params = where_clause(where)
    sql = (
        f"SELECT channel, server, tool, {sub_counts.sub_of('records')} "
        "AS sub, COUNT(*), SUM(divergence > 0), TOTAL(divergence)"
        f" FROM records WHERE {clause} AND divergence IS NOT NULL GROUP BY channel, server, tool, sub"
    )
    return sql, params


def subs_counts_sql(where: RecordFilter, first_minute: int, end_minute: int | None) -> tuple[str, list[Any]]:
    clause, params = counts_clause(where, first_minute, end_minute)
    pairs = "SUM(divergent)" if where.divergent else "SUM(pairs)"
    sql = (
        f"SELECT channel, server, tool, sub, {pairs}, SUM(divergent), TOTAL(divergence_sum)"
        f" FROM sub_counts WHERE {clause} GROUP BY channel, server, tool, sub"
    )
    return sql, params


def subs(db: sqlite3.Connection, where: RecordFilter) -> dict[tuple[str, str, str], dict[str, list[float]]]:
    """Per tool, per sub: [pairs, divergent pairs, divergence sum]."""
    minutes = whole_minutes(where) if sub_counts.exists(db) else None  # a file not migrated yet: its records
    queries = (
        [subs_sql(where)]
        if minutes is None
        else [subs_counts_sql(where, *minutes), *(subs_sql(part) for part in edges(where, *minutes))]
    )
    out: dict[tuple[str, str, str], dict[str, list[float]]] = {}
    for sql, params in queries:
        sub_counts.tallies(db.execute(sql, params), out)
    return out


def whole_minutes(where: RecordFilter, bucket_s: float = 60.0) -> tuple[int, int | None] | None:
    """The whole minutes of the range the counts can answer for, [first, end); None when
    the counts cannot serve the query (a session or namespace filter, buckets not whole
    minutes, a range inside one minute)."""
    if where.session or where.namespaces is not None or bucket_s % 60:
        return None
    first = math.ceil(where.since / 60)
    end = math.floor(where.until / 60) if where.until is not None else None
    if end is not None and end <= first:
        return None
    return first, end


def edges(where: RecordFilter, first: int, end: int | None) -> list[RecordFilter]:
    """The range's parts outside its whole minutes (read from the records: at most two minutes)."""
    parts = []
    if where.since < first * 60:
        parts.append(replace(where, until=first * 60))
    if end is not None and where.until is not None and end * 60 < where.until:
        parts.append(replace(where, since=end * 60))
    return parts


def overview(db: sqlite3.Connection, where: RecordFilter, bucket_s: float) -> list[dict[str, Any]]:
    minutes = whole_minutes(where, bucket_s)
    queries = (
        [overview_sql(where, bucket_s)]
        if minutes is None
        else [
            overview_counts_sql(where, bucket_s, *minutes),
            *(overview_sql(part, bucket_s) for part in edges(where, *minutes)),
        ]
    )
    cells: dict[tuple[Any, ...], list[int]] = {}
    for sql, params in queries:
        for bucket, route, channel, provenance, calls, shadowed, divergent in db.execute(sql, params):
            cell = cells.setdefault((bucket, route, channel, provenance), [0, 0, 0])
            cell[0] += calls or 0
            cell[1] += shadowed or 0
            cell[2] += divergent or 0
    return [
        {
            "bucket": bucket,
            "route": route,
            "channel": channel,
            "provenance": provenance,
            "calls": calls,
            "shadowed": shadowed,
            "divergent": divergent,
        }
        for (bucket, route, channel, provenance), (calls, shadowed, divergent) in sorted(
            cells.items(), key=lambda item: item[0]
        )
        if calls
    ]


def fidelity(db: sqlite3.Connection, where: RecordFilter) -> list[dict[str, Any]]:
    minutes = whole_minutes(where)
    queries = (
        [fidelity_sql(where)]
        if minutes is None
        else [fidelity_counts_sql(where, *minutes), *(fidelity_sql(part) for part in edges(where, *minutes))]
    )
    tools: dict[tuple[str, str, str], list[float]] = {}
    for sql, params in queries:
        for channel, server, tool, *values in db.execute(sql, params):
            sums = tools.setdefault((channel, server, tool), [0.0] * len(values))
            for n, value in enumerate(values):
                sums[n] += value or 0
    by_sub = subs(db, where)
    rows = []
    for (channel, server, tool), (calls, pairs, divergence_sum, *kinds) in sorted(tools.items()):
        if not calls:
            continue
        # The noise table of the view's namespaces (with tokens, kept per namespace).
        keys = [scope + tool_key(channel, server, tool) for scope in where.namespaces or ("",)]
        marks = ", ".join("?" * len(keys))
        noise = db.execute(f"SELECT TOTAL(pairs) FROM noise_pairs WHERE tool_key IN ({marks})", keys).fetchone()
        paths = db.execute(f"SELECT COUNT(DISTINCT path) FROM noise_paths WHERE tool_key IN ({marks})", keys).fetchone()
        rows.append(
            {
                "channel": channel,
                "server": server,
                "tool": tool,
                "calls": int(calls),
                "shadow_pairs": int(pairs),
                "mean_divergence": divergence_sum / pairs if pairs else None,
                "kinds": {k: int(n) for k, n in zip(KINDS, kinds, strict=True) if n},
                "subs": sub_tallies(by_sub.get((channel, server, tool), {})),
                "noise_pairs": int(noise[0]) if noise else 0,
                "noisy_paths": paths[0] if paths else 0,
            }
        )
    return rows


def model_fidelity_sql(where: RecordFilter, window: int) -> tuple[str, list[Any]]:
    """The range's newest `window` records through the time index: each side's
    provenance, model and error flag read from the JSON."""
    clause, params = where_clause(where)
    sides = ", ".join(
        f"json_extract(body, '$.{side}.{path}')"
        for side in ("observation", "shadow")
        for path in ("provenance", "source.model", "is_error")
    )
    sql = f"SELECT ts, provenance, divergence, {sides} FROM records WHERE {clause} ORDER BY ts DESC LIMIT ?"
    return sql, [*params, window]


def model_fidelity(db: sqlite3.Connection, where: RecordFilter, window: int = MODEL_WINDOW) -> dict[str, Any]:
    """Fidelity by the model that answered (records/store/model_rows.py): the newest
    `window` records of the range, read through the time index, each side's source
    and error flag taken from the JSON in SQL."""

    def rows():
        for ts, provenance, divergence, *values in db.execute(*model_fidelity_sql(where, window)):
            row = {"ts": ts, "provenance": provenance, "divergence": divergence}
            for side, (side_provenance, model, is_error) in (("observation", values[:3]), ("shadow", values[3:])):
                if side_provenance is not None:
                    row[side] = {"provenance": side_provenance, "source": {"model": model}, "is_error": bool(is_error)}
            yield row

    return model_fidelity_of(rows(), window=window)


def totals(db: sqlite3.Connection) -> dict[str, Any]:
    """Records in the store, in all and by channel, route, provenance and status (/metrics)."""
    out: dict[str, Any] = {"total": db.execute("SELECT TOTAL(calls) FROM minute_counts").fetchone()[0]}
    for column in ("channel", "route", "provenance", "status"):
        out[f"by_{column}"] = {
            value: int(count)
            for value, count in db.execute(f"SELECT {column}, TOTAL(calls) FROM minute_counts GROUP BY {column}")
            if count
        }
    out["total"] = int(out["total"])
    return out


def page_sql(where: RecordFilter, *, before: str | None, after: str | None, limit: int) -> tuple[str, list[Any]]:
    clause, params = where_clause(where)
    if before is not None:
        clause += " AND id < ?"
        params.append(before)
    if after is not None:
        clause += " AND id > ?"
        params.append(after)
    return f"SELECT body FROM records WHERE {clause} ORDER BY ts DESC, id DESC LIMIT ?", [*params, limit]


def page(
    db: sqlite3.Connection, where: RecordFilter, *, before: str | None, after: str | None, limit: int
) -> list[dict[str, Any]]:
    sql, params = page_sql(where, before=before, after=after, limit=limit)
    return [json.loads(body) for (body,) in db.execute(sql, params)]


def record(db: sqlite3.Connection, record_id: str) -> dict[str, Any] | None:
    row = db.execute("SELECT body FROM records WHERE id = ?", (record_id,)).fetchone()
    return json.loads(row[0]) if row else None
