"""The sub-provenance of a shadow comparison: how the simulated side of a shadowed call
was made (`calls.Source.sub`: `state`, `replay-aligned`, `model`, `model+state`),
read from the record's JSON, where the simulated observation keeps its source
(`record.shadow`). No store column holds it: the dashboard's per-sub fidelity, /metrics
and the learned router's per-sub labels all read it from here.
"""

from __future__ import annotations

from typing import Any

# A shadow side that names no sub: written before sources existed, or by a simulator
# that sets none.
NO_SUB = "none"
# The subs simroute sets (backends/world_state/simulation.py): /metrics labels any other
# value `other`, so a record written by a newer simroute never grows a label set.
KNOWN_SUBS = frozenset({"state", "replay-aligned", "model", "model+state"})
OTHER_SUB = "other"


def shadow_sub(row: dict[str, Any]) -> str:
    """The sub of a record row's shadow side (`NO_SUB` when it names none)."""
    shadow = row.get("shadow")
    source = shadow.get("source") if isinstance(shadow, dict) else None
    sub = source.get("sub") if isinstance(source, dict) else None
    return sub if isinstance(sub, str) and sub else NO_SUB


def bounded_sub(sub: str | None) -> str:
    """A sub as a metric label: a known one, `none`, or `other`."""
    if not sub:
        return NO_SUB
    return sub if sub in KNOWN_SUBS or sub == NO_SUB else OTHER_SUB


def sub_tallies(cells: dict[str, list[float]]) -> dict[str, dict[str, Any]]:
    """The fidelity view's per-sub figures from tallies {sub: [pairs, divergent, divergence sum]}:
    pairs, divergent pairs, divergence rate and mean divergence, subs without a pair left out."""
    return {
        sub: {
            "pairs": int(pairs),
            "divergent": int(divergent),
            "divergent_rate": divergent / pairs,
            "mean_divergence": total / pairs,
        }
        for sub, (pairs, divergent, total) in sorted(cells.items())
        if pairs > 0
    }
