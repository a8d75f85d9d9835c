"""Per-minute shadow-pair counts by the simulated side's sub-provenance, kept at write
time beside `minute_counts` (minute_counts.py), so the fidelity view's per-sub figures
read small rows, never the records' JSON.

The sub is not a column of `records`: it lives in the record's JSON (the shadow
observation's `source.sub`, records/sub_provenance.py). It is read once per shadow
pair when the pair is counted: by the writer for a record inserted with its
divergence, by trigger (`json_extract` on the body) when an update gives a record its
divergence (a pending record completed) or changes it, and when a prune deletes it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from records.sub_provenance import NO_SUB, shadow_sub

KEY = "minute, channel, server, tool, route, sub"
TABLE = f"""
CREATE TABLE IF NOT EXISTS sub_counts (
    minute INTEGER NOT NULL, channel TEXT NOT NULL, server TEXT NOT NULL, tool TEXT NOT NULL, route TEXT NOT NULL,
    sub TEXT NOT NULL, pairs INTEGER NOT NULL, divergent INTEGER NOT NULL, divergence_sum REAL NOT NULL,
    PRIMARY KEY ({KEY})
) WITHOUT ROWID
"""
_ADD_ON_CONFLICT = (
    "ON CONFLICT DO UPDATE SET pairs = pairs + excluded.pairs, divergent = divergent + excluded.divergent, "
    + ("divergence_sum = divergence_sum + excluded.divergence_sum")
)
ADD = f"INSERT INTO sub_counts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) {_ADD_ON_CONFLICT}"


def sub_of(row: str) -> str:
    """SQL: the sub of `row`'s shadow side (as `shadow_sub` reads it in Python)."""
    path = "'$.shadow.source.sub'"
    return (
        f"(CASE WHEN json_type({row}.body, {path}) = 'text' THEN json_extract({row}.body, {path}) ELSE '{NO_SUB}' END)"
    )


def _counts_of(row: str, sign: str) -> str:
    """Add (sign "") or take back (sign "-") the pair of `row` (NEW or OLD), when it is one.
    (An upsert from a SELECT needs its WHERE: `ON CONFLICT` would read as a join's.)"""
    return (
        f"INSERT INTO sub_counts SELECT CAST({row}.ts / 60 AS INTEGER), {row}.channel, {row}.server, {row}.tool, "
        f"{row}.route, {sub_of(row)}, {sign}1, {sign}({row}.divergence > 0), {sign}{row}.divergence "
        f"WHERE {row}.divergence IS NOT NULL {_ADD_ON_CONFLICT};"
    )


TRIGGERS = (
    f"CREATE TRIGGER IF NOT EXISTS records_sub_uncounted AFTER DELETE ON records WHEN OLD.divergence IS NOT NULL"
    f" BEGIN {_counts_of('OLD', '-')} END",
    "CREATE TRIGGER IF NOT EXISTS records_sub_recounted AFTER UPDATE OF ts, channel, server, tool, route, divergence, "
    "body ON records WHEN OLD.divergence IS NOT NULL OR NEW.divergence IS NOT NULL "
    f"BEGIN {_counts_of('OLD', '-')} {_counts_of('NEW', '')} END",
)

RECOUNT_ALL = f"""
INSERT INTO sub_counts SELECT CAST(ts / 60 AS INTEGER) AS minute, channel, server, tool, route, \
{sub_of("records")} AS sub,
    COUNT(*), SUM(divergence > 0), TOTAL(divergence)
    FROM records WHERE divergence IS NOT NULL GROUP BY {KEY}
"""


def migrate(db: sqlite3.Connection) -> None:
    """Schema 9: the table, counted from the records once, and its triggers."""
    db.execute(TABLE)
    db.execute("DELETE FROM sub_counts")
    db.execute(RECOUNT_ALL)
    for statement in TRIGGERS:
        db.execute(statement)


def inserted_counts(rows: Sequence[dict[str, Any]], inserted: set[str]) -> list[tuple[Any, ...]]:
    """The `ADD` parameters for the shadow pairs a batch inserted (record rows, in upsert
    order). As in minute_counts: an id upserted twice was inserted by its first row,
    and the second went through the update trigger."""
    groups: dict[tuple[Any, ...], list[float]] = {}
    counted: set[str] = set()
    for row in rows:
        record_id, divergence = row["id"], row.get("divergence")
        if record_id not in inserted or record_id in counted:
            continue
        counted.add(record_id)
        if divergence is None:
            continue
        key = (int(row["ts"] / 60), row["channel"], row["server"], row["tool"], row["route"], shadow_sub(row))
        sums = groups.setdefault(key, [0, 0, 0.0])
        sums[0] += 1
        sums[1] += divergence > 0
        sums[2] += divergence
    return [(*key, *sums) for key, sums in groups.items()]


def exists(db: sqlite3.Connection) -> bool:
    """Whether the file has the table (a reader may open a file no schema-9 writer has opened yet)."""
    return db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sub_counts'").fetchone() is not None


def tallies(rows: Iterable[tuple[Any, ...]], into: dict[tuple[str, str, str], dict[str, list[float]]]) -> None:
    """Add query rows (channel, server, tool, sub, pairs, divergent, divergence sum) to per-tool tallies."""
    for channel, server, tool, sub, pairs, divergent, total in rows:
        cell = into.setdefault((channel, server, tool), {}).setdefault(sub, [0, 0, 0.0])
        cell[0] += pairs or 0
        cell[1] += divergent or 0
        cell[2] += total or 0.0
