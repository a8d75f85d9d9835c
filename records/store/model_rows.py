"""The dashboard's fidelity by the model that answered, written once for both stores.

A simulated answer names the model that wrote it in its source (`source.model`:
`SmolLM2-135M-Instruct.Q4_1.gguf`, or `…+adapter-<12 hex>.gguf` after an adoption);
the simulated side of a record is its served observation (provenance `sim`) or, for
a call served real and shadowed by a simulation, its shadow. Each store reads the
newest `MODEL_WINDOW` records of the range that have a simulated side (bounded, as a
token's view is) and hands them to `model_fidelity_of`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

# Records read per view: the newest of the range (the view says when it reached the bound).
MODEL_WINDOW = 5000
# A simulated answer no model wrote: simroute's own error in its place (a timeout, an
# answer malformed twice, the model missing): counted apart, as the failures they are.
NO_MODEL = "(no answer: the world model failed)"
SIM = "sim"


def simulated_side(row: dict[str, Any]) -> dict[str, Any] | None:
    """The record's simulated observation: served, or its shadow; None: neither is."""
    if row.get("provenance") == SIM:
        return row.get("observation") or {}
    shadow = row.get("shadow")
    if isinstance(shadow, dict) and shadow.get("provenance") == SIM:
        return shadow
    return None


def answering_model(side: dict[str, Any]) -> str:
    source = side.get("source")
    model = source.get("model") if isinstance(source, dict) else None
    return model if isinstance(model, str) and model else NO_MODEL


def model_fidelity_of(rows: Iterable[dict[str, Any]], *, window: int = MODEL_WINDOW) -> dict[str, Any]:
    """Per model: simulated answers, those compared with the real answer (shadow pairs),
    their mean divergence and divergent share, error answers and their share, the
    first and last time it answered; `bounded`: the rows reached `window`."""
    models: dict[str, dict[str, Any]] = {}
    read = 0
    for row in rows:
        read += 1
        side = simulated_side(row)
        if side is None:
            continue
        tally = models.setdefault(
            answering_model(side),
            {"calls": 0, "pairs": 0, "divergent": 0, "divsum": 0.0, "errors": 0, "first": row["ts"], "last": row["ts"]},
        )
        tally["calls"] += 1
        tally["errors"] += bool(side.get("is_error"))
        tally["first"], tally["last"] = min(tally["first"], row["ts"]), max(tally["last"], row["ts"])
        divergence = row.get("divergence")
        if divergence is not None:
            tally["pairs"] += 1
            tally["divergent"] += divergence > 0
            tally["divsum"] += divergence
    return {
        "rows": [
            {
                "model": model,
                "calls": t["calls"],
                "shadow_pairs": t["pairs"],
                "mean_divergence": t["divsum"] / t["pairs"] if t["pairs"] else None,
                "divergent_rate": t["divergent"] / t["pairs"] if t["pairs"] else None,
                "errors": t["errors"],
                "error_rate": t["errors"] / t["calls"],
                "first_ts": t["first"],
                "last_ts": t["last"],
            }
            for model, t in sorted(models.items(), key=lambda item: -item[1]["last"])
        ],
        "bounded": read >= window,
        "window": window,
    }
