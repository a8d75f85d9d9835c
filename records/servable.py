"""One rule for a record whose answer may stand for the real side's elsewhere: a real
answer (or a replay of one), unperturbed, whole, of a call that ended. Replay takes its
sources only from such records (the stores index a replay key's source sessions by
them), and so do aligned replay and an API's resource state (backends/replay.py). An
answer the world model gave, a perturbed, forked or truncated one, simroute's own
refusal: none of them is ever served as if the real side had given it."""

from __future__ import annotations

from typing import Any

REPLAYABLE = frozenset({"real", "replay"})
FINISHED = frozenset({"complete", "pending"})  # pending: the real answer is in, its shadow is not

# The same rule as SQL over the SQLite store's records (their `body` is the row's JSON).
SQL_SERVABLE = (
    "provenance IN ('real', 'replay') AND status IN ('complete', 'pending')"
    " AND json_extract(body, '$.perturbation') IS NULL"
    " AND coalesce(json_extract(body, '$.observation.structured.truncated'), 0) != 1"
)


def servable(provenance: str, status: str, perturbed: bool, truncated: bool) -> bool:
    return provenance in REPLAYABLE and status in FINISHED and not perturbed and not truncated


def servable_row(row: dict[str, Any]) -> bool:
    """`servable` of a stored record's JSON (`Record.to_json()`)."""
    structured = (row.get("observation") or {}).get("structured")
    truncated = isinstance(structured, dict) and structured.get("truncated") is True
    return servable(
        str(row.get("provenance")), str(row.get("status", "complete")), row.get("perturbation") is not None, truncated
    )
