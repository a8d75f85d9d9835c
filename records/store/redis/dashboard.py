"""The dashboard's queries on the Redis store, read from aggregates its write
script maintains (records/store/redis/store.py `_UPSERT`): per minute, calls, shadow
pairs and divergent pairs by route, channel and provenance; per hour and tool,
calls, pairs, the divergence sum and kinds; per hour, tool and the simulated side's
sub-provenance (records/sub_provenance.py), pairs, divergent pairs and the divergence
sum. A day's overview reads 1,440 small hashes in one pipeline, never the records.

Pages walk the time-ordered `all` set (or a session's set) newest first; filters
the set does not index are applied to a bounded window of records. The aggregates
are kept for all tokens together: a token's view (its namespaces) is counted from
the range's records instead, newest first, at most `_SCAN_WINDOW * _SCAN_STEPS`.
"""

from __future__ import annotations

import math
from typing import Any

from calls import tool_key
from records.store.dashboard_rows import add_sub, fidelity_of, fidelity_rows, new_tally, overview_of
from records.store.model_rows import MODEL_WINDOW, model_fidelity_of
from records.store.namespaces import in_namespaces
from records.store.noise_counts import merged_noise
from records.store.protocol import RecordFilter, StoreError
from records.sub_provenance import shadow_sub

SEP = "\x1f"  # between the parts of an aggregate's field name
_SCAN_WINDOW = 1000  # records read per step when a page filters on what no set indexes
_SCAN_STEPS = 20


def _unsupported(where: RecordFilter, names: tuple[str, ...], view: str) -> None:
    given = [name for name in names if getattr(where, name)]
    if given:
        raise StoreError(
            f"the Redis store aggregates the {view} without {', '.join(given)} "
            "filters: open the records view to filter by them"
        )


async def _hashes(
    store: Any, index: str, prefix: str, since: float, until: float | None
) -> list[tuple[float, dict[str, str]]]:
    async def work(r):
        # Until: exclusive.
        stamps = await r.zrangebyscore(store._key(index), since, "+inf" if until is None else f"({until}")
        pipe = r.pipeline(transaction=False)
        for stamp in stamps:
            pipe.hgetall(store._key(prefix, stamp))
        return list(zip((float(s) for s in stamps), await pipe.execute(), strict=True))

    return await store._run("reading the dashboard's aggregates", work)


async def overview(store: Any, where: RecordFilter, bucket_s: float) -> list[dict[str, Any]]:
    if where.namespaces is not None:
        return overview_of(await _scanned(store, where), bucket_s)
    _unsupported(where, ("server", "tool", "session", "divergent"), "overview")
    since = math.floor(where.since / 60) * 60
    cells: dict[tuple[float, str, str, str], dict[str, int]] = {}
    for minute, fields in await _hashes(store, "dash:minutes", "dash:m", since, where.until):
        bucket = math.floor(minute / bucket_s) * bucket_s
        for field, value in fields.items():
            measure, route, channel, provenance = field.split(SEP)
            if (where.route and route != where.route) or (where.channel and channel != where.channel):
                continue
            cell = cells.setdefault((bucket, route, channel, provenance), {"calls": 0, "shadowed": 0, "divergent": 0})
            cell[measure] += int(value)
    return [
        {"bucket": bucket, "route": route, "channel": channel, "provenance": provenance, **counts}
        for (bucket, route, channel, provenance), counts in sorted(cells.items())
    ]


async def fidelity(store: Any, where: RecordFilter) -> list[dict[str, Any]]:
    if where.namespaces is not None:
        return await _with_noise(store, fidelity_of(await _scanned(store, where)), where.namespaces)
    _unsupported(where, ("route", "session", "divergent"), "fidelity table")
    since = math.floor(where.since / 3600) * 3600

    def wanted(channel: str, server: str, tool: str) -> bool:
        return not (
            (where.channel and channel != where.channel)
            or (where.server and server != where.server)
            or (where.tool and tool != where.tool)
        )

    tools: dict[tuple[str, str, str], dict[str, Any]] = {}
    for _, fields in await _hashes(store, "dash:hours", "dash:h", since, where.until):
        for field, value in fields.items():
            channel, server, tool, measure = field.split(SEP)
            if not wanted(channel, server, tool):
                continue
            row = tools.setdefault((channel, server, tool), new_tally())
            if measure.startswith("kind:"):
                row["kinds"][measure[5:]] = row["kinds"].get(measure[5:], 0) + int(value)
            else:
                row[measure] += float(value) if measure == "divsum" else int(value)
    for _, fields in await _hashes(store, "dash:hours", "dash:s", since, where.until):
        for field, value in fields.items():
            channel, server, tool, sub, measure = field.split(SEP)
            if wanted(channel, server, tool) and (channel, server, tool) in tools:
                add_sub(tools[(channel, server, tool)], sub, *_SUB_MEASURES[measure](value))
    out = fidelity_rows(tools)
    return await _with_noise(store, out)


