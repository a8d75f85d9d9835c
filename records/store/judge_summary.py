"""Stored judge scores (`simroute judge`, records/judge/) as the dashboard's fidelity
view reads them, the same for every store: per tool and judge model, the scored
pairs and mean score of each kind, from the score rows a store reads."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from records.store.namespaces import in_namespaces
from records.store.protocol import RecordFilter


def selected(row: dict[str, Any], where: RecordFilter) -> bool:
    """Whether a stored score's record is in the dashboard's filter."""
    if row["ts"] < where.since or (where.until is not None and row["ts"] >= where.until):
        return False
    for name in ("channel", "server", "tool", "route", "session"):
        wanted = getattr(where, name)
        if wanted and row.get(name) != wanted:
            return False
    if not in_namespaces(row.get("session") or "", where.namespaces):  # a token sees its own tenants' scores only
        return False
    return not where.divergent or (row.get("divergence") or 0) > 0 or row["kind"] != "simulated"


def summarise(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (channel, server, tool, judge): pairs and mean 0–100 score of each kind."""
    groups: dict[tuple[str, str, str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    versions: dict[tuple[str, str, str, str], set[str]] = defaultdict(set)
    for row in rows:
        key = (row["channel"], row["server"], row["tool"], row["judge"])
        groups[key][row["kind"]].append(float(row["score"]))
        versions[key].add(row.get("prompt_version") or "")
    out = []
    for (channel, server, tool, judge), kinds in sorted(groups.items()):
        entry: dict[str, Any] = {"channel": channel, "server": server, "tool": tool, "judge": judge}
        entry["prompt_versions"] = sorted(versions[channel, server, tool, judge])
        for kind in ("simulated", "control"):
            scores = kinds.get(kind, [])
            entry[kind] = {"pairs": len(scores), "score": round(sum(scores) / len(scores), 2) if scores else None}
        out.append(entry)
    return out
