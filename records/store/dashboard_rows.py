"""The dashboard's overview and fidelity table counted from record rows, for a view
the stores' aggregates cannot answer: a token's (the aggregates are kept for all
tokens together). The rows are the view's records, already filtered and bounded."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from records.sub_provenance import shadow_sub, sub_tallies


def overview_of(rows: Iterable[dict[str, Any]], bucket_s: float) -> list[dict[str, Any]]:
    """Per time bucket, route, channel and provenance: calls, shadowed and divergent calls."""
    cells: dict[tuple[float, str, str, str], dict[str, int]] = {}
    for row in rows:
        bucket = math.floor(row["ts"] / bucket_s) * bucket_s
        cell = cells.setdefault(
            (bucket, row["route"], row["channel"], row["provenance"]), {"calls": 0, "shadowed": 0, "divergent": 0}
        )
        divergence = row.get("divergence")
        cell["calls"] += 1
        cell["shadowed"] += divergence is not None
        cell["divergent"] += divergence is not None and divergence > 0
    return [
        {"bucket": bucket, "route": route, "channel": channel, "provenance": provenance, **counts}
        for (bucket, route, channel, provenance), counts in sorted(cells.items())
    ]


def fidelity_of(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per channel, server and tool: calls, shadow pairs, mean divergence, pairs by kind
    and by the simulated side's sub-provenance."""
    tools: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in rows:
        tool = tools.setdefault((row["channel"], row["server"], row["tool"]), new_tally())
        tool["calls"] += 1
        divergence = row.get("divergence")
        if divergence is not None:
            tool["pairs"] += 1
            tool["divsum"] += divergence
            kind = row.get("divergence_kind") or "content"
            tool["kinds"][kind] = tool["kinds"].get(kind, 0) + 1
            add_sub(tool, shadow_sub(row), 1, divergence > 0, divergence)
    return fidelity_rows(tools)


def new_tally() -> dict[str, Any]:
    """A tool's tallies: calls, shadow pairs, divergence sum, pairs by kind, and per sub
    [pairs, divergent pairs, divergence sum]."""
    return {"calls": 0, "pairs": 0, "divsum": 0.0, "kinds": {}, "subs": {}}


def add_sub(tool: dict[str, Any], sub: str, pairs: int, divergent: int, divergence_sum: float) -> None:
    cell = tool["subs"].setdefault(sub, [0, 0, 0.0])
    cell[0] += pairs
    cell[1] += divergent
    cell[2] += divergence_sum


def fidelity_rows(tools: dict[tuple[str, str, str], dict[str, Any]]) -> list[dict[str, Any]]:
    """The fidelity view's rows from per-tool tallies (`new_tally`), whichever store counted them."""
    return [
        {
            "channel": channel,
            "server": server,
            "tool": tool,
            "calls": row["calls"],
            "shadow_pairs": row["pairs"],
            "mean_divergence": row["divsum"] / row["pairs"] if row["pairs"] else None,
            "kinds": row["kinds"],
            "subs": sub_tallies(row.get("subs") or {}),
        }
        for (channel, server, tool), row in sorted(tools.items())
    ]