async def model_fidelity(store: Any, where: RecordFilter, window: int = MODEL_WINDOW) -> dict[str, Any]:
    """Fidelity by the model that answered (records/store/model_rows.py): the model is
    in the records' JSON, which no aggregate keeps, so the range's newest `window`
    records are read (as a token's view is)."""
    return model_fidelity_of(await page(store, where, before=None, after=None, limit=window), window=window)


# A sub hash's field (`…SEP sub SEP measure`) as add_sub's (pairs, divergent, divergence sum).
_SUB_MEASURES = {
    "pairs": lambda value: (int(value), 0, 0.0),
    "divergent": lambda value: (0, int(value), 0.0),
    "divsum": lambda value: (0, 0, float(value)),
}


def sub_field(row: dict[str, Any]) -> str:
    """The sub-provenance of a record's shadow side as the write and prune scripts key it."""
    return shadow_sub(row).replace(SEP, " ")


async def _with_noise(
    store: Any, rows: list[dict[str, Any]], scopes: tuple[str, ...] | None = None
) -> list[dict[str, Any]]:
    """The noise table's counts of each row's tool in the view's namespaces (with
    tokens, the table is kept per namespace)."""
    for row in rows:
        key = tool_key(row["channel"], row["server"], row["tool"])
        noise = merged_noise([await store.noise_stats(scope + key) for scope in scopes or ("",)])
        row["noise_pairs"], row["noisy_paths"] = noise.pairs, len(noise.disagreements)
    return rows


async def _scanned(store: Any, where: RecordFilter) -> list[dict[str, Any]]:
    """The records of the view (a token's namespaces), newest first, bounded."""
    return await page(store, where, before=None, after=None, limit=_SCAN_WINDOW * _SCAN_STEPS)


def _matches(row: dict[str, Any], where: RecordFilter) -> bool:
    if row["ts"] < where.since or (where.until is not None and row["ts"] >= where.until):
        return False
    for column in ("channel", "server", "tool", "route", "session"):
        value = getattr(where, column)
        if value and row.get(column) != value:
            return False
    if not in_namespaces(row["session"], where.namespaces):
        return False
    return not where.divergent or (row.get("divergence") or 0) > 0


async def page(
    store: Any, where: RecordFilter, *, before: str | None, after: str | None, limit: int
) -> list[dict[str, Any]]:
    """Newest first. The `all` set is scored by time; a session's set by step."""
    index = store._key("session", where.session) if where.session else store._key("all")
    found: list[dict[str, Any]] = []
    offset = 0
    high, low = ("+inf" if where.until is None else f"({where.until}"), where.since
    if not where.session and before is not None:  # start at the cursor, not at the newest record
        score = await store._run("paging records", lambda r: r.zscore(index, before))
        high = high if score is None else score
    if not where.session and after is not None:
        score = await store._run("paging records", lambda r: r.zscore(index, after))
        low = low if score is None else max(low, score)
    for _ in range(_SCAN_STEPS):
        if where.session:
            ids = await store._run("paging records", lambda r, o=offset: r.zrevrange(index, o, o + _SCAN_WINDOW - 1))
        else:
            ids = await store._run(
                "paging records", lambda r, o=offset: r.zrevrangebyscore(index, high, low, start=o, num=_SCAN_WINDOW)
            )
        if not ids:
            break
        offset += len(ids)
        window = [i for i in ids if (before is None or i < before) and (after is None or i > after)]
        found += [row for row in await store._bodies(window) if _matches(row, where)]
        if len(found) >= limit or (after is not None and ids[-1] <= after):
            break
    found.sort(key=lambda row: (row["ts"], row["id"]), reverse=True)
    return found[:limit]
