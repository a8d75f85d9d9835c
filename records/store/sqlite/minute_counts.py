"""Per-minute call counts kept at write time, in the transaction of the records.

The dashboard's overview and fidelity table and /metrics' totals read
`minute_counts` instead of the records. A record's counts are added once, when it
is inserted; an update that changes what is counted (a pending record completed
with its divergence, an orphan marked interrupted) and a delete (prune) take the
old counts back by trigger.

Inserts are counted by the writer, not by a trigger: a batch of records written
together mostly falls into a few (minute, tool, route, …) groups, so one upsert
per group replaces one trigger run per record, the largest per-record cost of an
insert.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

KIND_COLUMNS = ("kind_status", "kind_structure", "kind_format", "kind_content", "kind_none")
KINDS = tuple(column[5:] for column in KIND_COLUMNS)
COUNTED = "minute, channel, server, tool, route, provenance, status"
COUNTED_RECORD_COLUMNS = "ts, channel, server, tool, route, provenance, status, divergence, divergence_kind"
_SUMMED = ("calls", "shadowed", "divergent", "divergence_sum", *KIND_COLUMNS)
_ADD_ON_CONFLICT = f"ON CONFLICT DO UPDATE SET {', '.join(f'{c} = {c} + excluded.{c}' for c in _SUMMED)}"

TABLE = f"""
CREATE TABLE IF NOT EXISTS minute_counts (
    minute INTEGER NOT NULL, channel TEXT NOT NULL, server TEXT NOT NULL, tool TEXT NOT NULL,
    route TEXT NOT NULL, provenance TEXT NOT NULL, status TEXT NOT NULL,
    calls INTEGER NOT NULL, shadowed INTEGER NOT NULL, divergent INTEGER NOT NULL, divergence_sum REAL NOT NULL,
    {", ".join(f"{c} INTEGER NOT NULL" for c in KIND_COLUMNS)},
    PRIMARY KEY ({COUNTED})
) WITHOUT ROWID
"""

RECOUNT_ALL = f"""
INSERT INTO minute_counts SELECT CAST(ts / 60 AS INTEGER) AS minute, channel, server, tool, route, provenance, status,
    COUNT(*), COUNT(divergence), SUM(COALESCE(divergence > 0, 0)), SUM(COALESCE(divergence, 0)),
    {", ".join(f"SUM(divergence_kind IS '{kind}')" for kind in KINDS)}
    FROM records GROUP BY {COUNTED}
"""

# What the writer adds for the records a batch inserted: one row per group.
ADD = f"INSERT INTO minute_counts VALUES ({', '.join('?' * (7 + len(_SUMMED)))}) {_ADD_ON_CONFLICT}"


def counts_of(row: str, sign: str) -> str:
    """The statement adding (sign "") or taking back (sign "-") the counts of `row` (NEW or OLD)."""
    kinds = ", ".join(f"{sign}({row}.divergence_kind IS '{kind}')" for kind in KINDS)
    return (
        f"INSERT INTO minute_counts VALUES (CAST({row}.ts / 60 AS INTEGER), {row}.channel, {row}.server, "
        f"{row}.tool, {row}.route, "
        f"{row}.provenance, {row}.status, {sign}1, {sign}({row}.divergence IS NOT NULL), "
        f"{sign}COALESCE({row}.divergence > 0, 0), "
        f"{sign}COALESCE({row}.divergence, 0), {kinds}) {_ADD_ON_CONFLICT};"
    )


# The triggers of schema 6 (an insert is counted by the writer: `inserted_counts`).
TRIGGERS = (
    "DROP TRIGGER IF EXISTS records_counted",
    f"CREATE TRIGGER IF NOT EXISTS records_uncounted AFTER DELETE ON records BEGIN {counts_of('OLD', '-')} END",
    f"CREATE TRIGGER IF NOT EXISTS records_recounted AFTER UPDATE OF {COUNTED_RECORD_COLUMNS} ON records"
    f" BEGIN {counts_of('OLD', '-')} {counts_of('NEW', '')} END",
)


def inserted_counts(rows: Iterable[Sequence[Any]], inserted: set[str]) -> list[tuple[Any, ...]]:
    """The `ADD` parameters for the rows of a batch whose ids it inserted.

    `rows` are (id, ts, channel, server, tool, route, provenance, status, divergence,
    divergence_kind) in the order they were upserted. An id upserted twice in one
    batch was inserted by its first row: that row is counted here, and the update by
    the second went through the update trigger (old counts out, new in)."""
    groups: dict[tuple[Any, ...], list[float]] = {}
    counted: set[str] = set()
    for record_id, ts, channel, server, tool, route, provenance, status, divergence, kind in rows:
        if record_id not in inserted or record_id in counted:
            continue
        counted.add(record_id)
        # CAST(ts / 60 AS INTEGER) truncates toward zero, as int() does.
        sums = groups.setdefault((int(ts / 60), channel, server, tool, route, provenance, status), [0] * len(_SUMMED))
        sums[0] += 1
        if divergence is not None:
            sums[1] += 1
            sums[3] += divergence
            if divergence > 0:
                sums[2] += 1
        if kind in KINDS:
            sums[4 + KINDS.index(kind)] += 1
    return [(*group, *sums) for group, sums in groups.items()]
