"""The dashboard's overview and fidelity table counted from record rows, for a view
the stores' aggregates cannot answer: a token's (the aggregates are kept for all
tokens together). The rows are the view's records, already filtered and bounded."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any


def overview_of(rows: Iterable[dict[str, Any]], bucket_s: float) -> list[dict[str, Any]]:
    """Per time bucket, route, channel and provenance: calls, shadowed and divergent calls."""
    cells: dict[tuple[float, str, str, str], dict[str, int]] = {}
    for row in rows:
        bucket = math.floor(row["ts"] / bucket_s) * bucket_s
        cell = cells.setdefault((bucket, row["route"], row["channel"], row["provenance"]), {"calls": 0, "shadowed": 0, "divergent": 0})
        divergence = row.get("divergence")
        cell["calls"] += 1
        cell["shadowed"] += divergence is not None
        cell["divergent"] += divergence is not None and divergence > 0
    return [
        {"bucket": bucket, "route": route, "channel": channel, "provenance": provenance, **counts}
        for (bucket, route, channel, provenance), counts in sorted(cells.items())
    ]


def fidelity_of(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per channel, server and tool: calls, shadow pairs, mean divergence, pairs by kind."""
    tools: dict[tuple[str, str, str], dict[str, Any]] = {}
    for row in rows:
        tool = tools.setdefault((row["channel"], row["server"], row["tool"]), {"calls": 0, "pairs": 0, "divsum": 0.0, "kinds": {}})
        tool["calls"] += 1
        divergence = row.get("divergence")
        if divergence is not None:
            tool["pairs"] += 1
            tool["divsum"] += divergence
            kind = row.get("divergence_kind") or "content"
            tool["kinds"][kind] = tool["kinds"].get(kind, 0) + 1
    return fidelity_rows(tools)


def fidelity_rows(tools: dict[tuple[str, str, str], dict[str, Any]]) -> list[dict[str, Any]]:
    """The fidelity view's rows from per-tool tallies ({calls, pairs, divsum, kinds}),
    whichever store counted them."""
    return [
        {
            "channel": channel,
            "server": server,
            "tool": tool,
            "calls": row["calls"],
            "shadow_pairs": row["pairs"],
            "mean_divergence": row["divsum"] / row["pairs"] if row["pairs"] else None,
            "kinds": row["kinds"],
        }
        for (channel, server, tool), row in sorted(tools.items())
    ]
